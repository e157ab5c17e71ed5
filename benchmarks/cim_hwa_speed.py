"""Cost of a hardware-aware (HWA) training step against a plain one: the MNIST MLP at batch 64.

    nice -n 19 python benchmarks/cim_hwa_speed.py [--blocks 15 --steps 10 --json out.json] [--breakdown]

Same process, one torch thread. A plain step: float forward, cross-entropy, backward, Adam. An HWA
step: a new simulated chip from the current weights on the network's chip twin (codesign.cim.layers.chip_twin),
either every device programmed (codesign.cim.program_model) and aged to t (drift and compensation), or
every weight drawn from its realized distribution at t (codesign.cim.sample_model, codesign/cim/sampler.py);
forward through the chip (DAC/ADC, read noise), backward straight-through, Adam. Plain and HWA steps run in
alternating blocks of back-to-back steps; the ratio is the median over blocks of (HWA block time /
the plain block before it), so a change of the machine's load between blocks cancels. Both wall time
and the thread's CPU time are reported: on a machine shared with other jobs the CPU time is the
steadier of the two (it does not count the time the thread waits for a core). --breakdown also gives the
thread CPU time of each phase (drawing the chips, forward, backward, Adam) of the drawn 8-bit chip's step and of
the plain step, in the same alternating blocks.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from codesign.cim import CIMConfig, ConverterConfig, drift_model, program_model, sample_model
from codesign.cim.dwp.models import build_model
from codesign.cim.layers import chip_twin

CHIPS = {  # name: (chip config, chips drawn weight by weight)
    "pcm, ideal converters, devices programmed": (CIMConfig(device="pcm", converter=ConverterConfig.ideal()), False),
    "pcm, 8-bit DAC/ADC, devices programmed": (CIMConfig(), False),
    "pcm, ideal converters, weights drawn": (CIMConfig(device="pcm", converter=ConverterConfig.ideal()), True),
    "pcm, 8-bit DAC/ADC, weights drawn": (CIMConfig(), True),
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
    parser.add_argument("--breakdown", action="store_true", help="also time each phase of a step")
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

    def hwa_step(twin: torch.nn.Module, drawn: bool):
        """One hardware-aware training step on `twin`, a fresh chip each call (bound here, not to a loop variable)."""
        def hwa() -> None:
            if drawn:  # a new chip from the current weights, every step: its weights drawn from their distribution
                sample_model(twin, next(counter), args.t)
            else:  # or every device programmed, then aged
                program_model(twin, next(counter))
                if args.t:
                    drift_model(twin, args.t)
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(twin(x), y).backward()
            opt.step()
        return hwa

    results = {}
    for name, (config, drawn) in CHIPS.items():
        hwa = hwa_step(chip_twin(model, config), drawn)
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
    if args.breakdown:
        results["breakdown_ms"] = breakdown(model, opt, x, y, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "results": results}, f, indent=1)
    return 0


def breakdown(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, args) -> dict:  # noqa: ANN001
    """Thread CPU ms per step of each phase: the drawn 8-bit chip's HWA step and the plain step, alternating blocks."""
    twin = chip_twin(model, CIMConfig())
    spent: dict[str, float] = {}
    counter = iter(range(1 << 40))

    def phases(prefix: str, net: torch.nn.Module, draw: bool) -> None:
        t = time.thread_time()
        marks = []
        if draw:
            sample_model(twin, next(counter), args.t)
            marks.append(("draw chips", time.thread_time()))
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(x), y)
        marks.append(("forward", time.thread_time()))
        loss.backward()
        marks.append(("backward", time.thread_time()))
        opt.step()
        marks.append(("Adam", time.thread_time()))
        for name, mark in marks:
            spent[f"{prefix} {name}"] = spent.get(f"{prefix} {name}", 0.0) + mark - t
            t = mark

    for _ in range(3):
        phases("HWA", twin, True)
        phases("plain", model, False)
    spent.clear()
    for _ in range(args.blocks):
        for _ in range(args.steps):
            phases("plain", model, False)
        for _ in range(args.steps):
            phases("HWA", twin, True)
    per_step = {k: 1e3 * v / (args.blocks * args.steps) for k, v in spent.items()}
    print("phases (thread CPU ms per step, pcm 8-bit DAC/ADC, weights drawn): "
          + ", ".join(f"{k} {v:.2f}" for k, v in per_step.items()))
    return per_step


if __name__ == "__main__":
    sys.exit(main())
