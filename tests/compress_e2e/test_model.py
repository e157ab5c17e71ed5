"""Whole-model compression on MiniLM: each method family, sizes, the embedding metric, save/reload, the CLI."""

import json

import pytest
import torch

from codesign.cli import main
from codesign.compress.checkpoint import compressed_layers, load_compressed, read_manifest, save_compressed
from codesign.compress.linear import QuantizedLinear
from codesign.compress.lowrank import LowRankLinear, allocate_ranks, effective_rank
from codesign.compress.metrics import activation_error
from codesign.compress.model import (
    MethodSpec,
    collect_statistics,
    compress_linears,
    effective_weight,
)
from tests.support import requires_llm

BLOCK0 = "encoder.layer.0."


@pytest.fixture(scope="module")
def reference(minilm, minilm_sentences):
    from codesign.llm import sentence_embeddings

    model, tok = minilm
    return sentence_embeddings(model, tok, minilm_sentences["test"])


@pytest.fixture(scope="module")
def block0_stats(minilm, minilm_sentences):
    """Input and output second moments and block importance of block 0's linears (one calibration pass)."""
    from codesign.llm import sentence_embeddings

    model, tok = minilm
    names = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and n.startswith(BLOCK0)]
    stats = collect_statistics(model, lambda: sentence_embeddings(model, tok, minilm_sentences["train"]), names,
                               inputs=True, outputs=True, blocks=True)
    return names, stats


def _cosine(model, tok, sentences, reference, replacements):
    from codesign.llm import embedding_similarity, swapped

    with swapped(model, replacements):
        return embedding_similarity(reference, model, tok, sentences["test"]).mean_cosine


@requires_llm
def test_kmeans_block_compresses_and_keeps_embeddings(minilm, minilm_sentences, reference, block0_stats):
    model, tok = minilm
    names = [n for n in block0_stats[0] if ".attention." in n]  # the four 384 x 384 projections
    four, rep4 = compress_linears(model, MethodSpec("kmeans", 4), names=names)
    two, rep2 = compress_linears(model, MethodSpec("kmeans", 2), names=names)
    assert set(four) == set(names) and all(isinstance(m, QuantizedLinear) for m in four.values())
    assert sum(r.bytes for r in rep4) * 3.5 < sum(r.fp16_bytes for r in rep4)
    assert sum(r.bytes for r in rep2) < sum(r.bytes for r in rep4)
    cos4 = _cosine(model, tok, minilm_sentences, reference, four)
    cos2 = _cosine(model, tok, minilm_sentences, reference, two)
    assert 0.99 < cos4 < 1 and cos2 < cos4
    # the harness restored the original layers
    assert all(isinstance(dict(model.named_modules())[n], torch.nn.Linear) for n in names)


@requires_llm
def test_save_reload_gives_identical_outputs(minilm, minilm_sentences, block0_stats, tmp_path):
    from codesign.llm import sentence_embeddings, swapped

    model, tok = minilm
    names, stats = block0_stats
    names = names[1:2]  # the key projection, 384 x 384
    for spec in (MethodSpec("vq", 2), MethodSpec("srr", 2, rank=8)):  # scalar codes: the CLI test reloads them
        built, _ = compress_linears(model, spec, stats, names)
        out = tmp_path / spec.method
        with swapped(model, built):
            save_compressed(model, out, {"spec": spec.method})
            before = sentence_embeddings(model, tok, minilm_sentences["test"][:8])
        loaded = load_compressed(out)  # rebuilt from the folder alone
        assert read_manifest(out)["spec"] == spec.method and set(compressed_layers(loaded)) == set(names)
        after = sentence_embeddings(loaded, tok, minilm_sentences["test"][:8])
        assert torch.equal(before, after)


@requires_llm
def test_qer_families_reduce_output_error(minilm, block0_stats):
    model, _ = minilm
    names, stats = block0_stats
    names = [BLOCK0 + "attention.self.query", BLOCK0 + "attention.self.key"]
    errors = {}
    for method in ("kmeans", "qer-plain", "qer-scaled", "srr"):
        spec = MethodSpec(method, 2, rank=16 if method != "kmeans" else None)
        _, reports = compress_linears(model, spec, stats, names)
        errors[method] = sum(r.activation_error for r in reports)
    assert errors["qer-plain"] < errors["kmeans"]
    assert errors["qer-scaled"] < errors["qer-plain"]
    assert errors["srr"] <= errors["qer-scaled"] * (1 + 1e-9)


