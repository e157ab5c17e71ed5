"""Does SRR's per-layer guard generalize? In-sample against validation output error, per layer, on Gemma-3-270M.

    python benchmarks/gemma_srr_guard.py --blocks 0,4,8,12,16 --threads 1

For each linear of the named blocks (3 bits, rank 32, k-means base with error feedback in act order,
group 64, covariances of 16384 calibration tokens from the original model): scaled QER (k = 0) and
SRR at the k its criterion picks, each layer's output error E[|x (W - Ŵ)ᵀ|²] relative to scaled's,
in-sample (the calibration covariance the guard compares on) and on the validation slice (8192
tokens of the last 400 train-split articles, never the held-out split). Where Gemma-3 normalizes a
layer's output before anything reads it, also the error after that RMS norm (with its learned gains)
on the validation inputs: q_proj and k_proj per head (q_norm, k_norm), o_proj and down_proj over the
whole output (post_attention_layernorm, post_feedforward_layernorm, before the residual add).
--layers keeps only the linears whose names end so (e.g. o_proj,down_proj).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import torch

from codesign.compress.model import MethodSpec, collect_statistics
from codesign.compress.pipeline import Budget, calibrate, linear_names, load_model
from codesign.compress.qer import activation_scaling, choose_preserved_rank, quantize_qer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemma_ef_calibration import validation_tokens  # noqa: E402  (one definition of the validation slice)


def output_error(weight: torch.Tensor, quantized, cov: torch.Tensor) -> float:
    """E[|x (W - Ŵ)ᵀ|²] under the second moment cov."""
    e = weight.double() - quantized.dequantize().double()
    return float(torch.einsum("nk,kl,nl->", e, cov, e))


def normed_error(weight: torch.Tensor, quantized, x: torch.Tensor, norm: torch.nn.Module, head_dim: int) -> float:
    """Mean squared error of the per-head RMS-normed outputs x Wᵀ against x Ŵᵀ."""
    with torch.no_grad():
        ref = norm((x @ weight.T).unflatten(-1, (-1, head_dim)))
        got = norm((x @ quantized.dequantize().float().T).unflatten(-1, (-1, head_dim)))
    return float((got - ref).pow(2).mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", default="0,4,8,12,16")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--layers", default=None, help="comma list of name endings to keep (default: every linear)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    blocks = [int(b) for b in args.blocks.split(",")]
    model, tokenizer = load_model("gemma3-270m")
    names = [n for n in linear_names("gemma3-270m", model) if any(f".layers.{b}." in n for b in blocks)]
    if args.layers:
        names = [n for n in names if n.endswith(tuple(args.layers.split(",")))]
        if not names:
            parser.error(f"--layers {args.layers!r} matches no linear of blocks {args.blocks}")
    calibration = calibrate("gemma3-270m", model, tokenizer, names, Budget(calib_tokens=16384)).input_cov
    val = validation_tokens(tokenizer, 8192)
    modules = dict(model.named_modules())
    # the RMS norm that reads each layer's output (its path in the decoder layer), and whether it is per head
    output_norms = {"q_proj": ("self_attn.q_norm", True), "k_proj": ("self_attn.k_norm", True),
                    "o_proj": ("post_attention_layernorm", False), "down_proj": ("post_feedforward_layernorm", False)}
    inputs: dict[str, list[torch.Tensor]] = {n: [] for n in names if n.rsplit(".", 1)[1] in output_norms}
    hooks = [modules[n].register_forward_hook(lambda m, a, o, n=n: inputs[n].append(a[0].detach().reshape(-1, a[0].shape[-1])))
             for n in inputs]

    def run_validation() -> None:
        for start in range(0, val.numel(), 512):
            model.base_model(input_ids=val[start:start + 512][None])

    validation = collect_statistics(model, run_validation, names).input_cov
    for h in hooks:
        h.remove()
    config = MethodSpec("srr", 3, error_feedback=True, act_order=True).layer_config()
    head_dim = model.config.head_dim
    totals = dict.fromkeys(("scaled in", "scaled val", "guard in", "guard val"), 0.0)
    print("| layer | SRR's k | SRR vs scaled, in-sample | on validation | after the output's norm (validation) | guard keeps |")
    print("|---|---|---|---|---|---|")
    for name in names:
        weight = modules[name].weight.detach().float()
        cov = calibration[name]
        scaled = quantize_qer(weight, dataclasses.replace(config, method="scaled"), cov)
        s, _ = activation_scaling(cov, config.scaling, config.damping)
        spectrum_e = torch.linalg.svdvals((weight.double() - scaled.base.dequantize().double()) @ s)
        k = choose_preserved_rank(torch.linalg.svdvals(weight.double() @ s), spectrum_e, config.rank)
        srr = quantize_qer(weight, dataclasses.replace(config, preserved_rank=k), cov) if k else scaled
        e_in = [output_error(weight, q, cov) for q in (scaled, srr)]
        e_val = [output_error(weight, q, validation[name]) for q in (scaled, srr)]
        keep_srr = e_in[1] < e_in[0]
        totals["scaled in"] += e_in[0]
        totals["scaled val"] += e_val[0]
        totals["guard in"] += min(e_in)
        totals["guard val"] += e_val[1] if keep_srr else e_val[0]
        normed = "-"
        if name in inputs:
            layer, _, leaf = name.rsplit(".", 2)  # model.layers.N, self_attn | mlp, the linear
            norm_path, per_head = output_norms[leaf]
            x = torch.cat(inputs[name]).float()
            width = head_dim if per_head else weight.shape[0]
            e_norm = [normed_error(weight, q, x, modules[f"{layer}.{norm_path}"], width) for q in (scaled, srr)]
            normed = f"{100 * (e_norm[1] / e_norm[0] - 1):+.1f} %"
        print(f"| {name.split('layers.')[1]} | {k} | {100 * (e_in[1] / e_in[0] - 1):+.1f} % | "
              f"{100 * (e_val[1] / e_val[0] - 1):+.1f} % | {normed} | {'SRR' if keep_srr else 'scaled'} |", flush=True)
    print(f"\nsum over these layers, guard against scaled: in-sample {100 * (totals['guard in'] / totals['scaled in'] - 1):+.2f} %, "
          f"validation {100 * (totals['guard val'] / totals['scaled val'] - 1):+.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
