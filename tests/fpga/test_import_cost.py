"""The fixed-point build path (CLI, FPGA backend, bit-exact learners) starts without torch (about 2 s of import)."""

from __future__ import annotations

import subprocess
import sys


def test_the_build_path_does_not_import_torch() -> None:
    code = ("import sys, codesign.cli, codesign.fpga.build, codesign.kan.fixed_learner, codesign.kan.mlp_learner; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", f"the build path imports {out}"
