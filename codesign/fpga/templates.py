"""Template files with named slots (``${name}``) under ``hls/templates/`` and ``rtl/templates/``, and C++ literal helpers.

Templates ship as package data of ``codesign.hls`` (the HLS project) and ``codesign.rtl`` (the
generated RTL tops); they are read through ``importlib.resources`` so an editable install and
a wheel find them the same way. A template is filled with :class:`string.Template`: every slot
must be given (a missing one is an error, not an empty string), and a literal ``$`` is written ``$$``.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable
from importlib.resources import files
from importlib.resources.abc import Traversable

import numpy as np

__all__ = [
    "render", "render_rtl", "render_tops", "PIPELINE_ONE_PER_CLOCK",
    "library_headers", "fixed_literal", "array_initializer", "bits_word_type", "bits_initializer", "join_blocks",
]


def _template_file(package: str, what: str, name: str) -> Traversable:
    node = files(package).joinpath("templates")
    for part in name.split("/"):
        node = node.joinpath(part)
    if not node.is_file():
        raise FileNotFoundError(f"{what} template {name} is missing from the installed package")
    return node


def _fill(package: str, what: str, name: str, slots: dict[str, object]) -> str:
    text = _template_file(package, what, name).read_text()
    try:
        return string.Template(text).substitute({k: str(v) for k, v in slots.items()})
    except KeyError as exc:
        raise KeyError(f"template {name} has a slot {exc} that was not given") from None


def render(name: str, **slots: object) -> str:
    """The template ``hls/templates/<name>`` with every ``${slot}`` filled."""
    return _fill("codesign.hls", "HLS", name, slots)


# The top's pipeline pragma when nothing sets a schedule.
PIPELINE_ONE_PER_CLOCK = "  // Target: one sample per clock.\n#pragma HLS PIPELINE II=1"


def render_tops(learner: str, pipeline_pragmas: str) -> str:
    """The plain and the counted top of a learner around its ``<learner>_sample`` (``hls/templates/common/tops.cpp``)."""
    return render("common/tops.cpp", learner=learner, pipeline_pragmas=pipeline_pragmas).rstrip("\n")


def render_rtl(name: str, **slots: object) -> str:
    """The template ``rtl/templates/<name>`` with every ``${slot}`` filled."""
    return _fill("codesign.rtl", "RTL", name, slots)


def library_headers() -> dict[str, str]:
    """The header-only HLS library (``hls/codesign/*.h``): file name -> text."""
    lib = files("codesign.hls").joinpath("codesign")
    return {f.name: f.read_text() for f in sorted(lib.iterdir(), key=lambda f: f.name) if f.name.endswith(".h")}


def fixed_literal(raw: int, frac: int) -> str:
    """A C++ double literal equal to ``raw * 2^-frac`` exactly (ap_fixed(double) is then exact)."""
    value = float(raw) * 2.0**-frac
    if int(round(value * 2.0**frac)) != int(raw):  # a raw value above 2^53 would not survive a double
        raise ValueError(f"raw value {raw} with {frac} fractional bits is not exact as a double")
    text = repr(value)
    return text if ("." in text or "e" in text or "inf" in text) else text + ".0"


def array_initializer(raw: np.ndarray, frac: int, indent: str = "    ", per_line: int = 8) -> str:
    """A nested brace initializer of an N-d array of raw fixed-point values, as exact double literals."""
    return _nested_initializer(np.asarray(raw), lambda v: fixed_literal(v, frac), indent, per_line)


def bits_word_type(width: int) -> str:
    """The narrowest unsigned C integer type that holds a ``width``-bit pattern."""
    for bits in (8, 16, 32, 64):
        if width <= bits:
            return f"uint{bits}_t"
    raise ValueError(f"a {width}-bit pattern does not fit a 64-bit word")


def bits_initializer(raw: np.ndarray, width: int, indent: str = "    ", per_line: int = 16) -> str:
    """A nested brace initializer of the ``width``-bit patterns (two's complement) of raw values, as unsigned literals."""
    mask = (1 << width) - 1
    return _nested_initializer(np.asarray(raw), lambda v: f"{v & mask}u", indent, per_line)


def _nested_initializer(raw: np.ndarray, item: Callable[[int], str], indent: str, per_line: int) -> str:
    """Braces nested like the array, ``item`` spelling each value."""

    def block(a: np.ndarray, depth: int) -> str:
        pad = indent * (depth + 1)
        if a.ndim == 1:
            items = [item(int(v)) for v in a]
            lines = [", ".join(items[k : k + per_line]) for k in range(0, len(items), per_line)]
            return "{\n" + ",\n".join(pad + line for line in lines) + "\n" + indent * depth + "}"
        inner = [block(sub, depth + 1) for sub in a]
        return "{\n" + ",\n".join(pad + s for s in inner) + "\n" + indent * depth + "}"

    return block(raw, 0)


def join_blocks(blocks: Iterable[str], separator: str = "\n") -> str:
    """Rendered snippets joined into one slot value."""
    return separator.join(b.rstrip("\n") for b in blocks)

