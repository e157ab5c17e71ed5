"""Suite-wide set-up: Triton kernels run in the interpreter on CPU tensors.

Triton decides interpreter-or-compiler when a kernel is defined, so the switch is set here,
before any test module imports codesign.kernels. CODESIGN_TEST_GPU=1 runs them compiled on a GPU.
"""

import os

if os.environ.get("CODESIGN_TEST_GPU") != "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")
