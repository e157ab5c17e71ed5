"""Render a profile: terminal table, JSON and a PNG of signal ranges against type limits."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from codesign.kan.profiler import Profile, TypeProposal

__all__ = ["profile_table", "write_profile_json", "plot_profile"]


def profile_table(profile: Profile, proposals: list[TypeProposal], proposed_mse: float, top: int = 12) -> str:
    """The per-type summary, the most saturating signals, and the proposed types."""
    spec = profile.spec
    lines = [f"running mse {profile.mse:.4g}, {profile.saturations} overflows over all casts", ""]
    lines.append(f"{'type':8s} {'declared':36s} {'observed min':>13s} {'observed max':>13s} {'overflows':>9s}  first overflow")
    for field, d in sorted(profile.by_type().items()):
        declared = str(getattr(spec, field)) if field != "grid_range" else f"grid {getattr(spec, field)}"
        first = "—" if d["first"] is None else f"{d['first'][0]} at sample {d['first'][1]}"
        label = "clamps" if field == "grid_range" else ""
        lines.append(f"{field:8s} {declared:36s} {d['min']:13.5g} {d['max']:13.5g} {d['saturations']:9d}  {first} {label}".rstrip())
    hot = sorted((s for s in profile.signals if s.saturations), key=lambda s: (s.first_saturation, s.name))[:top]
    if hot:
        lines += ["", "signals that overflow or clamp, earliest first:"]
        lines += [f"  {s.name:32s} {s.type_field:10s} {s.saturations:8d} times, first at sample {s.first_saturation}" for s in hot]
    lines += ["", f"proposed types (never overflow on this stream; running mse {proposed_mse:.4g}):",
              f"  {'type':8s} {'declared':36s} {'proposed':36s} one integer bit less: overflows, mse"]
    for p in proposals:
        cost = f"not allowed: {p.note}" if p.note else f"{p.narrower_saturations}, {p.narrower_mse:.4g}"
        lines.append(f"  {p.field:8s} {p.current:36s} {p.proposed:36s} {cost}")
    return "\n".join(lines)


def write_profile_json(path: Path, profile: Profile, proposed: Profile, proposals: list[TypeProposal]) -> None:
    """Everything a tool needs: the declared profile, the proposed spec and its profile, the one-bit costs."""
    data = {
        "profile": profile.to_dict(),
        "proposed": proposed.to_dict(),
        "one_bit_narrower": [p.__dict__ for p in proposals],
    }
    path.write_text(json.dumps(data, indent=1))


def plot_profile(path: Path, profile: Profile) -> None:
    """Each signal's observed range as a bar against its type's representable range."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spec = profile.spec
    sigs = [s for s in profile.signals if s.count and s.type_field != "grid_range"]
    fig, ax = plt.subplots(figsize=(10, max(3.0, 0.16 * len(sigs) + 1.5)), constrained_layout=True)
    y = np.arange(len(sigs))
    for k, s in enumerate(sigs):
        t = getattr(spec, s.type_field)
        ax.plot([t.min_value, t.max_value], [k, k], color="0.85", lw=5, solid_capstyle="butt")
        ax.plot([s.min, s.max], [k, k], color="tab:red" if s.saturations else "tab:blue", lw=2.5)
    ax.set_yticks(y, [f"{s.name} ({s.type_field})" for s in sigs], fontsize=6)
    ax.set_xscale("symlog", linthresh=1e-3)
    ax.invert_yaxis()
    ax.set_xlabel("value (grey: representable range of the type; blue: observed; red: overflowed)")
    ax.set_title("signal ranges against their types")
    fig.savefig(path, dpi=110)
    plt.close(fig)
