"""lowbit_matmul's choice of path, its one-warning fallback, bad input; launch configurations and the tuning cache."""

import json
import time
import warnings

import pytest
import torch

from codesign.compress import KMeansConfig, QuantizedLinear, lowbit_matmul, quantize, reset_fallback_warnings
from codesign.kernels import tuning
from codesign.kernels.lut_matmul import BYTE_TABLE, lut_matmul
from codesign.kernels.tuning import KernelConfig, Problem


@pytest.fixture
def qw():
    gen = torch.Generator().manual_seed(0)
    return quantize(torch.randn(24, 64, generator=gen), KMeansConfig(bits=2, group_size=32))


def fallback_warnings(fn):
    reset_fallback_warnings()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if "torch reference" in str(w.message)]


def test_auto_selects_triton_under_the_interpreter(qw, interpreted_kernels, monkeypatch):
    from codesign.kernels import lut_matmul as module

    calls = []
    real = module.lut_matmul
    monkeypatch.setattr(module, "lut_matmul", lambda *a, **kw: calls.append(1) or real(*a, **kw))  # counts, then runs
    x = torch.randn(3, 64, dtype=torch.float16)
    messages = fallback_warnings(lambda: lowbit_matmul(x, qw))
    assert messages == [] and len(calls) == 1  # no fallback: auto ran the (interpreted) kernel
    assert torch.equal(lowbit_matmul(x, qw), lowbit_matmul(x, qw, kernel="triton"))
    layer = QuantizedLinear(qw)  # modules default to auto as well
    layer(x)
    assert len(calls) == 4


def test_unsupported_dtype_falls_back_once_per_reason(qw):
    x32 = torch.randn(3, 64)
    x64 = x32.double()
    messages = fallback_warnings(lambda: [lowbit_matmul(x, qw) for x in (x32, x32, x64, x64)])
    assert len(messages) == 2
    assert "torch.float32" in messages[0] and "torch.float64" in messages[1]
    ref = x64 @ qw.dequantize().double().T
    assert torch.allclose(lowbit_matmul(x64, qw), ref)


def test_forcing_triton_where_it_cannot_run_is_an_error(qw):
    with pytest.raises(ValueError, match="kernel='triton' cannot run here: dtype torch.float32"):
        lowbit_matmul(torch.randn(2, 64), qw, kernel="triton")


def test_bad_activations(qw):
    with pytest.raises(ValueError, match="last dimension must be in_features=64"):
        lowbit_matmul(torch.randn(2, 63, dtype=torch.float16), qw)
    with pytest.raises(ValueError, match="x must be contiguous"):
        lowbit_matmul(torch.randn(64, 2, dtype=torch.float16).T, qw)
    with pytest.raises(ValueError, match="not a floating-point type"):
        lowbit_matmul(torch.ones(2, 64, dtype=torch.int8), qw)
    with pytest.raises(ValueError, match="unknown kernel 'cuda'"):
        lowbit_matmul(torch.randn(2, 64, dtype=torch.float16), qw, kernel="cuda")


def test_quantized_linear_replaces_nn_linear():
    linear = torch.nn.Linear(64, 24)
    layer = QuantizedLinear.from_linear(linear, KMeansConfig(bits=8, group_size=32), kernel="torch")
    x = torch.randn(5, 64)
    assert torch.allclose(layer(x), linear(x), atol=0.05)
    assert "method=kmeans" in repr(layer)


PROBLEMS = [Problem(m, n, k, bits, g) for m in (1, 2, 3, 4, 5, 16, 17, 300, 4096)
            for n, k in ((40, 96), (4096, 11008), (8192, 8192)) for bits, g in ((1, 32), (3, 64), (4, 128))]


def test_heuristic_is_valid_for_every_problem():
    for problem in PROBLEMS:
        config = tuning.heuristic_config(problem)
        assert tuning.valid_config(config, problem), (problem, config)
        assert tuning.lookup_config(problem, None) == config


def test_pruning_is_pure_and_keeps_only_runnable_configs():
    space = tuning.search_space()
    problem = Problem(2, 4096, 4096, 4, 64)
    pruned = tuning.prune_configs(space["gemv"] + space["gemm"], problem)
    assert pruned and all(c.block_m in (2, 4) and c.block_m * c.block_n * c.block_k <= 16384 for c in pruned)
    assert tuning.prune_configs(space["gemv"] + space["gemm"], problem) == pruned
    gemm = tuning.prune_configs(space["gemm"], Problem(64, 4096, 4096, 4, 64))
    assert gemm and all(c.split_k == 1 and c.block_m >= 16 for c in gemm)


def test_tuned_cache_is_used_and_a_broken_one_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESIGN_CACHE_DIR", str(tmp_path))
    problem = Problem(1, 4096, 4096, 4, 64)
    path = tuning.cache_file("NVIDIA H100 80GB HBM3")
    assert path == tmp_path / "kernels" / "nvidia-h100-80gb-hbm3.json"
    path.parent.mkdir(parents=True)
    tuned = KernelConfig(1, 128, 128, split_k=4)
    path.write_text(json.dumps({"configs": {problem.cache_key(): tuned.__dict__}}))
    assert tuning.lookup_config(problem, "NVIDIA H100 80GB HBM3") == tuned
    assert tuning.lookup_config(problem, "NVIDIA A100-SXM4-80GB") == tuning.heuristic_config(problem)
    time.sleep(0.01)
    path.write_text("{not json")
    assert tuning.lookup_config(problem, "NVIDIA H100 80GB HBM3") == tuning.heuristic_config(problem)


@pytest.mark.usefixtures("interpreted_kernels")
def test_autotune_is_bounded_and_cached(tmp_path, monkeypatch, qw):
    monkeypatch.setenv("CODESIGN_CACHE_DIR", str(tmp_path))
    x = torch.randn(1, 64, dtype=torch.float16)
    problem = Problem(1, 24, 64, 2, 32)
    candidates = [KernelConfig(1, 16, 32), KernelConfig(1, 32, 64), KernelConfig(1, 8, 16), KernelConfig(2, 16, 32)]
    args = dict(bits=2, group_size=32, table_mode=BYTE_TABLE)
    start = time.perf_counter()
    best = tuning.autotune(problem, "triton-interpreter",
                           lambda c: lut_matmul(x, qw.packed, qw.scales, qw.byte_table(), config=c, **args),
                           budget_s=0.01, reps=1, candidates=candidates)
    assert time.perf_counter() - start < 10  # the budget stops the search after the first timed candidate
    assert best == tuning.heuristic_config(problem)
    saved = json.loads(tuning.cache_file("triton-interpreter").read_text())
    assert saved["configs"][problem.cache_key()] == best.__dict__
    assert tuning.lookup_config(problem, "triton-interpreter") == best
    with pytest.raises(ValueError, match="budget must be positive"):
        tuning.autotune(problem, "triton-interpreter", lambda c: None, budget_s=0)
