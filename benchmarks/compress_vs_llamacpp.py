"""llama.cpp's own quantizers (k-quants, IQ4_NL, Q8_0) beside codesign's, on the same fp32 weights and held-out windows.

    pip install 'codesign[llm,compress-peers]'   # llama-cpp-python builds llama.cpp from its sdist (docs/compress_models.md)
    nice -n 10 python benchmarks/compress_vs_llamacpp.py --model gemma3-270m --eval-tokens 2048 --context 512 \
        --out docs/compress_vs_llamacpp.json
    python benchmarks/compress_vs_llamacpp.py --out docs/compress_vs_llamacpp.json --table \
        --codesign docs/compress_models_gemma_table.json

From the float32 model the harness loads (compress_models.load_benchmark_model), the script writes
the transformers folder (save_pretrained) under benchmarks/work/llamacpp/MODEL/, converts it with
llama.cpp's own convert_hf_to_gguf.py (taken from the llama-cpp-python sdist kept in
benchmarks/work/llamacpp-wheel/, the same llama.cpp the installed wheel was built from) to an f32 and
an f16 GGUF, and quantizes the f32 GGUF with llama.cpp's `llama_model_quantize` (llama_cpp's
low-level binding; no importance matrix) to each type of --types, twice: llama.cpp's own recipe
(the token embedding, which Gemma's head shares, quantized as llama.cpp chooses) and with the
embedding kept f32 (only the block linears quantized, as codesign's rows do).

Perplexity: the held-out token stream of the harness (codesign.llm.token_stream), cut into the
windows of codesign.llm.perplexity (chunks of --context tokens, each scored from an empty context),
fed to llama.cpp as token ids, scored on llama.cpp's own logits (logits_all=True). The f32 and f16
rows against the transformers model on the same windows show that the tokens and windows are the
same. Bits per weight are read from each GGUF's tensor table: the bytes of the block linears'
tensors over their weight count (codesign's rows count the same weights), and the whole file's
tensor bytes over every parameter. Rows are appended to --out as they finish and skipped when there.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import re
import subprocess
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "benchmarks" / "work"
WHEELS = WORK / "llamacpp-wheel"
TYPES = ("Q8_0", "Q4_K_M", "IQ4_NL", "Q3_K_M", "Q2_K")
# a block linear's tensor in llama.cpp's names: blk.N.<anything>.weight with two dimensions (norms have one)
_BLOCK_TENSOR = re.compile(r"^blk\.\d+\.")
_EMBEDDING = ("token_embd.weight", "output.weight")


def windows(tokens: Sequence[int], context: int) -> list[list[int]]:
    """The windows codesign.llm.perplexity scores by default: tokens[s : s + context] for s = 0, context, ...

    Each window starts from an empty context and scores its tokens 1..L-1; a last window of one token scores nothing
    and is left out (as perplexity does).
    """
    if context < 2:
        raise ValueError(f"context must be at least 2 tokens, got {context}")
    cut = [list(tokens[s : s + context]) for s in range(0, len(tokens), context)]
    return [w for w in cut if len(w) > 1]


def window_nll(logits, window: Sequence[int]) -> float:
    """Summed next-token NLL (nats) of a window's tokens 1..L-1 under logits [L, vocab] (row t predicts token t + 1)."""
    import torch

    scores = torch.as_tensor(logits[: len(window) - 1], dtype=torch.float32)
    targets = torch.as_tensor(window[1:], dtype=torch.int64)
    return float(torch.nn.functional.cross_entropy(scores, targets, reduction="sum"))


def gguf_bits(path: Path) -> dict:
    """Bits per weight of a GGUF from its tensor table: the block linears (2-D blk.* tensors) and every tensor.

    bits_per_weight: 8 x (stored bytes of the block linears) / (their weight count); file_bits_per_weight: 8 x (stored
    bytes of all tensors) / (all parameters); tensor_types: how many block linears each type holds; embedding_type:
    the type of the token embedding (and of the output head where the model has its own).
    """
    from gguf import GGUFReader

    reader = GGUFReader(str(path))
    linear_bytes = linear_weights = all_bytes = all_weights = 0
    types: Counter[str] = Counter()
    embedding = {}
    for t in reader.tensors:
        n, size = int(t.n_elements), int(t.n_bytes)
        all_bytes += size
        all_weights += n
        if _BLOCK_TENSOR.match(t.name) and t.name.endswith(".weight") and sum(int(d) > 1 for d in t.shape) == 2:
            linear_bytes += size
            linear_weights += n
            types[t.tensor_type.name] += 1
        elif t.name in _EMBEDDING:
            embedding[t.name] = t.tensor_type.name
    if not linear_weights:
        raise ValueError(f"{path} holds no block linear (2-D blk.N.*.weight tensor)")
    return {"bits_per_weight": 8 * linear_bytes / linear_weights, "linear_weights": linear_weights,
            "linear_bytes": linear_bytes, "file_bits_per_weight": 8 * all_bytes / all_weights,
            "parameters": all_weights, "tensor_bytes": all_bytes, "tensor_types": dict(sorted(types.items())),
            "embedding_type": embedding}


