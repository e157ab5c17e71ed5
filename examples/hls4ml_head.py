"""The online KAN head behind a frozen hls4ml network, end to end (docs/integration.md).

A 3-16-2 torch MLP is trained offline to give two features of x, sin(3 x0) and x1 x2, then frozen; a 2-4-1
online KAN behind it learns y = 0.5 sin(3 x0) + 0.3 x1 x2 from the stream. hls4ml converts, compiles and
runs the whole model (its C-simulation); check_stream compares it with the Python reference.

    python -m codesign.examples.hls4ml_head [--samples 2000] [--backend Vitis] [--out hls4ml_head_prj]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

from codesign.fixed import FixedType
from codesign.kan.spec import KANSpec

SPEC = KANSpec(widths=(2, 4, 1), grid_size=8, spline_order=3, lut_bits=6)
NETWORK_PRECISION = "ap_fixed<20,6>"  # hls4ml's default precision for the network (it infers the output types)


def features(x: torch.Tensor) -> torch.Tensor:
    """What the frozen network is trained to compute: sin(3 x0) and x1 x2."""
    return torch.stack([torch.sin(3 * x[:, 0]), x[:, 1] * x[:, 2]], dim=1)


def trained_network(steps: int = 300) -> torch.nn.Module:
    """The 3-16-2 MLP fitted offline to features() (seeded: the same network every run)."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x = torch.rand(128, 3, generator=gen) * 2 - 1
        loss = ((net(x) - features(x)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net


def stream(n: int, act_t: FixedType = SPEC.act_t, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Inputs x in [-1, 1)^3 and targets 0.5 sin(3 x0) + 0.3 x1 x2, as act_t values."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, size=(n, 3))
    y = 0.5 * np.sin(3 * x[:, :1]) + 0.3 * x[:, 1:2] * x[:, 2:3]
    return x, act_t.to_float(act_t.quantize(y))


def main(argv: list[str] | None = None) -> int:
    """Build, compile and check the example; 0 when bit-exact, 1 when not, 2 on bad input."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000, help="stream length")
    parser.add_argument("--backend", default="Vitis", help="hls4ml backend (Vitis or Vivado)")
    parser.add_argument("--out", type=Path, default=Path("hls4ml_head_prj"), help="the hls4ml project folder (must not exist)")
    args = parser.parse_args(argv)
    try:
        if args.samples < 1:
            raise ValueError(f"--samples must be at least 1, got {args.samples}")
        if args.out.exists():
            raise ValueError(f"{args.out} exists: give a new folder with --out")
        from codesign.fpga import hls4ml_head  # noqa: PLC0415 - its import needs hls4ml with the extension API

        hls4ml_head.register_extension(args.backend)  # refuses an unsupported backend before the training
        model = hls4ml_head.attach_online_head(trained_network(), SPEC)
        hls_model = hls4ml_head.to_hls4ml(model, (3,), args.out, backend=args.backend, default_precision=NETWORK_PRECISION)
        hls_model.compile()
        x, y = stream(args.samples)
        check = hls4ml_head.check_stream(hls_model, x, y)
    except ValueError as exc:
        print(f"hls4ml_head: error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.backend}: {check.samples} samples, {check.prediction_mismatches} prediction mismatches, "
          f"{check.state_mismatches} of {check.state_values} coefficients differ, project in {args.out}")
    return 0 if check.bit_exact else 1


if __name__ == "__main__":
    sys.exit(main())
