"""Float-vs-fixed error of a learner started with --init, against the basis ROM's resolution (lut_bits).

A 2-2-1 float KAN (G = 4, k = 1) is fitted offline to y = sin(3 x0) x1 / 2 (200 Adam steps, the model of
tests/integration/test_init.py), saved, loaded and quantized by codesign.kan.initial_state for each
lut_bits, and its outputs compared with the fixed-point learner's before any update over the task inputs
of a 10,000-sample function_tracking stream. Rewrites the marked section of docs/integration.md.

    python benchmarks/init_error.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import torch
from doc_sections import write_sections

from codesign.fpga.stimulus import make_stimulus
from codesign.kan.float_model import KAN
from codesign.kan.initial_state import float_vs_fixed_error, load_initial_state
from codesign.kan.spec import KANSpec

DOC = Path(__file__).resolve().parent.parent / "docs" / "integration.md"


def fitted(spec: KANSpec, steps: int = 200) -> KAN:
    """The float KAN fitted offline (seeded: the same model every run)."""
    model = KAN(spec.widths, grid_size=spec.grid_size, spline_order=spec.spline_order, grid_range=spec.grid_range, seed=0)
    gen = torch.Generator().manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(steps):
        x = torch.rand(64, 2, generator=gen) * 2 - 1
        loss = ((model(x)[:, 0] - torch.sin(3 * x[:, 0]) * x[:, 1] / 2) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def main() -> int:
    rows = ["| lut_bits | samples | RMS error | largest error | float output RMS | saturated |", "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for bits in (3, 6, 8, 10):
            spec = KANSpec(widths=(2, 2, 1), grid_size=4, spline_order=1, lut_bits=bits)
            path = Path(tmp) / f"model_{bits}.pt"
            torch.save(fitted(spec).state_dict(), path)
            init = load_initial_state(path, spec)
            stimulus = make_stimulus(spec, n_samples=10_000, seed=0)
            e = float_vs_fixed_error(spec, init, stimulus.x[: stimulus.task_samples])
            rows.append(f"| {bits} | {e['samples']:,} | {e['rms']:.3g} | {e['max_abs']:.3g} | {e['float_rms']:.3g} | {init.saturated} |")
            print(rows[-1], flush=True)
    body = "Measured by `python benchmarks/init_error.py` (act_t and coef_t ap_fixed<16,6>):\n\n" + "\n".join(rows) + "\n"
    write_sections(DOC, {"init-error": body}, "init_error")
    return 0


if __name__ == "__main__":
    sys.exit(main())
