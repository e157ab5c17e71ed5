"""Words of the RTL's parameters and memory files: fixed-point type parameters, packed words, $readmemh text."""

from __future__ import annotations

import numpy as np

from codesign.fixed import FixedType

__all__ = ["type_parameters", "hex_words", "pack_word"]


def type_parameters(prefix: str, t: FixedType, modes: bool = True) -> dict[str, int]:
    """W_<prefix>, F_<prefix> (and Q_, O_ with ``modes``): a fixed-point type as the RTL modules take it."""
    out = {f"W_{prefix}": t.width, f"F_{prefix}": t.frac}
    if modes:
        out[f"Q_{prefix}"] = int(t.qmode)
        out[f"O_{prefix}"] = int(t.omode)
    return out


def hex_words(words: list[int], bits: int) -> str:
    """$readmemh text: one word per line, in hex digits enough for ``bits``."""
    digits = max(1, (bits + 3) // 4)
    mask = (1 << bits) - 1
    return "".join(f"{w & mask:0{digits}x}\n" for w in words)


def pack_word(values: np.ndarray, bits: int) -> int:
    """Values (raw, any sign) packed into one word, element 0 in the low bits."""
    word = 0
    for k, v in enumerate(values):
        word |= (int(v) & ((1 << bits) - 1)) << (k * bits)
    return word
