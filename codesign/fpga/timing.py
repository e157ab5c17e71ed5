"""The design's expected latency and initiation interval: an analytic count of pipeline stages.

These are expectations, not measurements: C/RTL co-simulation (``cosim_design`` in the
generated tcl) measures the real numbers. The model counts one clock per registered memory
or ROM read, per multiply, per rounding/saturation cast and per memory write, and
``ADDER_LEVELS_PER_CYCLE`` levels of an adder tree per clock.

II: the top is pipelined with a target of II = 1. Exact online SGD carries a dependence from
one sample to the next through the coefficients: sample t+1 reads what sample t writes, and
that write comes after the whole forward, error and backward chain. Unless that chain fits
one clock, the scheduler must space samples by the read-to-write distance, so the expected
II is that distance; the target of one sample per clock holds where the chain closes in one
cycle (a low clock, or a small learner).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

__all__ = ["Timing", "TimingBasis", "adder_tree_clocks", "rtl_schedule", "READ", "MULTIPLY", "CAST", "WRITE", "ADDER_LEVELS_PER_CYCLE"]

READ = 1  # a registered memory or ROM read
MULTIPLY = 1  # one DSP multiply
CAST = 1  # rounding and saturation to a narrower type
WRITE = 1  # a memory write
ADDER_LEVELS_PER_CYCLE = 2  # adder-tree levels that fit one clock at the target


class TimingBasis(str, Enum):
    """Where a Timing's cycle counts come from: the RTL's placement (rtl_schedule) or the analytic stage count."""

    RTL_SCHEDULE = "rtl_schedule"
    ANALYTIC = "analytic"


@dataclass(frozen=True)
class Timing:
    """Expected cycles of one sample through the top (analytic, to be measured by co-simulation)."""

    prediction_latency: int  # sample in -> prediction valid
    latency: int  # sample in -> last state write (the top's ap_done)
    ii_expected: int  # samples apart, set by the state read -> write recurrence
    ii_target: int = 1  # the PIPELINE pragma's target
    stages: dict[str, int] = field(default_factory=dict)  # where the cycles go
    schedule: str = ""  # the RTL pipeline whose schedule this is (rtl_schedule), or "" for the analytic count

    @property
    def basis(self) -> TimingBasis:
        """RTL_SCHEDULE when the counts are the RTL pipeline's (``schedule`` names it), else ANALYTIC."""
        return TimingBasis.RTL_SCHEDULE if self.schedule else TimingBasis.ANALYTIC

    def to_dict(self, clock_mhz: float) -> dict:
        """Plain data for reports and the manifest."""
        ns = 1000.0 / clock_mhz
        return {
            "prediction_latency_cycles_expected": self.prediction_latency,
            "latency_cycles_expected": self.latency,
            "latency_ns_expected": round(self.latency * ns, 3),
            "ii_target": self.ii_target,
            "ii_expected": self.ii_expected,
            "stages": dict(self.stages),
            "basis_kind": self.basis.value,
            "basis": (f"the RTL's schedule (pipeline {self.schedule}, codesign.fpga.pipeline): Vitis HLS is given "
                      "the same II and latency; measure with C/RTL co-simulation") if self.schedule else
                     "analytic stage count (codesign.fpga.timing); measure with C/RTL co-simulation",
        }


def adder_tree_clocks(terms: int) -> int:
    """Clocks of an adder tree over ``terms`` values."""
    levels = math.ceil(math.log2(terms)) if terms > 1 else 0
    return math.ceil(levels / ADDER_LEVELS_PER_CYCLE)


def rtl_schedule(analytic: Timing, rtl: dict[str, int], pipeline: str) -> Timing:
    """The HLS schedule that follows the RTL's pipeline: its cycle counts (codesign.fpga.pipeline.pipeline_timing).

    The RTL takes C cycles per sample and overlaps the next one's front (II = C - F, exact predict-then-update); the HLS
    top is given the same II and latency bound, so Vitis aims for the schedule the RTL realises
    at the spec's clock. The kind's analytic stage count (``analytic``) stays in ``stages`` for comparison.
    """
    return Timing(
        prediction_latency=rtl["prediction_latency_cycles"], latency=rtl["update_latency_cycles"],
        ii_expected=rtl["ii"], ii_target=rtl["ii"], stages=analytic.stages, schedule=pipeline,
    )
