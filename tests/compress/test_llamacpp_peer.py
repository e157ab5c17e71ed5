"""What benchmarks/compress_vs_llamacpp.py computes without llama.cpp: GGUF bits per weight, and the windows it feeds
llama.cpp are the ones codesign.llm.perplexity scores (llama-cpp-python is a benchmark peer, not a test dependency)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

from compress_vs_llamacpp import gguf_bits, window_nll, windows  # noqa: E402

from codesign.llm.perplexity import perplexity  # noqa: E402


def _write_gguf(path: Path) -> None:
    import gguf
    from gguf import quants

    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("token_embd.weight", rng.standard_normal((100, 64), dtype=np.float32))
    writer.add_tensor("blk.0.attn_norm.weight", np.ones(64, dtype=np.float32))
    for name, rows, qtype in (("blk.0.attn_q.weight", 64, gguf.GGMLQuantizationType.Q8_0),
                              ("blk.0.ffn_down.weight", 128, gguf.GGMLQuantizationType.Q4_0)):
        data = quants.quantize(rng.standard_normal((rows, 64), dtype=np.float32), qtype)
        writer.add_tensor(name, data, raw_shape=data.shape, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_bits_per_weight_come_from_the_block_linears_stored_bytes(tmp_path):
    _write_gguf(tmp_path / "m.gguf")
    bits = gguf_bits(tmp_path / "m.gguf")
    # Q8_0 stores 32 weights in 34 bytes (8.5 bits), Q4_0 in 18 (4.5 bits); the norm and the f32 embedding are not linears
    assert bits["linear_weights"] == 64 * 64 + 128 * 64
    assert bits["bits_per_weight"] == pytest.approx((64 * 64 * 8.5 + 128 * 64 * 4.5) / (64 * 64 + 128 * 64))
    assert bits["tensor_types"] == {"Q4_0": 1, "Q8_0": 1}
    assert bits["embedding_type"] == {"token_embd.weight": "F32"}
    everything = 100 * 64 + 64 + 64 * 64 + 128 * 64
    assert bits["parameters"] == everything
    assert bits["file_bits_per_weight"] == pytest.approx((100 * 64 * 32 + 64 * 32 + 64 * 64 * 8.5 + 128 * 64 * 4.5) / everything)


def test_windows_and_their_nll_are_the_harness_perplexity():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_positions=16, n_embd=16, n_layer=1, n_head=2)).eval()
    tokens = torch.randint(0, 50, (41,))  # 41 = 5 windows of 8 and a last token alone, which nothing scores
    result = perplexity(model, tokens, context=8)
    chunks = windows(tokens.tolist(), 8)
    assert [len(w) - 1 for w in chunks] == list(result.window_tokens) == [7] * 5
    with torch.no_grad():
        ours = [window_nll(model(torch.tensor([w])).logits[0].numpy(), w) for w in chunks]
    np.testing.assert_allclose(ours, result.window_nll, rtol=1e-5)


def test_a_context_under_two_tokens_is_refused():
    with pytest.raises(ValueError, match="at least 2"):
        windows([1, 2, 3], 1)


def test_doctor_reports_llama_cpp_python_and_the_extra_stays_out_of_the_test_tier():
    import importlib.metadata
    import tomllib

    from codesign.doctor import tool_versions

    try:
        installed = importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        installed = None
    assert tool_versions()["llama-cpp-python"] == installed
    extras = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(r.startswith("llama-cpp-python") for r in extras["compress-peers"])
    assert not any("compress-peers" in r or "llama" in r for r in extras["test"])


def test_codesign_rows_scored_on_more_windows_stand_beside_on_their_first_windows(tmp_path):
    import json
    import math

    from compress_vs_llamacpp import codesign_rows

    def row(window_tokens, window_nll, reference_nll):
        tokens = sum(window_tokens)
        return {"model": "m", "weights": 10, "metric": {
            "window_tokens": window_tokens, "window_nll": window_nll, "reference_window_nll": reference_nll,
            "n_tokens": tokens, "perplexity": math.exp(sum(window_nll) / tokens),
            "reference_perplexity": math.exp(sum(reference_nll) / tokens)}}

    longer = row([4, 4, 4, 4], [8.0, 6.0, 40.0, 40.0], [4.0, 4.0, 20.0, 20.0])
    shifted = row([4, 5, 4, 4], [8.0, 6.0, 40.0, 40.0], [4.0, 4.0, 20.0, 20.0])  # other windows: left out
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([longer, shifted]))
    found = codesign_rows([path], "m", 10, [4, 4], context=4, reference=math.exp(8.0 / 8))
    assert len(found) == 1
    assert found[0]["prefix_of"] == 4
    assert found[0]["metric"]["perplexity"] == pytest.approx(math.exp(14.0 / 8))
    assert found[0]["metric"]["window_nll"] == [8.0, 6.0]
    assert codesign_rows([path], "m", 10, [4, 4], context=4, reference=math.exp(1.5)) == []  # another reference