def _types_text(types: dict) -> str:
    return ", ".join(f"{n} {k}" for k, n in sorted(types.items(), key=lambda kv: -kv[1]))


# ---------------------------------------------------------------------------------------------------------------
# llama.cpp: the converter from the sdist, the quantizer and the logits through llama-cpp-python


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _llama_cpp():
    try:
        import llama_cpp
    except ImportError:
        _fail("llama-cpp-python is not installed: pip install 'codesign[compress-peers]' (it builds llama.cpp from "
              "source; docs/compress_models.md gives the build and where its wheel is kept)")
    return llama_cpp


def converter(version: str) -> Path:
    """convert_hf_to_gguf.py of the llama.cpp that llama-cpp-python `version` vendors, unpacked from its sdist once."""
    target = WORK / "llamacpp" / f"src-{version}"
    script = target / "convert_hf_to_gguf.py"
    if script.is_file():
        return script
    sdist = WHEELS / f"llama_cpp_python-{version}.tar.gz"
    if not sdist.is_file():
        _fail(f"{sdist} is missing (the converter comes from it): pip download --no-deps --no-binary :all: "
              f"llama-cpp-python=={version} -d {WHEELS}")
    prefix = f"llama_cpp_python-{version}/vendor/llama.cpp/"
    wanted = (prefix + "convert_hf_to_gguf.py", prefix + "conversion/", prefix + "gguf-py/")
    partial = target.with_name(target.name + ".partial")
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if m.isfile() and m.name.startswith(wanted)]
        for m in members:
            m.name = m.name[len(prefix):]
        archive.extractall(partial, members=members, filter="data")
    partial.replace(target)
    return script


def hf_folder(name: str, out: Path) -> Path:
    """The float32 model of the harness written as a transformers folder (save_pretrained), once."""
    folder = out / "hf"
    if (folder / "config.json").is_file() and (folder / "tokenizer_config.json").is_file():
        return folder
    from compress_models import load_benchmark_model  # noqa: PLC0415 - benchmarks/ is on the path when run as a script

    model, tokenizer = load_benchmark_model(name)
    partial = out / "hf.partial"
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.replace(folder)
    return folder


def convert(script: Path, folder: Path, outtype: str, target: Path) -> float:
    """Seconds llama.cpp's convert_hf_to_gguf.py took to write `folder` as a GGUF of `outtype` (f32, f16)."""
    if target.is_file():
        return 0.0
    start = time.perf_counter()
    partial = target.with_name(target.name + ".partial")
    done = subprocess.run([sys.executable, str(script), str(folder), "--outtype", outtype, "--outfile", str(partial)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        _fail(f"convert_hf_to_gguf.py failed on {folder}: {(done.stderr.strip().splitlines() or ['?'])[-1][:200]}")
    partial.replace(target)
    return time.perf_counter() - start


def quantize(source: Path, target: Path, ftype_name: str, keep_embedding: bool, threads: int) -> float:
    """Seconds llama.cpp's llama_model_quantize took to write `source` (f32 GGUF) as `ftype_name` (e.g. Q4_K_M)."""
    llama_cpp = _llama_cpp()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype_name}")
    params.nthread = threads
    if keep_embedding:  # only the block linears quantized, as in codesign's rows
        params.token_embedding_type = llama_cpp.GGML_TYPE_F32
        params.output_tensor_type = llama_cpp.GGML_TYPE_F32
    partial = target.with_name(target.name + ".partial")
    from llama_cpp._utils import suppress_stdout_stderr

    start = time.perf_counter()
    with suppress_stdout_stderr(disable=False):  # a line per tensor; the GGUF's tensor table says the same
        status = llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params))
    seconds = time.perf_counter() - start
    if status != 0:
        _fail(f"llama_model_quantize to {ftype_name} failed (status {status})")
    partial.replace(target)
    return seconds


