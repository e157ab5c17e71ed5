"""Cost of a hardware-aware (HWA) training step against a plain one: the MNIST MLP at batch 64.

    nice -n 19 python benchmarks/cim_hwa_speed.py [--blocks 15 --steps 10 --json out.json]

Same process, one torch thread. A plain step: float forward, cross-entropy, backward, Adam. An HWA
step: program a new simulated chip from the current weights (codesign.cim.program_model on the
network's chip twin, codesign.cim.hwa.chip_twin), read it at t (drift and compensation), forward
through the chip (DAC/ADC, read noise), backward straight-through, Adam. Plain and HWA steps run in
alternating blocks of back-to-back steps; the ratio is the median over blocks of (HWA block time /
the plain block before it), so a change of the machine's load between blocks cancels. Both wall time
and the thread's CPU time are reported: on a machine shared with other jobs the CPU time is the
steadier of the two (it does not count the time the thread waits for a core).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from codesign.cim import CIMConfig, ConverterConfig, drift_model, program_model
from codesign.cim.dwp.models import build_model
from codesign.cim.hwa import chip_twin

CHIPS = {
    "pcm, ideal converters": CIMConfig(device="pcm", converter=ConverterConfig.ideal()),
    "pcm, 8-bit DAC/ADC": CIMConfig(),
}


def _block(step, steps: int) -> tuple[float, float]:
    """Wall and thread CPU seconds per step over `steps` back-to-back steps."""
    start, cpu = time.perf_counter(), time.thread_time()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps, (time.thread_time() - cpu) / steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--steps", type=int, default=10, help="steps per block")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--t", type=float, default=86400.0, help="read time of the training chips, s (default 1 day)")
    parser.add_argument("--json", help="write the per-block times here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = build_model("mlp", (1, 28, 28), 10)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.rand(args.batch, 1, 28, 28), torch.randint(0, 10, (args.batch,))
    counter = iter(range(1 << 40))

    def plain() -> None:
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    def hwa_step(twin: torch.nn.Module):
        """One hardware-aware training step on `twin`, a fresh chip each call (bound here, not to a loop variable)."""
        def hwa() -> None:
            program_model(twin, next(counter))  # a new chip from the current weights, every step
            if args.t:
                drift_model(twin, args.t)
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(twin(x), y).backward()
            opt.step()
        return hwa

    results = {}
    for name, config in CHIPS.items():
        hwa = hwa_step(chip_twin(model, config))
        for step in (plain, hwa):  # warm-up
            _block(step, 3)
        plain_times, hwa_times = [], []
        for _ in range(args.blocks):
            plain_times.append(_block(plain, args.steps))
            hwa_times.append(_block(hwa, args.steps))
        results[name] = {}
        for i, clock in enumerate(("wall", "cpu")):
            p_s, h_s = [b[i] for b in plain_times], [b[i] for b in hwa_times]
            ratio = statistics.median(h / p for h, p in zip(h_s, p_s))
            results[name][clock] = {"plain_s": p_s, "hwa_s": h_s, "ratio_median": ratio}
            print(f"{name} ({clock} time): plain step {1e3 * statistics.median(p_s):.2f} ms, HWA step "
                  f"{1e3 * statistics.median(h_s):.2f} ms, HWA / plain {ratio:.2f}x (median of {args.blocks} "
                  f"blocks, batch {args.batch}, t = {args.t:g} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
