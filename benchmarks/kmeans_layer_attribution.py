"""Which layers carry the perplexity gap between the calibration-free k-means grid and min-max RTN.

    nice -n 10 python benchmarks/kmeans_layer_attribution.py --model smollm2-135m --bits 3 --threads 1 \
        --eval-tokens 2048 --calib-tokens 2048 --context 512

Every chosen linear is quantized both ways, `KMeansConfig(bits)` and `AsymIntConfig(bits)` (group 64), and
scored on the held-out tokens of benchmarks/compress_models.py's rows (the first --eval-tokens of the test
split, windows of --context): all RTN, all k-means, then for each group of layers (one kind, e.g. every
down_proj; every linear of one kind of module, e.g. every self_attn; one third of the blocks) the model with
only that group on the k-means grid and the rest RTN ("k-means in"), and the model with only that group on
RTN and the rest k-means ("RTN in"). Beside each group: its mean relative weight error ||W - Ŵ|| / ||W||
and relative output error under the input second moment of --calib-tokens train-split tokens, k-means over
RTN (below 1: the k-means grid is closer).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import cast

import torch

from codesign.compress import AsymIntConfig, KMeansConfig, quantize
from codesign.compress.metrics import activation_error, relative_error
from codesign.compress.model import collect_statistics
from codesign.compress.pipeline import is_encoder, linear_names, load_model
from codesign.llm import perplexity, swapped, token_stream

_BLOCK = re.compile(r"\.(\d+)\.")


def dense_copy(linear: torch.nn.Linear, weight: torch.Tensor) -> torch.nn.Linear:
    """A frozen nn.Linear of `weight` with `linear`'s bias."""
    dense = torch.nn.Linear(linear.in_features, linear.out_features, bias=linear.bias is not None)
    dense.weight.data = weight
    if linear.bias is not None:
        dense.bias.data = linear.bias.detach().clone()
    return dense.requires_grad_(False)


def layer_groups(names: list[str]) -> dict[str, list[str]]:
    """Groups of layer names: one per kind (the name's last part), one per parent module's kind (e.g. every
    self_attn, every mlp) and one per third of the blocks present."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(name.rsplit(".", 1)[-1], []).append(name)
    for name in names:
        parts = name.split(".")
        if len(parts) > 2:
            groups.setdefault(f"every {parts[-2]}", []).append(name)
    blocks = sorted({int(m.group(1)) for n in names if (m := _BLOCK.search(n)) is not None})
    for part in range(3):
        chosen = set(blocks[part * len(blocks) // 3:(part + 1) * len(blocks) // 3])
        if chosen:
            members = [n for n in names if (m := _BLOCK.search(n)) is not None and int(m.group(1)) in chosen]
            groups[f"blocks {min(chosen)}-{max(chosen)}"] = members
    return groups


def main() -> int:
    """Print the per-group table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--bits", type=int, default=3)
    parser.add_argument("--blocks", default=None, help="comma list of blocks (default: all)")
    parser.add_argument("--eval-tokens", type=int, default=2048)
    parser.add_argument("--calib-tokens", type=int, default=2048)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--magnitude-weight", type=float, default=None,
                        help="KMeansConfig's magnitude_weight (default: its default, 3 at 3 bits and 0 otherwise)")
    args = parser.parse_args()
    if args.magnitude_weight is not None and not args.magnitude_weight >= 0:
        parser.error("--magnitude-weight must be >= 0")
    if args.bits < 1 or args.bits > 8 or args.eval_tokens < 2 or args.calib_tokens < 1 or args.context < 2:
        parser.error("--bits must be 1..8, --eval-tokens and --context at least 2, --calib-tokens at least 1")
    torch.set_num_threads(args.threads)
    try:
        if is_encoder(args.model):
            raise ValueError(f"{args.model} is not a causal LM: no perplexity to attribute")
        model, tokenizer = load_model(args.model)
        blocks = None if args.blocks is None else [int(b) for b in args.blocks.split(",")]
        names = linear_names(args.model, model, blocks)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    modules = dict(model.named_modules())
    calib = token_stream(tokenizer, "train", args.calib_tokens)
    body = cast(torch.nn.Module, model.base_model)  # the transformer without its head: the linears' inputs only

    def run() -> None:
        for start in range(0, calib.numel(), args.context):
            body(input_ids=calib[start:start + args.context][None])

    stats = collect_statistics(model, run, names)
    kmeans, rtn = KMeansConfig(bits=args.bits, magnitude_weight=args.magnitude_weight), AsymIntConfig(bits=args.bits)
    grids: dict[str, dict[str, torch.nn.Linear]] = {"kmeans": {}, "rtn": {}}
    errors: dict[str, dict[str, tuple[float, float]]] = {"kmeans": {}, "rtn": {}}
    start = time.perf_counter()
    for name in names:
        linear = modules[name]
        weight = linear.weight.detach().float()
        for grid, config in (("kmeans", kmeans), ("rtn", rtn)):
            approx = quantize(weight, config).dequantize().float()
            grids[grid][name] = dense_copy(linear, approx)
            errors[grid][name] = (relative_error(weight, approx), activation_error(weight, approx, stats.input_cov[name]))
    print(f"{args.model}, {len(names)} linears, {args.bits} bits: quantized both ways in "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    data = token_stream(tokenizer, "test", args.eval_tokens)

    def score(on_kmeans: set[str]) -> float:
        chosen = {n: grids["kmeans" if n in on_kmeans else "rtn"][n] for n in names}
        with swapped(model, chosen):
            return perplexity(model, data, context=args.context).perplexity

    reference = perplexity(model, data, context=args.context).perplexity
    all_rtn, all_kmeans = score(set()), score(set(names))
    print(f"reference {reference:.3f}; all RTN {all_rtn:.3f} ({100 * (all_rtn / reference - 1):+.1f} %); "
          f"all k-means {all_kmeans:.3f} ({100 * (all_kmeans / reference - 1):+.1f} %)", flush=True)
    print("| group | layers | weight error k-means / RTN | output error k-means / RTN | k-means in (rest RTN) | "
          "RTN in (rest k-means) |")
    print("|---|---|---|---|---|---|")
    for group, members in layer_groups(names).items():
        ratios = [sum(errors["kmeans"][n][i] for n in members) / sum(errors["rtn"][n][i] for n in members)
                  for i in (0, 1)]
        kmeans_in = score(set(members))
        rtn_in = score(set(names) - set(members))
        print(f"| {group} | {len(members)} | {ratios[0]:.3f} | {ratios[1]:.3f} | "
              f"{kmeans_in:.3f} ({100 * (kmeans_in / reference - 1):+.1f} %) | "
              f"{rtn_in:.3f} ({100 * (rtn_in / reference - 1):+.1f} %) |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