def llama_windows_nll(path: Path, chunks: list[list[int]], context: int, threads: int, kv_type: str) -> list[float]:
    """Summed NLL of each window on llama.cpp's own logits of the GGUF at `path` (token ids in, logits_all=True)."""
    llama_cpp = _llama_cpp()
    cache = {"f32": llama_cpp.GGML_TYPE_F32, "f16": llama_cpp.GGML_TYPE_F16}[kv_type]
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=context, n_batch=context, n_ubatch=context, logits_all=True,
                          n_threads=threads, n_threads_batch=threads, type_k=cache, type_v=cache, swa_full=True,
                          verbose=False)
    try:
        out = []
        for w in chunks:
            llm.reset()
            llm.eval(w)
            out.append(window_nll(llm.scores[: len(w)], w))
        return out
    finally:
        llm.close()


# ---------------------------------------------------------------------------------------------------------------
# rows and the table


def _result(nll: list[float], chunks: list[list[int]]) -> dict:
    counts = [len(w) - 1 for w in chunks]
    return {"perplexity": math.exp(sum(nll) / sum(counts)), "window_nll": nll, "window_tokens": counts,
            "n_tokens": sum(counts)}


def _same(row: dict, key: dict) -> bool:
    return all(row.get(k) == v for k, v in key.items())


def _rows(path: Path) -> list[dict]:
    """The rows of a JSON file this script or compress_models.py wrote (one clear line and exit 2 when it is not one)."""
    try:
        rows = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        _fail(f"{path} is not a readable JSON list of rows ({str(exc).splitlines()[0][:120]})")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        _fail(f"{path} is not a JSON list of rows")
    return rows


def _append(path: Path, row: dict) -> None:
    rows = _rows(path) if path.exists() else []
    path.write_text(json.dumps([*rows, row], indent=1))


def _calibrated(r: dict) -> bool:
    # codesign rows that read calibration text (or train): error feedback, Q + L R, low rank, QAT
    return bool(r.get("error_feedback") or r.get("steps") or r["method"] in ("qer-scaled", "srr", "lowrank")
                or r["method"].endswith("-qat"))


def codesign_rows(paths: Sequence[Path], model: str, weights: int, window_tokens: list[int], context: int,
                  reference: float) -> list[dict]:
    """Rows of compress_models.py JSON files that compressed the same linears (`weights` of them, the GGUF's block
    linears) and were scored on the same windows: the same tokens per window (rows older than per-window scores: the
    same token count and context) and the same reference perplexity. A row scored on more windows whose first ones
    are these (a longer held-out budget of the same stream) stands here with its perplexity over those first windows,
    from its own per-window NLLs (`prefix_of` keeps its window count)."""
    rows = []
    for path in paths:
        for r in _rows(path):
            if r.get("model") != model or r.get("weights") != weights:
                continue
            m = r.get("metric", {})
            if "window_tokens" not in m:
                if m.get("n_tokens") != sum(window_tokens) or m.get("context") != context:
                    continue
            elif m["window_tokens"] != window_tokens:
                r = _on_first_windows(r, window_tokens)
                if r is None:
                    continue
            if math.isclose(r["metric"].get("reference_perplexity", 0.0), reference, rel_tol=1e-4):
                rows.append(r)
    return rows


def _on_first_windows(row: dict, window_tokens: list[int]) -> dict | None:
    """`row` scored on its first len(window_tokens) windows only, or None unless those are these windows."""
    m = row["metric"]
    n = len(window_tokens)
    if m["window_tokens"][:n] != window_tokens or "reference_window_nll" not in m:
        return None
    tokens = sum(window_tokens)
    metric = {**m, "window_tokens": window_tokens, "window_nll": m["window_nll"][:n],
              "reference_window_nll": m["reference_window_nll"][:n], "n_tokens": tokens,
              "perplexity": math.exp(sum(m["window_nll"][:n]) / tokens),
              "reference_perplexity": math.exp(sum(m["reference_window_nll"][:n]) / tokens)}
    return {**row, "metric": metric, "prefix_of": len(m["window_tokens"])}


def _best(rows: list[dict], bits: float, calibrated: bool) -> dict | None:
    fits = [r for r in rows if r["method"] != "hqq" and _calibrated(r) == calibrated and r["bits_per_weight"] <= bits + 1e-9]
    return min(fits, key=lambda r: r["metric"]["perplexity"], default=None)


def _beside(r: dict | None, reference: float) -> str:
    if r is None:
        return "-"
    from compress_models import _label  # noqa: PLC0415 - benchmarks/ is on the path when run as a script

    ppl = r["metric"]["perplexity"]
    windows = (f" (its first {len(r['metric']['window_tokens'])} of {r['prefix_of']} windows)"
               if "prefix_of" in r else "")
    return (f"{_label(r)}, {r['bits']} bits: {r['bits_per_weight']:.2f} b/w, {ppl:.3f} "
            f"({100 * (ppl / reference - 1):+.1f} %){windows}")


