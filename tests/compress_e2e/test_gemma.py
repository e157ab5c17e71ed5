"""Gemma-3-270M end to end, on a small token budget and a few layers: Q + L R through the CLI, Swift-SVD low-rank."""

import json

import pytest
import torch

from codesign.cli import main
from codesign.compress.checkpoint import compressed_layers, load_compressed, read_manifest
from codesign.compress.lowrank import LowRankLinear
from codesign.compress.model import MethodSpec, compress_linears
from codesign.compress.pipeline import Budget, calibrate, compress_model, linear_names
from tests.support import requires_llm

pytestmark = requires_llm

# one 64-token window of held-out text, 64 calibration tokens: Gemma's 262k-word output layer dominates the cost
BUDGET = Budget(calib_tokens=64, eval_tokens=64, context=64)
BUDGET_ARGS = ["--calib-tokens", "64", "--eval-tokens", "64", "--context", "64"]
KV0 = "model.layers.0.self_attn.[kv]_proj"  # block 0's key and value projections, 256 x 640 each


def _perplexity(model, tokenizer, replacements=None) -> float:
    from codesign.llm import perplexity, swapped, token_stream

    tokens = token_stream(tokenizer, "test", BUDGET.eval_tokens)
    with swapped(model, replacements or {}):
        return perplexity(model, tokens, context=BUDGET.context).perplexity


def test_cli_srr_on_gemma_reports_perplexity_and_saves(gemma, tmp_path, capsys):
    model, tokenizer = gemma
    out = tmp_path / "srr2"
    argv = ["compress", "gemma3-270m", "--method", "srr", "--bits", "2", "--rank", "8", "--layers", KV0,
            *BUDGET_ARGS, "--out", str(out), "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    metric = report["metric"]
    assert report["layers"] == 2 and report["rank"] == 8 and metric["n_tokens"] == 63
    reference = metric["reference_perplexity"]
    # the compressed layers were in use (the perplexity moved) and the model still works; on 63 tokens
    # the sign of the change is noise, so only its size is bounded
    assert metric["perplexity"] != reference and abs(metric["perplexity"] / reference - 1) < 0.5
    # 2 bits + rank 8 of fp16 factors over 640 + 256 dimensions, fp16 scales per 64 weights, and a uint8 zero
    # point per 64 weights in the layers (of the two, same shape) whose k-means grid kept zero points
    loaded = load_compressed(out)
    zero_points = sum(m.qweight.base.zeros is not None for m in compressed_layers(loaded).values())
    assert report["bits_per_weight"] == pytest.approx(
        2 + 16 / 64 + 8 * 16 * (640 + 256) / (256 * 640) + zero_points / 2 * 8 / 64, abs=0.01)
    # rebuilt from the folder alone
    assert sorted(compressed_layers(loaded)) == ["model.layers.0.self_attn.k_proj", "model.layers.0.self_attn.v_proj"]
    assert read_manifest(out)["spec"]["method"] == "srr"
    assert _perplexity(loaded, tokenizer) == pytest.approx(metric["perplexity"], rel=1e-6)


def test_qer_ordering_on_gemma_activations(gemma):
    model, tokenizer = gemma
    names = linear_names("gemma3-270m", model, layers=[KV0])
    stats = calibrate("gemma3-270m", model, tokenizer, names, BUDGET)
    assert stats.n_rows == BUDGET.calib_tokens
    errors = {}
    for method in ("kmeans", "qer-plain", "qer-scaled", "srr"):
        _, reports = compress_linears(model, MethodSpec(method, 2, rank=None if method == "kmeans" else 8), stats, names)
        errors[method] = sum(r.activation_error for r in reports)
    assert errors["qer-plain"] < errors["kmeans"]
    assert errors["qer-scaled"] < errors["qer-plain"]
    assert errors["srr"] <= errors["qer-scaled"] * (1 + 1e-9)


def test_swift_svd_lowrank_on_gemma(gemma):
    model, _ = gemma
    report, built = compress_model("gemma3-270m", MethodSpec("lowrank", 4), budget=BUDGET, progress=None,
                                   layers=["model.layers.0.self_attn.*"])
    assert sorted(built) == sorted(f"model.layers.0.self_attn.{p}_proj" for p in "qkvo")
    assert all(isinstance(m, LowRankLinear) for m in built.values())
    assert report["bits_per_weight"] <= 4  # the memory budget of 4 bits per weight
    metric = report["metric"]
    assert metric["reference_perplexity"] < metric["perplexity"] < 10 * metric["reference_perplexity"]
    assert all(isinstance(dict(model.named_modules())[n], torch.nn.Linear) for n in built)  # restored