@requires_llm
def test_swift_svd_beats_weight_svd_on_output_error(minilm, block0_stats):
    model, _ = minilm
    names, stats = block0_stats
    assert set(stats.block_importance) == {f"encoder.layer.{i}" for i in range(6)}
    assert all(0 < v <= 2 for v in stats.block_importance.values())
    built, reports = compress_linears(model, MethodSpec("lowrank", 4), stats, names)
    modules = dict(model.named_modules())
    for name, module in built.items():
        assert isinstance(module, LowRankLinear)
        w = modules[name].weight.detach().float()
        u, s, vh = torch.linalg.svd(w.double(), full_matrices=False)
        r = module.rank
        plain = (u[:, :r] * s[:r]) @ vh[:r]
        # Swift-SVD minimizes the output error under the calibration data; plain SVD of W does not
        assert activation_error(w, effective_weight(module), stats.input_cov[name]) <= (
            activation_error(w, plain, stats.input_cov[name]) + 2e-3
        )
    fp16 = sum(r.fp16_bytes for r in reports)
    assert sum(r.bytes for r in reports) <= fp16 * 4 / 16 + sum(modules[n].bias.numel() * 4 for n in names)


def test_rank_allocation_follows_effective_rank_and_importance():
    assert effective_rank(torch.ones(10)) == pytest.approx(10)
    assert effective_rank(torch.tensor([1.0, 0, 0])) == pytest.approx(1)
    shapes = {"a": (64, 64), "b": (64, 64), "c": (64, 64)}
    ranks = allocate_ranks(shapes, {"a": 10.0, "b": 20.0, "c": 20.0}, {"a": 1.0, "b": 1.0, "c": 2.0}, 60 * 128)
    assert ranks["a"] < ranks["b"] < ranks["c"]
    assert sum(r * 128 for r in ranks.values()) <= 60 * 128
    with pytest.raises(ValueError, match="rank 1"):
        allocate_ranks(shapes, {"a": 1, "b": 1, "c": 1}, {"a": 1, "b": 1, "c": 1}, 100)


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "gptq", "bits": 4}, "unknown method 'gptq'"),
    ({"method": "kmeans", "bits": 9}, "unsupported bits 9"),
    ({"method": "int", "bits": 0}, "unsupported bits 0"),
    ({"method": "vq", "bits": 3}, "vq is a 2-bit format"),
    ({"method": "kmeans", "bits": 4, "rank": 8}, "--rank applies"),
    ({"method": "srr", "bits": 2, "rank": -1}, "non-negative"),
    ({"method": "lcqat-vq", "bits": 4}, "lcqat-vq is a 2-bit format"),
    ({"method": "kmeans", "bits": 4, "winq": True}, "apply to the QAT methods"),
    ({"method": "int", "bits": 4, "steps": 5}, "apply to the QAT methods"),
    ({"method": "kmeans-qat", "bits": 2, "steps": 0}, "steps must be a positive integer"),
    ({"method": "int-qat", "bits": 2, "lr": 2.0}, "learning rate must lie in"),
    ({"method": "kmeans", "bits": 4, "group_size": 12}, "group size must be a positive multiple of 8"),
])
def test_bad_specs(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MethodSpec(**kwargs)


@requires_llm
def test_cli_end_to_end_saves_a_reloadable_model(tmp_path, minilm, capsys):
    from codesign.llm import sentence_embeddings

    out = tmp_path / "kmeans4"
    argv = ["compress", "minilm", "--method", "kmeans", "--bits", "4", "--blocks", "5", "--layers", "*.self.*",
            "--out", str(out), "--eval", "32", "--json", "--force"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    model, tok = minilm
    chosen = [f"encoder.layer.5.attention.self.{p}" for p in ("query", "key", "value")]
    assert report["layers"] == 3 and report["blocks"] == [5] and report["layer_patterns"] == ["*.self.*"]
    assert 0.98 < report["metric"]["cosine_mean"] < 1 and report["metric"]["n_sentences"] == 32
    assert report["bytes"] < report["fp16_bytes"] / 3.5
    assert sorted(p.name for p in out.iterdir()) == ["codesign-output.json", "compressed.json", "config.json",
                                                      "model.safetensors"]
    loaded = load_compressed(out)
    assert sorted(compressed_layers(loaded)) == sorted(chosen) and read_manifest(out)["report"]["bytes"] == report["bytes"]
    sample = ["The Moon orbits the Earth."]
    first = sentence_embeddings(loaded, tok, sample)
    assert not torch.equal(first, sentence_embeddings(model, tok, sample))  # the compressed layers were in use
    assert torch.equal(sentence_embeddings(load_compressed(out), tok, sample), first)


def test_qat_methods_are_refused_without_their_training_data():
    with pytest.raises(ValueError, match="trains on the model's data"):
        compress_linears(torch.nn.Sequential(torch.nn.Linear(64, 8)), MethodSpec("kmeans-qat", 2))


@requires_llm
def test_qat_through_compress_model_trains_exports_and_reloads(tmp_path, minilm):
    # k-means QAT with WinQ on block 0's linears, 4 steps: the exported layers are exactly the trained grid
    from codesign.compress.pipeline import Budget, compress_model
    from codesign.llm import sentence_embeddings

    budget = Budget(eval_sentences=16, qat_batch=4)
    spec = MethodSpec("kmeans-qat", 2, steps=4, lr=3e-4, winq=True)
    torch.manual_seed(0)
    report, replacements = compress_model("minilm", spec, out=tmp_path / "qat", budget=budget, blocks=[0],
                                          progress=None)
    assert report["layers"] == 6 and len(report["qat_losses"]) == 4 and report["winq"] is True
    assert report["qat_losses"][-1] < report["qat_losses"][0]
    assert 0 < report["metric"]["cosine_mean"] < 1 and 2 < report["bits_per_weight"] < 2.5
    model, tok = minilm
    for module in replacements.values():
        assert module.qweight.method == "kmeans-qat" and module.qweight.bits == 2
        assert len(torch.unique(module.qweight.codebook)) <= 4
    loaded = load_compressed(tmp_path / "qat")
    doc = read_manifest(tmp_path / "qat")
    assert doc["spec"]["method"] == "kmeans-qat" and doc["spec"]["steps"] == 4
    for name, module in compressed_layers(loaded).items():
        assert torch.equal(module.qweight.dequantize(), replacements[name].qweight.dequantize())
    sample = ["The Moon orbits the Earth."]
    compressed = sentence_embeddings(loaded, tok, sample)
    assert not torch.equal(compressed, sentence_embeddings(model, tok, sample))


@requires_llm
def test_quantize_on_minilm_round_trips_saves_and_runs_in_half_precision(minilm, minilm_sentences, tmp_path):
    import copy
    import subprocess
    import sys

    from codesign.compress import KMeansConfig, quantize_

    model, tok = minilm
    student = quantize_(copy.deepcopy(model), KMeansConfig(bits=4), filter="encoder.layer.0.attention.self.*",
                        kernel="torch")  # the half-precision run below would take minutes in Triton's interpreter
    assert len(compressed_layers(student)) == 3
    enc = tok(minilm_sentences["test"][:4], padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = student(**enc).last_hidden_state
        twin = copy.deepcopy(student)
        for layer in compressed_layers(twin).values():
            for buffer in layer.buffers():
                buffer.zero_()
        assert not torch.equal(twin(**enc).last_hidden_state, expected)
        twin.load_state_dict(student.state_dict())
        assert torch.equal(twin(**enc).last_hidden_state, expected)
    save_compressed(student, tmp_path / "saved")
    torch.save(dict(enc), tmp_path / "inputs.pt")
    child = ("import torch, sys; from codesign.compress import load_compressed; m = load_compressed(sys.argv[1]); "
             "enc = torch.load(sys.argv[2]); torch.save(m(**enc).last_hidden_state.detach(), sys.argv[3])")
    subprocess.run([sys.executable, "-c", child, str(tmp_path / "saved"), str(tmp_path / "inputs.pt"),
                    str(tmp_path / "out.pt")], check=True, timeout=300)
    assert torch.equal(torch.load(tmp_path / "out.pt"), expected)
    with torch.no_grad():
        half = twin.to(torch.float16)(**enc).last_hidden_state
    assert half.dtype == torch.float16 and torch.allclose(half.float(), expected, atol=0.1)
