"""QAT loss curves on MiniLM: k-means QAT, integer QAT, each with and without WinQ, and LC-QAT 2-bit VQ.

    pip install -e ".[llm]"
    python benchmarks/qat_curves.py --steps 60 --out docs/compress_qat.png --json docs/compress_qat.json

Objective: distill the original MiniLM's last hidden states (masked MSE relative to their energy)
on English Wikipedia sentences (train split), every linear layer 2-bit quantized with an STE. All
runs share the data order, the step budget, the learning rate and the seed. After training, the
embedding cosine to the original on held-out sentences is measured with the harness.

The training loss of a WinQ run is taken at its noise-injected weights, so every `--eval-every`
steps each run is also scored without noise, in eval mode, on one fixed batch of held-out
sentences ("held-out loss"): that is the curve on which runs are compared.

WinQ's reset weight alpha, noise level and reset period are chosen before the comparison on a
validation batch taken from the train split (after the training sentences), never on the held-out
sentences:

    python benchmarks/qat_curves.py --steps 20 --tune-winq 0.1:0.1,0.1:0.5,0.5:0.1,0.5:0.5 \
        --json docs/compress_qat_tuning.json --out docs/compress_qat_tuning.png
    python benchmarks/qat_curves.py --steps 40 --alpha A --noise N --out ... --json ...
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import torch

from codesign.compress.pipeline import Budget, distillation_objective
from codesign.compress.qat import QATConfig, distillation_loss, qat_model, train_qat

RUNS = {
    "k-means QAT": QATConfig("kmeans", 2),
    "k-means QAT + WinQ": QATConfig("kmeans", 2, winq=True),
    "int QAT": QATConfig("int", 2, refit_every=0),
    "int QAT + WinQ": QATConfig("int", 2, refit_every=0, winq=True),
    "LC-QAT VQ 2-bit": QATConfig("vq", 2, refit_every=0),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--runs", default=None, help="comma list of run names (default: all)")
    parser.add_argument("--eval-every", type=int, default=5, help="steps between held-out losses (0: none)")
    parser.add_argument("--alpha", type=float, default=None, help="WinQ reset weight of Q(W) (default: QATConfig's)")
    parser.add_argument("--noise", type=float, default=None, help="WinQ noise / rms quantization error")
    parser.add_argument("--reset-every", type=int, default=None, help="WinQ steps between resets")
    parser.add_argument("--tune-winq", default=None, metavar="A:N,...",
                        help="instead of the comparison: k-means QAT and k-means + WinQ at each alpha:noise, "
                             "scored on a validation batch of train-split sentences")
    parser.add_argument("--out", type=Path, required=True, help="PNG of the loss curves")
    parser.add_argument("--json", type=Path, required=True, help="curves and final metrics (appended per run)")
    args = parser.parse_args()

    from codesign.llm import embedding_similarity, load_minilm, sentence_embeddings, wiki_sentences

    teacher, tok = load_minilm()
    train = wiki_sentences("train", (args.steps + 1) * args.batch)
    test = wiki_sentences("test", 128)
    if args.tune_winq:  # score on unseen train-split sentences, keep the held-out ones for the comparison
        test = train[args.steps * args.batch :] + test[args.batch :]
    reference = sentence_embeddings(teacher, tok, test)
    # the training batches of `codesign compress`'s QAT: the first steps × batch train-split sentences
    loss_fn = distillation_objective("minilm", teacher, tok, Budget(qat_batch=args.batch), args.steps)

    held_out = tok(test[: args.batch], padding=True, truncation=True, max_length=64, return_tensors="pt")
    with torch.no_grad():
        held_out_target = teacher(**held_out).last_hidden_state

    def held_out_loss(student) -> float:
        was_training = student.training
        student.eval()
        with torch.no_grad():
            loss = distillation_loss(student(**held_out).last_hidden_state, held_out_target, held_out["attention_mask"])
        student.train(was_training)
        return float(loss)

    results = json.loads(args.json.read_text()) if args.json.exists() else {}
    overrides = {k: v for k, v in (("alpha", args.alpha), ("noise", args.noise), ("reset_every", args.reset_every))
                 if v is not None}
    runs = {k: dataclasses.replace(c, **overrides) if c.winq else c for k, c in RUNS.items()}
    if args.tune_winq:
        runs = {"k-means QAT": runs["k-means QAT"]}
        for pair in args.tune_winq.split(","):
            alpha, noise = (float(v) for v in pair.split(":"))
            runs[f"k-means QAT + WinQ a={alpha:g} n={noise:g}"] = dataclasses.replace(
                RUNS["k-means QAT + WinQ"], alpha=alpha, noise=noise, **{k: v for k, v in overrides.items()
                                                                         if k == "reset_every"})
    chosen = runs if args.runs is None else {k: runs[k] for k in args.runs.split(",")}
    for label, config in chosen.items():
        done = results.get(label, {})
        if len(done.get("loss", [])) == args.steps and (not args.eval_every or "held_out_loss" in done):
            continue
        torch.manual_seed(0)
        start = time.perf_counter()
        student = qat_model(teacher, config).eval()  # no WinQ noise in the "before" score
        init_cos = embedding_similarity(reference, student, tok, test).mean_cosine
        evaluated = {0: held_out_loss(student)} if args.eval_every else {}

        # this run's student and scores are bound as defaults, not looked up from the loop at call time
        def on_step(step: int, loss: float, student: torch.nn.Module = student, evaluated: dict = evaluated) -> None:
            if args.eval_every and (step + 1) % args.eval_every == 0:
                evaluated[step + 1] = held_out_loss(student)

        losses = train_qat(student, loss_fn, args.steps, lr=args.lr, on_step=on_step)
        seconds = time.perf_counter() - start
        cos = embedding_similarity(reference, student, tok, test).mean_cosine
        results[label] = {"loss": losses, "cosine_before": init_cos, "cosine_after": cos, "seconds": seconds,
                          "config": dataclasses.asdict(config)}
        if evaluated:
            results[label]["held_out_loss"] = {str(k): v for k, v in evaluated.items()}
        args.json.write_text(json.dumps(results, indent=1))
        print(f"{label:22s} loss {losses[0]:.4f} -> {losses[-1]:.4f}  cosine {init_cos:.4f} -> {cos:.4f}  "
              f"{seconds:.0f} s", flush=True)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, r in results.items():
        loss = torch.tensor(r["loss"])
        smooth = torch.nn.functional.avg_pool1d(loss[None, None], 5, 1, 2, count_include_pad=False)[0, 0]
        line, = ax.plot(smooth.numpy(), label=f"{label} (cos {r['cosine_after']:.3f})")
        if "held_out_loss" in r:
            steps = sorted(int(k) for k in r["held_out_loss"])
            ax.plot(steps, [r["held_out_loss"][str(k)] for k in steps], "o--", color=line.get_color(), markersize=3)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("distillation loss\n(lines: training, 5-step mean; dots: held-out)")
    ax.set_title("MiniLM, all linears 2-bit: QAT on Wikipedia sentences")
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, "python benchmarks/qat_curves.py", fontsize=6)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
