"""Storage formats of quantized weights, by name, with their pack/unpack functions.

Every format stores integer codes of a weight matrix W[N, K] (rows = output features, the
group axis K = input features) row by row in uint8. docs/compress_formats.md is the prose spec.
"""

from __future__ import annotations

from enum import Enum

import torch

__all__ = [
    "PackingFormat",
    "format_for_bits",
    "packed_row_bytes",
    "pack_codes",
    "unpack_codes",
    "check_bits",
    "check_group_size",
]


class PackingFormat(str, Enum):
    """How the b-bit codes of one row are laid out in bytes (see docs/compress_formats.md)."""

    #: 8/b codes per byte (b in 1, 2, 4), code i of a byte at bits [b*i, b*i+b): LSB first.
    PACKED_LSB = "packed_lsb"
    #: 3-bit codes as two planes: the low 2 bits in PACKED_LSB (K/4 bytes), then the high bit (K/8 bytes).
    BITPLANE_2_1 = "bitplane_2_1"
    #: one code per byte (8-bit codes; also 5..7 bits, stored unpacked).
    BYTE = "byte"
    #: one 8-bit code per vector of 4 weights (2-bit vector quantization).
    VQ4_BYTE = "vq4_byte"


def check_bits(bits: int) -> int:
    """Return bits if it is an int in 1..8, else raise ValueError naming it."""
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 8:
        raise ValueError(f"bits must be an integer in 1..8, got {bits!r}")
    return bits


def check_group_size(group_size: int, row_length: int) -> int:
    """Return group_size if it is a positive multiple of 8 that divides row_length, else raise."""
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size <= 0:
        raise ValueError(f"group_size must be a positive integer, got {group_size!r}")
    if group_size % 8:
        raise ValueError(f"group_size must be a multiple of 8 (a packed byte holds up to 8 codes), got {group_size}")
    if row_length % group_size:
        raise ValueError(f"group_size {group_size} does not divide the row length {row_length}")
    return group_size


def format_for_bits(bits: int) -> PackingFormat:
    """The packing format used for scalar codes of the given width."""
    check_bits(bits)
    if bits in (1, 2, 4):
        return PackingFormat.PACKED_LSB
    if bits == 3:
        return PackingFormat.BITPLANE_2_1
    return PackingFormat.BYTE


def packed_row_bytes(bits: int, row_length: int) -> int:
    """Bytes one packed row of row_length codes occupies."""
    fmt = format_for_bits(bits)
    if row_length % 8:
        raise ValueError(f"row length {row_length} must be a multiple of 8 to pack codes")
    if fmt is PackingFormat.PACKED_LSB:
        return row_length * bits // 8
    if fmt is PackingFormat.BITPLANE_2_1:
        return row_length // 4 + row_length // 8
    return row_length


def _pack_lsb(codes: torch.Tensor, bits: int) -> torch.Tensor:
    per_byte = 8 // bits
    rows, k = codes.shape
    grouped = codes.to(torch.int32).view(rows, k // per_byte, per_byte)
    shifts = torch.arange(per_byte, dtype=torch.int32, device=codes.device) * bits
    return (grouped << shifts).sum(dim=-1).to(torch.uint8)


def _unpack_lsb(packed: torch.Tensor, bits: int, row_length: int) -> torch.Tensor:
    per_byte = 8 // bits
    shifts = torch.arange(per_byte, dtype=torch.int32, device=packed.device) * bits
    codes = (packed.to(torch.int32)[..., None] >> shifts) & ((1 << bits) - 1)
    return codes.reshape(packed.shape[0], row_length).to(torch.uint8)


def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack uint8 codes [N, K] (each < 2**bits) into the format of format_for_bits(bits)."""
    check_bits(bits)
    if codes.dtype != torch.uint8 or codes.dim() != 2:
        raise ValueError(f"codes must be a 2-D uint8 tensor, got {codes.dim()}-D {codes.dtype}")
    if codes.shape[1] % 8:
        raise ValueError(f"row length {codes.shape[1]} must be a multiple of 8 to pack codes")
    if codes.numel() and int(codes.max()) >= (1 << bits):
        raise ValueError(f"a code {int(codes.max())} does not fit in {bits} bits")
    codes = codes.contiguous()
    fmt = format_for_bits(bits)
    if fmt is PackingFormat.PACKED_LSB:
        return _pack_lsb(codes, bits)
    if fmt is PackingFormat.BITPLANE_2_1:
        low = _pack_lsb(codes & 3, 2)
        high = _pack_lsb(codes >> 2, 1)
        return torch.cat([low, high], dim=1).contiguous()
    return codes.clone()


def unpack_codes(packed: torch.Tensor, bits: int, row_length: int) -> torch.Tensor:
    """Inverse of pack_codes: uint8 codes [N, row_length]."""
    check_bits(bits)
    expected = packed_row_bytes(bits, row_length)
    if packed.dtype != torch.uint8 or packed.dim() != 2 or packed.shape[1] != expected:
        raise ValueError(
            f"packed codes must be uint8 [N, {expected}] for {bits}-bit rows of {row_length}, "
            f"got {packed.dtype} {tuple(packed.shape)}"
        )
    fmt = format_for_bits(bits)
    if fmt is PackingFormat.PACKED_LSB:
        return _unpack_lsb(packed, bits, row_length)
    if fmt is PackingFormat.BITPLANE_2_1:
        low = _unpack_lsb(packed[:, : row_length // 4].contiguous(), 2, row_length)
        high = _unpack_lsb(packed[:, row_length // 4 :].contiguous(), 1, row_length)
        return low | (high << 2)
    return packed.clone()
