"""Energy ESTIMATE tables: CIM chip vs GPU for the built-in models, a sensitivity sweep, and a
trained digits MLP whose input and weight statistics are measured on real data.

    python benchmarks/cim_energy.py                # writes docs/cim_energy.md and prints it

The same tables come from the command line, e.g. ``codesign cim energy cnn_mnist --batch 256``.
Needs scikit-learn for the trained-model section (pip install scikit-learn).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from codesign.cim import CIMConfig
from codesign.cim.energy import (
    EnergyConstants,
    energy_table,
    estimate_energy,
    hermes_crosscheck,
    sensitivity,
    sensitivity_table,
)
from codesign.cim.workloads import BUILTIN_MODELS, build_model, layer_workloads

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cim_speed import digits_split, train_mlp  # noqa: E402  (the same trained MLP as the speed benchmark)


def _block(text: str) -> list[str]:
    return ["```", text, "```"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "cim_energy.md")
    args = ap.parse_args(argv)
    config = CIMConfig(device="pcm")
    out = [
        "# CIM inference energy: an ESTIMATE",
        "",
        "Made by `python benchmarks/cim_energy.py` (model and constants: `codesign/cim/energy.py`, "
        "docs/cim.md \"Energy\"). PCM chip, 8-bit DAC and ADC, 256x256 tiles; GPU: NVIDIA A100 "
        "energy per FLOP at TDP and peak, HBM2 energy per byte, 16-bit values. Per inference of one sample. "
        "Unless measured, mean |x| / max|x| = 0.25 and mean |w| / tile max = 0.2 are assumed.",
        "",
    ]
    model_j, measured_j = hermes_crosscheck(config)
    out += [
        f"Cross-check: one full 256x256 8-bit MVM costs {model_j * 1e9:.2f} nJ in this model; IBM's 14-nm PCM chip "
        f"measured {measured_j * 1e9:.1f} nJ (9.76 TOPS/W, Le Gallo et al., Nat. Electron. 2023). The model counts "
        "the analog and peripheral operations only (no clock tree, leakage, on-chip network), so its CIM "
        f"figures are optimistic by about {measured_j / model_j:.0f}x against that chip.",
        "",
    ]
    for batch in (1, 256):
        out += [f"## Built-in models, GPU batch {batch}", ""]
        for name in ("mlp_digits", "cnn_digits", "mlp_mnist", "cnn_mnist"):
            model, shape = build_model(name)
            rows = estimate_energy(layer_workloads(model.eval(), torch.zeros(1, *shape)), config, batch=batch)
            out += [f"`{name}`: {BUILTIN_MODELS[name]}", "", *_block(energy_table(rows)), ""]
    model, shape = build_model("cnn_mnist")
    loads = layer_workloads(model.eval(), torch.zeros(1, *shape))
    out += ["## Sensitivity (cnn_mnist, GPU batch 1)", "",
            "Each constant at the low and the high end of its range (codesign/cim/energy.py gives each range's "
            "source), the others nominal; widest swing first.", "",
            *_block(sensitivity_table(sensitivity(loads, config))), ""]
    x_train, y_train, x_test, _ = digits_split()
    trained = train_mlp(x_train, y_train)
    measured = layer_workloads(trained, x_test, measure_activity=True)
    rows = estimate_energy(measured, config, batch=1)
    stats = ", ".join(f"layer {w.name}: mean |x|/max {w.mean_abs_input:.2f}, mean |w|/tile max {w.mean_abs_weight:.2f}"
                      for w in measured)
    out += ["## Trained digits MLP, activity measured on the test images", "",
            f"MLP 64-128-10 trained on scikit-learn digits (as in docs/cim_speed.md); {stats}.", "",
            *_block(energy_table(rows)), ""]
    constants = EnergyConstants()
    out += ["## Constants", "", "| constant | value | unit | range | source |", "|---|---|---|---|---|"]
    for name in constants.names():
        c = getattr(constants, name)
        source = c.source.replace("|", "\\|")  # keep the markdown table intact
        out.append(f"| `{name}` | {c.value:g} | {c.unit} | {c.low:g} .. {c.high:g} | {source} |")
    text = "\n".join(out) + "\n"
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
