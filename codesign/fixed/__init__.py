"""Fixed-point arithmetic with the exact semantics of ap_fixed / ap_ufixed."""

from .kernel import MAX_WIDTH, fixed_cast, from_float, to_float
from .modes import OMode, QMode
from .ops import (
    FixedArray,
    add,
    add_type,
    cast,
    mul,
    mul_type,
    neg,
    neg_type,
    shift_left,
    shift_right,
    sub,
    sub_type,
)
from .types import FixedType

__all__ = [
    "MAX_WIDTH",
    "QMode",
    "OMode",
    "FixedType",
    "FixedArray",
    "fixed_cast",
    "from_float",
    "to_float",
    "add",
    "sub",
    "mul",
    "neg",
    "shift_left",
    "shift_right",
    "cast",
    "add_type",
    "sub_type",
    "mul_type",
    "neg_type",
]
