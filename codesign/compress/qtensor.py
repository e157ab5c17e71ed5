"""Quantized weight containers: what a quantizer produces and a kernel consumes.

A container holds exactly the stored tensors (packed codes, fp16 scales, codebook or affine
map, low-rank factors); `dequantize()` rebuilds W from those stored values, so every error
figure measures the format as stored.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from codesign.compress.formats import (
    PackingFormat,
    check_bits,
    check_group_size,
    format_for_bits,
    packed_row_bytes,
    unpack_codes,
)

__all__ = [
    "ScalarQuantizedWeight",
    "VQWeight",
    "LowRankQuantizedWeight",
    "QuantizedWeight",
    "VQ_DIM",
    "VQ_CODE_BITS",
    "vq_sign_table",
    "flatten_weight",
    "unflatten_weight",
]

#: weights per vector in the VQ format, and bits of one vector's code (2 bits per weight).
VQ_DIM = 4
VQ_CODE_BITS = 8


def _require(t: torch.Tensor, name: str, dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype != dtype:
        raise ValueError(f"{name} must be {dtype}, got {t.dtype}")
    if tuple(t.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous")


@dataclass(frozen=True, eq=False)
class ScalarQuantizedWeight:
    """W[N, K] as b-bit codes, one fp16 scale per group of `group_size` along K, and a codebook.

    W[n, k] = codebook[code[n, k]] * scales[n, k // group_size]   (per-layer codebook, shape [2**b])
    W[n, k] = codebook[n, k // group_size, code[n, k]] * scales[...]   (per-group codebook)
    With integer zero points (asymmetric integer: codebook 0..2**b - 1, `zeros` uint8 [N, K / group_size]):
    W[n, k] = (codebook[code[n, k]] - zeros[n, k // group_size]) * scales[n, k // group_size]
    """

    packed: torch.Tensor
    scales: torch.Tensor
    codebook: torch.Tensor
    bits: int
    group_size: int
    shape: tuple[int, int]
    method: str
    zeros: torch.Tensor | None = None

    def __post_init__(self) -> None:
        check_bits(self.bits)
        n, k = self.shape
        check_group_size(self.group_size, k)
        _require(self.packed, "packed codes", torch.uint8, (n, packed_row_bytes(self.bits, k)))
        _require(self.scales, "scales", torch.float16, (n, k // self.group_size))
        levels = 1 << self.bits
        if tuple(self.codebook.shape) not in ((levels,), (n, k // self.group_size, levels)):
            raise ValueError(
                f"codebook must have shape ({levels},) or {(n, k // self.group_size, levels)}, "
                f"got {tuple(self.codebook.shape)}"
            )
        _require(self.codebook, "codebook", torch.float16, tuple(self.codebook.shape))
        if self.zeros is not None:
            _require(self.zeros, "zero points", torch.uint8, (n, k // self.group_size))

    @property
    def format(self) -> PackingFormat:
        """Packing format of the codes."""
        return format_for_bits(self.bits)

    @property
    def per_group_codebook(self) -> bool:
        """True when every group has its own codebook."""
        return self.codebook.dim() == 3

    def codes(self) -> torch.Tensor:
        """Unpacked uint8 codes [N, K]."""
        return unpack_codes(self.packed, self.bits, self.shape[1])

    def dequantize(self) -> torch.Tensor:
        """W rebuilt in float32 from the stored codes, codebook and scales."""
        n, k = self.shape
        codes = self.codes().long()
        book = self.codebook.float()
        if self.per_group_codebook:
            grouped = codes.view(n, k // self.group_size, self.group_size)
            values = torch.gather(book, 2, grouped).view(n, k)
        else:
            values = book[codes]
        if self.zeros is not None:
            values = values - self.zeros.float().repeat_interleave(self.group_size, dim=1)
        scales = self.scales.float().repeat_interleave(self.group_size, dim=1)
        return values * scales

    def zero_offsets(self) -> torch.Tensor | None:
        """[N, K / group_size] float32 zero point × scale per group (what the zero points subtract), or None."""
        return None if self.zeros is None else self.zeros.float() * self.scales.float()

    def byte_table(self) -> torch.Tensor:
        """[256, 8 // bits] fp16: the weights one packed byte decodes to (per-layer codebook, 1/2/4 bits)."""
        if self.per_group_codebook or self.format is not PackingFormat.PACKED_LSB:
            raise ValueError("a byte table exists only for 1, 2 or 4 bits with a per-layer codebook")
        per_byte = 8 // self.bits
        byte = torch.arange(256, device=self.codebook.device)
        shifts = torch.arange(per_byte, device=self.codebook.device) * self.bits
        codes = (byte[:, None] >> shifts) & ((1 << self.bits) - 1)
        return self.codebook[codes].contiguous()

    @property
    def nbytes(self) -> int:
        """Stored bytes: codes, scales, codebook and zero points."""
        stored = (self.packed, self.scales, self.codebook) + (() if self.zeros is None else (self.zeros,))
        return sum(t.numel() * t.element_size() for t in stored)


def vq_sign_table(device: torch.device | str = "cpu") -> torch.Tensor:
    """[256, 8] float32: bit j of code c as -1 (bit clear) or +1 (bit set)."""
    code = torch.arange(1 << VQ_CODE_BITS, device=device)
    bits = (code[:, None] >> torch.arange(VQ_CODE_BITS, device=device)) & 1
    return bits.float() * 2 - 1


@dataclass(frozen=True, eq=False)
class VQWeight:
    """2-bit vector quantization: each vector of 4 weights along K is an affine map of a sign vector.

    W[n, 4j:4j+4] = scales[n, 4j // group_size] * (basis @ s(code[n, j]) + offset), where s(c) in
    {-1, +1}^8 are the bits of the 8-bit code. The codebook is implicit: no lookup is needed to
    form W from the sign bits (the form used in training); kernels may decode either way.
    """

    codes: torch.Tensor
    scales: torch.Tensor
    basis: torch.Tensor
    offset: torch.Tensor
    group_size: int
    shape: tuple[int, int]
    method: str = "vq"

    def __post_init__(self) -> None:
        n, k = self.shape
        check_group_size(self.group_size, k)
        _require(self.codes, "VQ codes", torch.uint8, (n, k // VQ_DIM))
        _require(self.scales, "scales", torch.float16, (n, k // self.group_size))
        _require(self.basis, "VQ basis", torch.float32, (VQ_DIM, VQ_CODE_BITS))
        _require(self.offset, "VQ offset", torch.float32, (VQ_DIM,))

    @property
    def bits(self) -> int:
        """Bits per weight (2)."""
        return VQ_CODE_BITS // VQ_DIM

    @property
    def format(self) -> PackingFormat:
        """Packing format of the codes."""
        return PackingFormat.VQ4_BYTE

    def codebook(self) -> torch.Tensor:
        """[256, 4] float32: the vector each code decodes to, before scaling."""
        return vq_sign_table(self.basis.device) @ self.basis.T + self.offset

    def signs(self) -> torch.Tensor:
        """[N, K/4, 8] float32 sign vectors (the discrete variables of the training form)."""
        return vq_sign_table(self.codes.device)[self.codes.long()]

    def dequantize(self) -> torch.Tensor:
        """W rebuilt in float32 from the stored codes, affine map and scales."""
        n, k = self.shape
        vectors = self.signs() @ self.basis.T + self.offset
        scales = self.scales.float().repeat_interleave(self.group_size, dim=1)
        return vectors.reshape(n, k) * scales

    @property
    def nbytes(self) -> int:
        """Stored bytes: codes, scales, basis and offset."""
        return sum(t.numel() * t.element_size() for t in (self.codes, self.scales, self.basis, self.offset))


@dataclass(frozen=True, eq=False)
class LowRankQuantizedWeight:
    """W ≈ Q + L @ R with Q quantized; the first `preserved_rank` columns of L are kept before quantizing (SRR)."""

    base: ScalarQuantizedWeight | VQWeight
    left: torch.Tensor
    right: torch.Tensor
    preserved_rank: int
    method: str

    def __post_init__(self) -> None:
        n, k = self.base.shape
        rank = self.left.shape[1] if self.left.dim() == 2 else -1
        _require(self.left, "low-rank factor L", torch.float16, (n, rank))
        _require(self.right, "low-rank factor R", torch.float16, (rank, k))
        if not 0 <= self.preserved_rank <= rank:
            raise ValueError(f"preserved rank {self.preserved_rank} must lie in 0..{rank}")

    @property
    def shape(self) -> tuple[int, int]:
        """(N, K) of W."""
        return self.base.shape

    @property
    def rank(self) -> int:
        """Rank of the correction L @ R."""
        return self.left.shape[1]

    def dequantize(self) -> torch.Tensor:
        """Q + L @ R in float32."""
        return self.base.dequantize() + self.left.float() @ self.right.float()

    @property
    def nbytes(self) -> int:
        """Stored bytes: the quantized base plus both factors."""
        return self.base.nbytes + sum(t.numel() * t.element_size() for t in (self.left, self.right))


QuantizedWeight = ScalarQuantizedWeight | VQWeight | LowRankQuantizedWeight


# --- flat form: the stored tensors by name plus a JSON-ready layout (module buffers, safetensors) ------------

_FIELDS = {"scalar": ("packed", "scales", "codebook"), "vq": ("codes", "scales", "basis", "offset")}


def flatten_weight(weight: QuantizedWeight, prefix: str = "") -> tuple[dict, dict[str, torch.Tensor]]:
    """(layout, tensors): the non-tensor fields as JSON-ready data and every stored tensor by a flat name."""
    if isinstance(weight, ScalarQuantizedWeight):
        layout = {"kind": "scalar", "bits": weight.bits, "group_size": weight.group_size,
                  "shape": list(weight.shape), "method": weight.method, "zero_points": weight.zeros is not None}
    elif isinstance(weight, VQWeight):
        layout = {"kind": "vq", "group_size": weight.group_size, "shape": list(weight.shape), "method": weight.method}
    elif isinstance(weight, LowRankQuantizedWeight):
        base_layout, tensors = flatten_weight(weight.base, prefix + "base_")
        tensors[prefix + "left"] = weight.left
        tensors[prefix + "right"] = weight.right
        return {"kind": "qer", "preserved_rank": weight.preserved_rank, "method": weight.method,
                "base": base_layout}, tensors
    else:
        raise ValueError(f"not a quantized weight: {type(weight).__name__}")
    tensors = {prefix + f: getattr(weight, f) for f in _FIELDS[layout["kind"]]}
    if layout.get("zero_points"):
        tensors[prefix + "zeros"] = weight.zeros
    return layout, tensors


def unflatten_weight(layout: dict, tensors: dict[str, torch.Tensor], prefix: str = "") -> QuantizedWeight:
    """The weight container that flatten_weight gave (layout, tensors) for; ValueError when a tensor is missing."""
    kind = layout.get("kind")
    if kind == "qer":
        base = unflatten_weight(layout["base"], tensors, prefix + "base_")
        return LowRankQuantizedWeight(base, _take(tensors, prefix + "left"), _take(tensors, prefix + "right"),
                                      layout["preserved_rank"], layout["method"])
    if kind not in _FIELDS:
        raise ValueError(f"unknown stored weight kind {kind!r}")
    fields = {f: _take(tensors, prefix + f) for f in _FIELDS[kind]}
    extra = {"bits": layout["bits"]} if kind == "scalar" else {}
    if kind == "scalar" and layout.get("zero_points"):
        extra["zeros"] = _take(tensors, prefix + "zeros")
    cls = ScalarQuantizedWeight if kind == "scalar" else VQWeight
    return cls(**fields, **extra, group_size=layout["group_size"], shape=tuple(layout["shape"]), method=layout["method"])


def _take(tensors: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    if name not in tensors:
        raise ValueError(f"stored tensor {name!r} is missing")
    return tensors[name]
