"""Fixed-point profiler: every named signal's range and overflows over a stream, and the narrowest types.

The bit-exact reference runs with its instrumentation on (``run_raw(..., stats=...)``); each
signal is the exact value just before its cast to a spec type, so a saturation is named by the
signal and the sample where it first happened.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from codesign.fixed import FixedType
from codesign.kan.kinds import kind_of
from codesign.kan.learner_base import STAT_COLUMNS, OnlineLearner
from codesign.kan.run import make_learner
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.tasks import TaskStream, online_metrics

__all__ = ["SignalStats", "Profile", "profile_stream", "TypeProposal", "propose_types", "signal_type", "cast_overflows"]

# Which spec type each signal kind is cast to ("grid_in" is the grid clamp, not a cast).
_KIND_TYPE = {
    "out": "act_t",
    "err": "err_t",
    "grad_in": "grad_t",
    "dphi": "dphi_t",
    "coef_update": "coef_t",
    "weight_update": "coef_t",
    "bias_update": "coef_t",
    "grid_in": "grid_range",
    "input": "act_t",
    "target": "act_t",
    "init": "coef_t",
}
TUNABLE_TYPES = ("act_t", "coef_t", "err_t", "grad_t", "dphi_t")


def signal_type(name: str) -> str:
    """The spec field a named signal is cast to, e.g. 'layer1.out[o=2]' -> 'act_t'."""
    kind = re.sub(r"\[.*$", "", name).split(".")[-1]
    return _KIND_TYPE[kind]


def cast_overflows(learner: OnlineLearner, stats: np.ndarray) -> int:
    """The overflows a run_raw() stats table recorded over the learner's casts (its grid clamps left out).

    What the AXI shell's SATURATIONS register counts over the same samples (codesign/fpga/axi.py).
    """
    return int(sum(row[2] for name, row in zip(learner.signal_names(), stats) if signal_type(name) != "grid_range"))


@dataclass(frozen=True)
class SignalStats:
    """Range and overflows of one named signal over a stream."""

    name: str
    type_field: str
    min: float
    max: float
    saturations: int
    first_saturation: int | None
    count: int


@dataclass
class Profile:
    """The profile of one learner over one stream."""

    spec: KANSpec | MLPSpec
    signals: list[SignalStats]
    mse: float

    @property
    def saturations(self) -> int:
        """Overflows over all casts (grid clamps are not overflows)."""
        return sum(s.saturations for s in self.signals if s.type_field != "grid_range")

    def first_saturation(self) -> SignalStats | None:
        """The signal that overflowed first in the stream (ties: the first named)."""
        hits = [(s.first_saturation, n, s) for n, s in enumerate(self.signals)
                if s.type_field != "grid_range" and s.first_saturation is not None]
        return min(hits, key=lambda h: (h[0], h[1]))[2] if hits else None

    def by_type(self) -> dict[str, dict[str, Any]]:
        """Per spec type: the observed range over its signals, overflows and the first one."""
        out: dict[str, dict[str, Any]] = {}
        for s in self.signals:
            d = out.setdefault(s.type_field, {"min": math.inf, "max": -math.inf, "saturations": 0, "first": None, "signals": 0})
            if s.count:
                d["min"], d["max"] = min(d["min"], s.min), max(d["max"], s.max)
            d["saturations"] += s.saturations
            d["signals"] += 1
            if s.first_saturation is not None and (d["first"] is None or s.first_saturation < d["first"][1]):
                d["first"] = (s.name, s.first_saturation)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "spec": self.spec.to_dict(),
            "mse": self.mse,
            "saturations": self.saturations,
            "signals": [dataclasses.asdict(s) for s in self.signals],
        }


def _quantized_signal(name: str, field: str, t: FixedType, values: np.ndarray) -> SignalStats:
    """A signal quantized outside the kernel (stream values, initial coefficients)."""
    over = np.flatnonzero(t.quantize(values) != FixedType(62, t.int_bits + 62 - t.width, True, t.qmode).quantize(values))
    return SignalStats(name, field, float(values.min()), float(values.max()), int(over.size),
                       int(over[0]) if over.size else None, int(values.size))


def _outside_signals(spec: KANSpec | MLPSpec, stream: TaskStream, seed: int) -> list[SignalStats]:
    """Inputs, targets and initial coefficients: their quantization can saturate too (sample 0 for the init)."""
    out = [_quantized_signal(f"input[{j}]", "act_t", spec.act_t, stream.x[:, j]) for j in range(stream.n_inputs)]
    out += [_quantized_signal(f"target[{j}]", "act_t", spec.act_t, stream.y[:, j]) for j in range(stream.n_outputs)]
    init = kind_of(spec).initial_values(spec, seed)
    sig = _quantized_signal("coef.init", "coef_t", spec.coef_t, init)
    out.append(dataclasses.replace(sig, first_saturation=0 if sig.saturations else None))
    return out


def profile_stream(spec: KANSpec | MLPSpec, stream: TaskStream, seed: int = 0) -> Profile:
    """Run the instrumented reference over a stream and collect every named signal's statistics."""
    learner: OnlineLearner = make_learner(spec, seed=seed)
    x, y, train = learner._check_stream(stream.x, stream.y, stream.train)
    stats = learner.new_stats()
    pred = learner.run_raw(spec.act_t.quantize(x), spec.act_t.quantize(y), train, stats=stats)
    mse = online_metrics(spec.act_t.to_float(pred), stream)["mse"]
    signals = _outside_signals(spec, stream, seed)
    for name, row in zip(learner.signal_names(), stats):
        rec = dict(zip(STAT_COLUMNS, row))
        signals.append(SignalStats(
            name, signal_type(name), float(rec["min"]), float(rec["max"]), int(rec["saturations"]),
            None if rec["first_saturation"] < 0 else int(rec["first_saturation"]), int(rec["count"]),
        ))
    return Profile(spec, signals, mse)


