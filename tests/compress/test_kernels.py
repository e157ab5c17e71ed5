"""Triton kernels against the torch reference, in Triton's interpreter on CPU (TRITON_INTERPRET=1, see conftest)."""

import pytest
import torch

from codesign.compress import (
    IntConfig,
    KMeansConfig,
    QERConfig,
    VQConfig,
    activation_covariance,
    lowbit_matmul,
    quantize,
    reference_matmul,
)
from codesign.kernels.lut_matmul import BYTE_TABLE, GROUP_CODEBOOK, LAYER_CODEBOOK, lut_matmul
from codesign.kernels.tuning import KernelConfig
from codesign.kernels.vq_matmul import vq_matmul

pytestmark = pytest.mark.usefixtures("interpreted_kernels")

GEMV = KernelConfig(block_m=4, block_n=16, block_k=32, split_k=2)  # N=40 and K=96 are not block multiples
GEMM = KernelConfig(block_m=16, block_n=32, block_k=64)


def weight(n=40, k=96, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(n, k, generator=gen) * torch.rand(n, 1, generator=gen)).contiguous()


def activations(m, k, dtype, seed=1):
    return torch.randn(m, k, generator=torch.Generator().manual_seed(seed)).to(dtype)


def close(y, x, qw, tol=4e-3):
    """Relative Frobenius error against the fp32 reference (the kernels round only the output)."""
    ref = reference_matmul(x.float(), qw)
    err = float((y.float() - ref).norm() / ref.norm())
    assert y.dtype == x.dtype and y.shape == ref.shape
    assert err < tol, err


def table_for(qw, mode):
    return {BYTE_TABLE: qw.byte_table, LAYER_CODEBOOK: lambda: qw.codebook, GROUP_CODEBOOK: lambda: qw.codebook}[mode]()


@pytest.mark.parametrize("bits,mode", [
    (1, BYTE_TABLE), (2, BYTE_TABLE), (4, BYTE_TABLE),
    (2, LAYER_CODEBOOK), (3, LAYER_CODEBOOK), (8, LAYER_CODEBOOK),
    (3, GROUP_CODEBOOK), (4, GROUP_CODEBOOK),
])
@pytest.mark.parametrize("m,config", [(3, GEMV), (1, None), (20, GEMM)])
def test_lut_matmul_matches_reference(bits, mode, m, config):
    group = 32
    # the kernel's table is the symmetric grid; zero points are a separate term (lowbit_matmul adds it)
    qw = quantize(weight(), KMeansConfig(bits=bits, group_size=group, codebook="group" if mode == 2 else "layer",
                                         zero_point=False))
    dtype = torch.bfloat16 if bits % 2 else torch.float16
    x = activations(m, 96, dtype)
    y = lut_matmul(x, qw.packed, qw.scales, table_for(qw, mode), bits=bits, group_size=group, table_mode=mode,
                   config=config)
    close(y, x, qw)


@pytest.mark.parametrize("group", [32, 96])
def test_scale_per_tile_and_per_element_paths(group):
    # group 32 < block_k 64: scales gathered per element; group 96 is not a multiple of 64 either,
    # group 64 with block_k 32/64 takes one scale per row per tile
    for g, cfg in ((group, GEMM), (64, KernelConfig(1, 16, 32)), (64, GEMM)):
        qw = quantize(weight(k=192), IntConfig(bits=4, group_size=g))
        x = activations(1 if cfg.block_m == 1 else 20, 192, torch.float16)
        y = lut_matmul(x, qw.packed, qw.scales, qw.byte_table(), bits=4, group_size=g, table_mode=BYTE_TABLE,
                       config=cfg)
        close(y, x, qw)


@pytest.mark.parametrize("m,config", [(2, GEMV), (20, GEMM)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fused_low_rank_matches_reference(m, config, dtype):
    w = weight()
    cov = activation_covariance(activations(256, 96, torch.float32, seed=3))
    qw = quantize(w, QERConfig(method="srr", rank=5, base=KMeansConfig(bits=2, group_size=32, zero_point=False)), cov)
    x = activations(m, 96, dtype)
    base = qw.base
    y = lut_matmul(x, base.packed, base.scales, base.byte_table(), bits=2, group_size=32, table_mode=BYTE_TABLE,
                   lowrank=(qw.left, qw.right), config=config)
    close(y, x, qw)
    plain = lut_matmul(x, base.packed, base.scales, base.byte_table(), bits=2, group_size=32,
                       table_mode=BYTE_TABLE, config=config)
    assert float((y.float() - plain.float()).abs().max()) > 1e-2  # the low-rank term is really added


@pytest.mark.parametrize("m,config", [(1, None), (4, GEMV), (20, GEMM)])
def test_vq_matmul_matches_reference(m, config):
    qw = quantize(weight(), VQConfig(group_size=32, iterations=3))
    x = activations(m, 96, torch.bfloat16)
    y = vq_matmul(x, qw.codes, qw.scales, qw.codebook(), group_size=32, config=config)
    close(y, x, qw)


def test_api_forces_the_interpreter_and_matches_reference():
    qw = quantize(weight(), QERConfig(method="plain", rank=3, base=KMeansConfig(bits=4, group_size=32)))
    x = activations(2 * 3 * 96, 1, torch.float16).view(2, 3, 96)  # leading dims are flattened
    y = lowbit_matmul(x, qw, kernel="triton")
    assert y.shape == (2, 3, 40)
    close(y.view(6, 40), x.view(6, 96), qw)


def test_kernel_rejects_bad_tensors():
    qw = quantize(weight(), KMeansConfig(bits=2, group_size=32))
    x = activations(2, 96, torch.float16)
    args = dict(bits=2, group_size=32, table_mode=BYTE_TABLE)
    table = qw.byte_table()
    with pytest.raises(ValueError, match="x dtype torch.float32"):
        lut_matmul(x.float(), qw.packed, qw.scales, table, **args)
    with pytest.raises(ValueError, match="x must be contiguous"):
        lut_matmul(activations(96, 2, torch.float16).T, qw.packed, qw.scales, table, **args)
    with pytest.raises(ValueError, match=r"codes must have shape \(40, 24\)"):
        lut_matmul(x, qw.packed[:, :12].contiguous(), qw.scales, table, **args)
    with pytest.raises(ValueError, match="scales dtype torch.float32"):
        lut_matmul(x, qw.packed, qw.scales.float(), table, **args)
    with pytest.raises(ValueError, match="group_size 40 does not divide K=96"):
        lut_matmul(x, qw.packed, qw.scales, table, bits=2, group_size=40, table_mode=BYTE_TABLE)
    with pytest.raises(ValueError, match="bits must be in 1..8"):
        lut_matmul(x, qw.packed, qw.scales, table, bits=9, group_size=32, table_mode=LAYER_CODEBOOK)
    with pytest.raises(ValueError, match="byte table needs 1, 2 or 4 bits"):
        lut_matmul(x, qw.packed, qw.scales, table, bits=3, group_size=32, table_mode=BYTE_TABLE)
    with pytest.raises(ValueError, match=r"L must have shape \(40, 2\)"):
        lut_matmul(x, qw.packed, qw.scales, table, lowrank=(torch.zeros(39, 2).half(), torch.zeros(2, 96).half()),
                   **args)