def table(rows: list[dict], codesign_paths: Sequence[Path]) -> str:
    """Markdown: the agreement rows (f32, f16 GGUF against transformers), then each quantized row beside codesign's."""
    out = []
    # one table per model and token budget: a model may have been scored on more than one held-out budget
    for model, eval_tokens in dict.fromkeys((r["model"], r["eval_tokens"]) for r in rows):
        mine = [r for r in rows if r["model"] == model and r["eval_tokens"] == eval_tokens]
        ref = next((r for r in mine if r["kind"] == "transformers"), None)
        if ref is None:
            continue
        reference = ref["perplexity"]
        out += [f"**{model}**, {ref['n_tokens']} held-out tokens in {len(ref['window_tokens'])} windows of "
                f"{ref['context']}; transformers float32: perplexity {reference:.3f}", "",
                "| weights | run by | KV cache | perplexity | vs transformers fp32 | largest window NLL difference (nats/token) |",
                "|---|---|---|---|---|---|"]
        for r in mine:
            if r["kind"] == "gguf":
                diff = max(abs(a - b) / n for a, b, n in zip(r["window_nll"], ref["window_nll"], r["window_tokens"],
                                                             strict=True))
                out.append(f"| {r['type']} GGUF | llama.cpp {r['llama_cpp']} | {r['kv_type']} | {r['perplexity']:.3f} | "
                           f"{100 * (r['perplexity'] / reference - 1):+.3f} % | {diff:.5f} |")
        out.append(f"| float32 | transformers | - | {reference:.3f} | - | - |")
        weights = next((r["linear_weights"] for r in mine if r["kind"] != "transformers"), 0)
        found = codesign_rows(codesign_paths, model, weights, ref["window_tokens"], ref["context"], reference)
        out += ["", "| llama.cpp type | embedding / head | block linears' types | bits/weight (linears) | "
                "bits/weight (file) | perplexity | quantize (s) | codesign, calibration-free, at ≤ bits/weight | "
                "codesign, calibrated, at ≤ bits/weight |", "|---|---|---|---|---|---|---|---|---|"]
        for r in mine:
            if r["kind"] != "quantized":
                continue
            embedding = ", ".join(sorted(set(r["embedding_type"].values())))
            out.append(f"| {r['type']} | {embedding}{' (kept)' if r['keep_embedding'] else ''} | "
                       f"{_types_text(r['tensor_types'])} | {r['bits_per_weight']:.2f} | {r['file_bits_per_weight']:.2f} | "
                       f"{r['perplexity']:.3f} ({100 * (r['perplexity'] / reference - 1):+.1f} %) | "
                       f"{r['quantize_seconds']:.1f} | {_beside(_best(found, r['bits_per_weight'], False), reference)} | "
                       f"{_beside(_best(found, r['bits_per_weight'], True), reference)} |")
        out.append("")
    return "\n".join(out)


