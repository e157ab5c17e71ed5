"""Figure of the device models: statistics measured on simulated devices against the published formulas.

    python benchmarks/cim_models.py                # writes docs/cim_models.png

(a) programming-noise std of PCM and RRAM devices against target conductance; (b) PCM drift:
mean and spread of g(t)/g_prog over time at three targets; (c) PCM 1/f read noise of repeated
reads (std / conductance) against time. Points: measured on 20,000 simulated devices (reads);
lines: the formulas of Joshi et al. 2020 / Nandakumar et al. 2019 and the Wan et al. 2022 fit.
Below about 3 µS the RRAM spread is narrowed by the clip at 0 S; in (b) the targets 0.5 and
1.0 g_max share μ_ν = 0.049 (the fit's lower clip), so their curves coincide.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from codesign.cim import CIMConfig, ConverterConfig, Crossbar, PCMConfig, TileConfig  # noqa: E402
from codesign.cim.devices import DeviceState, PCMDevice, RRAMDevice  # noqa: E402

G_MAX, T0, T_READ = 25.0, 20.0, 250e-9
TIMES = np.logspace(0, math.log10(365.25 * 86400 * 10), 12)


def panel_programming(ax) -> None:
    fractions = np.linspace(0.05, 1.0, 12)
    gen = torch.Generator().manual_seed(0)
    for device, g_max, label, color in ((PCMDevice(), 25.0, "PCM", "C0"), (RRAMDevice(), 40.0, "RRAM", "C1")):
        measured = [float(device.program(torch.full((20_000,), f, dtype=torch.float64), gen)[0].std()) for f in fractions]
        ax.plot(fractions * g_max, measured, "o", color=color, label=f"{label}: measured")
    g = np.linspace(0, 40, 200)
    x = g[g <= 25] / 25
    ax.plot(g[g <= 25], 0.26348 + 1.9650 * x - 1.1731 * x * x, "-", color="C0", label="PCM: Nandakumar et al. 2019")
    ax.plot(g, np.maximum(1.536e-4 * g**3 - 1.167e-2 * g**2 + 0.2374 * g + 1.053, 0), "-", color="C1",
            label="RRAM: fit to Wan et al. 2022")
    ax.set(xlabel="target conductance (µS)", ylabel="programming noise σ (µS)", title="(a) programming")
    ax.legend(fontsize=7)


def panel_drift(ax) -> None:
    device = PCMDevice()
    gen = torch.Generator().manual_seed(1)
    for f, color in ((0.1, "C2"), (0.5, "C3"), (1.0, "C4")):
        a = torch.full((20_000,), f, dtype=torch.float64)
        g = device.program(a, gen)
        params = {"nu": torch.empty_like(g)}
        device.draw_params(a, gen, params)
        state = DeviceState(g, params)
        ratios = [device.conductance(state, t)[0] / g[0] for t in TIMES]
        mean = np.array([float(r[g[0] > 0].mean()) for r in ratios])
        std = np.array([float(r[g[0] > 0].std()) for r in ratios])
        ax.errorbar(TIMES, mean, yerr=std, fmt="o", ms=3, color=color, label=f"measured, g_T = {f:g} g_max")
        lg = math.log(f)
        mu, sd = min(max(-0.0155 * lg + 0.0244, 0.049), 0.1), min(max(-0.0125 * lg - 0.0059, 0.008), 0.045)
        log_t = np.log((TIMES + T0) / T0)
        ax.plot(TIMES, np.exp(-mu * log_t + 0.5 * (sd * log_t) ** 2), "-", color=color, lw=1)
    ax.set(xscale="log", xlabel="time after programming (s)", ylabel="g(t) / g_prog",
           title="(b) drift: mean ± std; lines E[((t+t0)/t0)^-ν]")
    ax.legend(fontsize=7)


def panel_read_noise(ax) -> None:
    levels = []
    config = CIMConfig(device=PCMConfig(), converter=ConverterConfig.ideal(), tile=TileConfig(rows=4, cols=50),
                       drift_compensation=False, read_noise="per_input")
    for t in TIMES:
        xb = Crossbar(4, 50, config).program(torch.ones(50, 4, dtype=torch.float64), 2).drift_to(float(t))
        x = torch.zeros(400, 4, dtype=torch.float64)
        x[:, 0] = 1.0
        y = xb(x)
        g_t = xb.conductances()[0, 0, :, 0] / G_MAX
        levels.append(float((y.std(dim=0) / g_t).mean()))
    ax.plot(TIMES, levels, "o", label="measured: std of 400 reads / g(t), 50 devices at g_max")
    ax.plot(TIMES, 0.0088 * np.sqrt(np.log((TIMES + T0 + T_READ) / (2 * T_READ))), "-",
            label="Q_s sqrt(ln((t+t0+t_read)/(2 t_read)))")
    ax.set(xscale="log", xlabel="time after programming (s)", ylabel="relative read noise",
           title="(c) 1/f read noise")
    ax.legend(fontsize=7)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "cim_models.png")
    args = ap.parse_args(argv)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    panel_programming(axes[0])
    panel_drift(axes[1])
    panel_read_noise(axes[2])
    fig.suptitle("CIM device models: simulated devices (points) vs published formulas (lines) — "
                 "python benchmarks/cim_models.py", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