def _int_bits_needed(t: FixedType, lo: float, hi: float) -> int:
    """Fewest integer bits (same fractional bits, signedness, modes) that hold [lo, hi] after rounding."""
    f = t.frac
    for i in range(1 - f, 63 - f):
        cand = FixedType(i + f, i, t.signed, t.qmode, t.omode) if i + f >= 1 else None
        if cand is None:
            continue
        q = cand.quantize([lo, hi])
        # fits if a type one bit wider gives the same raw values (no overflow)
        wide = FixedType(i + f + 1, i + 1, t.signed, t.qmode, t.omode).quantize([lo, hi])
        if np.array_equal(q, wide):
            return i
    raise ValueError(f"no type up to 62 bits holds [{lo}, {hi}] with {f} fractional bits")


@dataclass(frozen=True)
class TypeProposal:
    """The narrowest type of one spec field, and what one bit less costs."""

    field: str
    current: str
    proposed: str
    narrower: str
    narrower_saturations: int | None
    narrower_mse: float | None
    note: str = ""


def propose_types(
    spec: KANSpec | MLPSpec, stream: TaskStream, seed: int = 0, max_rounds: int = 8
) -> tuple[KANSpec | MLPSpec, Profile, list[TypeProposal]]:
    """The narrowest integer bits per type that never overflow on the stream (iterated to a fixed point).

    Widening a saturating type changes the trajectory, so the proposal is re-profiled until it
    has no overflow and needs no change. Returns the proposed spec, its profile and, per type,
    the overflows and running error of one integer bit less.
    """
    fields = [f for f in TUNABLE_TYPES if hasattr(spec, f)]
    current = spec
    for _ in range(max_rounds):
        prof = profile_stream(current, stream, seed)
        ranges = prof.by_type()
        changes = {}
        for f in fields:
            r = ranges.get(f)
            if r is None or r["min"] > r["max"]:
                continue
            t = getattr(current, f)
            lo, hi = r["min"], r["max"]
            if f == "act_t" and kind_of(current).has_grid:  # the grid ends must stay exact in act_t
                grid_lo, grid_hi = cast(KANSpec, current).grid_range
                lo, hi = min(lo, grid_lo), max(hi, grid_hi)
            need = _int_bits_needed(t, lo, hi)
            if need != t.int_bits:
                changes[f] = FixedType(need + t.frac, need, t.signed, t.qmode, t.omode)
        if not changes and prof.saturations == 0:
            break
        current = _replace_types(current, changes)
    else:
        raise ValueError(f"type proposal did not settle in {max_rounds} rounds")
    proposals = []
    for f in fields:
        t = getattr(current, f)
        if t.width <= 1:
            continue
        narrower = FixedType(t.width - 1, t.int_bits - 1, t.signed, t.qmode, t.omode)
        try:
            p1 = profile_stream(_replace_types(current, {f: narrower}), stream, seed)
        except ValueError as exc:  # a spec check refuses it, e.g. the grid ends no longer fit act_t
            proposals.append(TypeProposal(f, str(getattr(spec, f)), str(t), str(narrower), None, None, str(exc)))
            continue
        proposals.append(TypeProposal(f, str(getattr(spec, f)), str(t), str(narrower), p1.saturations, p1.mse))
    return current, prof, proposals


def _replace_types(spec: KANSpec | MLPSpec, changes: dict[str, FixedType]) -> KANSpec | MLPSpec:
    return dataclasses.replace(spec, **changes) if changes else spec  # type: ignore[arg-type]  # every key is a type field of spec