def run(args: argparse.Namespace) -> None:
    """Convert, quantize and score every missing row of args.model, appending each to args.out."""
    import torch
    from compress_models import load_benchmark_model  # noqa: PLC0415 - benchmarks/ is on the path when run as a script

    from codesign.compress.pipeline import Budget, fit_budget, is_encoder, reference_metric
    from codesign.llm import token_stream

    llama_cpp = _llama_cpp()
    version = llama_cpp.__version__
    script = converter(version)
    budget, note = fit_budget(args.model, Budget(eval_tokens=args.eval_tokens, context=args.context))
    if is_encoder(args.model):
        _fail(f"{args.model} is a sentence encoder: llama.cpp's perplexity compares causal LMs only")
    if note:
        print(note, file=sys.stderr)
    context = budget.context
    assert context is not None
    _, tokenizer = load_benchmark_model(args.model)
    tokens = token_stream(tokenizer, "test", budget.eval_tokens)
    chunks = windows(tokens.tolist(), context)
    done = _rows(args.out) if args.out.exists() else []
    base = {"model": args.model, "eval_tokens": budget.eval_tokens, "context": context}

    def have(**key) -> dict | None:
        return next((r for r in done if _same(r, {**base, **key})), None)

    def add(row: dict) -> None:
        done.append(row)
        _append(args.out, row)

    if have(kind="transformers") is None:
        torch.set_num_threads(args.threads)
        ref = reference_metric(args.model, budget)  # the harness's own reference, on the harness's windows
        row = {**base, "kind": "transformers", "perplexity": ref.perplexity, "window_nll": list(ref.window_nll),
               "window_tokens": list(ref.window_tokens), "n_tokens": ref.n_scored}
        if row["window_tokens"] != [len(w) - 1 for w in chunks]:
            _fail("the windows built here are not the ones codesign.llm.perplexity scored")
        add(row)
        print(f"transformers fp32: perplexity {ref.perplexity:.4f}", flush=True)

    out = WORK / "llamacpp" / re.sub(r"[^A-Za-z0-9._-]+", "_", args.model)
    out.mkdir(parents=True, exist_ok=True)
    folder = hf_folder(args.model, out)
    f32 = out / "f32.gguf"
    seconds = convert(script, folder, "f32", f32)
    if seconds:
        print(f"convert_hf_to_gguf.py f32: {seconds:.0f} s", flush=True)
    kv = args.kv_type
    for outtype in ("f32", "f16"):
        path = out / f"{outtype}.gguf"
        convert(script, folder, outtype, path)
        if have(kind="gguf", type=outtype, kv_type=kv, llama_cpp=version) is None:
            start = time.perf_counter()
            nll = llama_windows_nll(path, chunks, context, args.threads, kv)
            row = {**base, "kind": "gguf", "type": outtype, "kv_type": kv, "llama_cpp": version, **_result(nll, chunks),
                   "eval_seconds": time.perf_counter() - start, **gguf_bits(path)}
            add(row)
            print(f"llama.cpp {outtype} GGUF: perplexity {row['perplexity']:.4f}", flush=True)
    for ftype in args.types:
        for keep in {"both": (False, True), "llama.cpp": (False,), "f32": (True,)}[args.embedding]:
            if have(kind="quantized", type=ftype, keep_embedding=keep, kv_type=kv, llama_cpp=version) is not None:
                continue
            path = out / f"{ftype}{'-embf32' if keep else ''}.gguf"
            seconds = quantize(f32, path, ftype, keep, args.threads)
            start = time.perf_counter()
            nll = llama_windows_nll(path, chunks, context, args.threads, kv)
            row = {**base, "kind": "quantized", "type": ftype, "keep_embedding": keep, "kv_type": kv,
                   "llama_cpp": version, **_result(nll, chunks), "quantize_seconds": seconds,
                   "eval_seconds": time.perf_counter() - start, "threads": args.threads, **gguf_bits(path)}
            add(row)
            print(f"llama.cpp {ftype}{' (embedding f32)' if keep else ''}: {row['bits_per_weight']:.2f} bits/weight "
                  f"({_types_text(row['tensor_types'])}), perplexity {row['perplexity']:.4f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m", help="a model compress_models.py loads (default gemma3-270m)")
    parser.add_argument("--out", type=Path, required=True, help="JSON file the rows are appended to")
    parser.add_argument("--eval-tokens", type=int, default=2048)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--types", default=",".join(TYPES), help=f"llama.cpp types (default {','.join(TYPES)})")
    parser.add_argument("--kv-type", choices=("f32", "f16"), default="f32",
                        help="llama.cpp's KV cache type (default f32, as the transformers reference; llama.cpp's own is f16)")
    parser.add_argument("--embedding", choices=("both", "llama.cpp", "f32"), default="both",
                        help="the token embedding (and tied head) as llama.cpp quantizes it, kept f32, or both rows (default)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--codesign", type=Path, action="append", default=[],
                        help="compress_models.py JSON whose rows on the same windows stand beside llama.cpp's (repeatable)")
    parser.add_argument("--table", action="store_true", help="print the tables of --out and exit")
    args = parser.parse_args()
    args.types = [t.strip().upper() for t in args.types.split(",") if t.strip()]
    for path in [*args.codesign, *([args.out] if args.table else [])]:
        if not path.is_file():
            _fail(f"{path} does not exist")
    if args.table:
        print(table(_rows(args.out), args.codesign))
        return 0
    if args.eval_tokens < 2:
        _fail(f"--eval-tokens must be at least 2, got {args.eval_tokens}")
    if not args.out.parent.is_dir():
        _fail(f"--out {args.out}: the folder {args.out.parent} does not exist")
    if args.out.exists():
        _rows(args.out)  # refuse a file that is not ours before hours of work, never overwrite it
    llama_cpp = _llama_cpp()
    unknown = [t for t in args.types if not hasattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{t}")]
    if unknown:
        _fail(f"--types: llama.cpp has no type {unknown[0]} (e.g. {', '.join(TYPES)})")
    try:
        run(args)
    except ValueError as exc:
        _fail(str(exc))
    if args.codesign:
        print(table(_rows(args.out), args.codesign))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
