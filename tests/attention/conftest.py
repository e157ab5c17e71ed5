"""Kernel tests run Triton's interpreter on CPU tensors: the switch must be set before any kernel is defined."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
