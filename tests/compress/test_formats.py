"""Packing formats: exact byte layouts, round trips, bad input."""

import pytest
import torch

from codesign.compress.formats import (
    PackingFormat,
    format_for_bits,
    pack_codes,
    packed_row_bytes,
    unpack_codes,
)


@pytest.mark.parametrize("bits", range(1, 9))
def test_round_trip_every_width(bits):
    gen = torch.Generator().manual_seed(bits)
    codes = torch.randint(0, 1 << bits, (5, 64), generator=gen, dtype=torch.uint8)
    packed = pack_codes(codes, bits)
    assert packed.dtype == torch.uint8
    assert packed.shape == (5, packed_row_bytes(bits, 64))
    assert torch.equal(unpack_codes(packed, bits, 64), codes)


def test_formats_by_width():
    assert [format_for_bits(b) for b in range(1, 9)] == [
        PackingFormat.PACKED_LSB, PackingFormat.PACKED_LSB, PackingFormat.BITPLANE_2_1, PackingFormat.PACKED_LSB,
        PackingFormat.BYTE, PackingFormat.BYTE, PackingFormat.BYTE, PackingFormat.BYTE,
    ]
    assert [packed_row_bytes(b, 64) for b in (1, 2, 3, 4, 8)] == [8, 16, 24, 32, 64]


def test_lsb_first_byte_layout():
    two_bit = torch.tensor([[1, 2, 3, 0, 0, 0, 0, 3]], dtype=torch.uint8)
    # code i of a byte sits at bits [2i, 2i+2): 1 | 2<<2 | 3<<4 = 0x39, then 3<<6 = 0xC0
    assert pack_codes(two_bit, 2).tolist() == [[0x39, 0xC0]]
    one_bit = torch.tensor([[1, 0, 0, 0, 0, 0, 0, 1]], dtype=torch.uint8)
    assert pack_codes(one_bit, 1).tolist() == [[0x81]]
    four_bit = torch.tensor([[0xA, 0x5] * 4], dtype=torch.uint8)
    assert pack_codes(four_bit, 4).tolist() == [[0x5A] * 4]


def test_three_bit_planes():
    codes = torch.tensor([[7, 0, 4, 3, 0, 0, 0, 5]], dtype=torch.uint8)
    packed = pack_codes(codes, 3)
    # low-2-bit plane: [3,0,0,3] -> 0xC3, [0,0,0,1] -> 0x40; high-bit plane: bits 0, 2, 7 -> 0x85
    assert packed.tolist() == [[0xC3, 0x40, 0x85]]


@pytest.mark.parametrize("bits", [0, 9, -1, 2.0, True])
def test_bits_outside_range(bits):
    with pytest.raises(ValueError, match="bits must be an integer in 1..8"):
        pack_codes(torch.zeros(1, 8, dtype=torch.uint8), bits)


def test_bad_codes():
    with pytest.raises(ValueError, match="does not fit in 2 bits"):
        pack_codes(torch.full((1, 8), 4, dtype=torch.uint8), 2)
    with pytest.raises(ValueError, match="uint8"):
        pack_codes(torch.zeros(1, 8, dtype=torch.int32), 2)
    with pytest.raises(ValueError, match="multiple of 8"):
        pack_codes(torch.zeros(1, 12, dtype=torch.uint8), 2)
    with pytest.raises(ValueError, match=r"uint8 \[N, 16\]"):
        unpack_codes(torch.zeros(1, 8, dtype=torch.uint8), 2, 64)
