"""The RTL's pipeline choices: where the registers go, and the II and latencies that gives (no heavy imports).

A pipeline is a :class:`Pipeline`: the phase mask PIPE (bit p: a register after phase p of
F_0..F_{L-1}, B_{L-1}..B_1, U, p = 0..2L-2), the cuts inside the phases (CUTS: one bit per
kind of register, :data:`CUT_NAMES`, applied in every layer) and the adder-tree split (a
register every ``tree_split`` levels). The KAN RTL takes all three; the MLP RTL phase masks
only. On the command line a pipeline is ``ii1`` (no register: II = 1), ``staged`` (a register
after every phase), ``deep`` (every register), ``auto`` (the cheapest placement that meets the
spec's clock, chosen by the analytic estimator: codesign.fpga.search.choose_pipeline), an
integer phase mask, or ``PHASES:CUTS:SPLIT`` (integers, 0x.. allowed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from codesign.fixed import OMode
from codesign.fpga.kinds import fpga_kind
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["PIPELINES", "CUT_BITS", "CUT_NAMES", "FORWARD", "Pipeline", "PipelineChoice", "parse_pipeline", "resolve_pipeline",
           "pipeline_mask", "pipeline_timing", "kan_bank_geometry", "kan_folds", "kan_arrivals", "kan_front_stages", "kan_read_in_front",
           "StageStructure", "kan_stage_structure", "cut_header", "CUT_HEADER", "FORWARD_BIT"]

PIPELINES = ("auto", "ii1", "staged", "deep")

# The registers inside the phases: CUTS bit CUT_BITS[name] is the register CUT_<NAME> of the KAN
# RTL, and what it holds. rtl/kan_cuts.svh is rendered from this table (cut_header); nothing
# else in the RTL spells a bit position.
_CUTS: tuple[tuple[str, int, str], ...] = (
    ("grid", 0, "the grid coordinate"),
    ("decode", 1, "the basis ROM read, rotation and bank address"),
    ("read", 2, "the coefficient bank read"),
    ("mult", 3, "the forward products (B*c, D*c)"),
    ("sum", 4, "the forward sums, before their cast"),
    ("err", 5, "the error, after its cast"),
    ("gmult", 6, "the backward products g*dphi"),
    ("gsum", 7, "the backward sum times 1/h, before its cast"),
    ("umult", 8, "the update products g*B"),
    ("ufull", 9, "the update difference, before its cast"),
    ("scale", 10, "the grid's scaled offset, before the clamp"),
    ("round", 11, "inside every cast, after the rounding"),
    # the ROM, its rotation and the bank read otherwise share one stage
    ("rows", 13, "the basis rows alone, beside the bank read (not with FORWARD)"),
)
CUT_BITS = {name: bit for name, bit, _ in _CUTS}
CUT_NAMES = tuple(CUT_BITS)
ALL_CUTS = sum(1 << bit for bit in CUT_BITS.values())
# CUTS bit 12 is no register: it puts layer 0's bank read register in the front that the next
# sample overlaps, with read-after-write forwarding (rtl/kan_layer.sv READ_IN_FRONT). Opt-in:
# the select it adds before the forward multipliers costs them their DSP input register in
# Yosys, which the analytic model does not describe, so `auto` does not place it.
FORWARD_BIT = 12
FORWARD = 1 << FORWARD_BIT
DEEP_TREE_SPLIT = 2
CUT_HEADER = "kan_cuts.svh"


def cut_header() -> str:
    """The text of rtl/kan_cuts.svh: one CUT_<NAME> localparam per CUTS bit, for the modules that take CUTS."""
    rows = list(_CUTS)
    rows.append(("forward", FORWARD_BIT, "no register: the bank read joins the overlapped front, forwarding"))
    lines = ["// The CUTS bits, rendered by codesign from codesign.fpga.pipeline.CUT_BITS (edit that table, not this file).",
             "// `include it inside a module that has the parameter CUTS."]
    lines += [f"localparam int CUT_{name.upper()} = (CUTS >> {bit}) & 1;  // {what}"
              for name, bit, what in sorted(rows, key=lambda row: row[1])]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Pipeline:
    """A register placement of the learner's RTL: phase mask, cuts inside the phases, adder-tree split."""

    phases: int = 0
    cuts: int = 0
    tree_split: int = 0

    def cut(self, name: str) -> int:
        """1 when the cut ``name`` (one of CUT_NAMES) is on."""
        return self.cuts >> CUT_BITS[name] & 1

    @property
    def forward(self) -> int:
        """1 when the bank read overlaps the previous sample's commit, with forwarding (the FORWARD bit)."""
        return int(bool(self.cuts & FORWARD))

    @property
    def text(self) -> str:
        """The form parse_pipeline reads back."""
        if not self.cuts and not self.tree_split:
            return str(self.phases)
        return f"{self.phases:#x}:{self.cuts:#x}:{self.tree_split}"

    def to_dict(self) -> dict[str, object]:
        """Plain data for manifests and reports."""
        return {"mask": self.phases, "cuts": self.cuts, "tree_split": self.tree_split,
                "cut_names": [n for n in CUT_NAMES if self.cut(n)] + (["forward"] if self.forward else []),
                "text": self.text}


@dataclass(frozen=True)
class PipelineChoice:
    """A pipeline resolved once for a spec on a board (codesign.fpga.search.choose_pipeline), passed down whole.

    ``request`` is what was asked (``auto``, ``ii1``, ``staged``, ``deep``, or the placement's text for a
    mask or a placement); ``placement`` the registers; ``period_ns`` the analytic estimate of its clock
    period on the board; ``clock_met`` whether that meets ``clock_mhz``, and ``note`` one line when not.
    """

    request: str
    placement: Pipeline
    clock_mhz: float
    period_ns: float
    clock_met: bool
    note: str | None = None


def _bad(text: object) -> ValueError:
    return ValueError(f"--pipeline={text!r}: choose one of {', '.join(PIPELINES)}, an integer phase mask "
                      "or PHASES:CUTS:SPLIT")


def parse_pipeline(text: str) -> str | int | Pipeline:
    """A pipeline as the command line gives it: a name, an integer phase mask (0x.. allowed) or PHASES:CUTS:SPLIT."""
    if text in PIPELINES:
        return text
    try:
        if ":" in text:
            parts = [int(v, 0) for v in text.split(":")]
            if len(parts) != 3 or min(parts) < 0:
                raise ValueError
            return Pipeline(*parts)
        return int(text, 0)
    except ValueError:
        raise _bad(text) from None


def resolve_pipeline(spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline = "ii1") -> Pipeline:
    """The register placement of a pipeline choice other than ``auto`` (checked against the spec)."""
    n_bits = 2 * len(spec.layer_shapes) - 1
    kan = fpga_kind(spec).phase_cuts
    if isinstance(pipeline, str):
        if pipeline == "ii1":
            return Pipeline()
        if pipeline == "staged":
            return Pipeline((1 << n_bits) - 1)
        if pipeline == "deep":
            return Pipeline((1 << n_bits) - 1, ALL_CUTS, DEEP_TREE_SPLIT) if kan else Pipeline((1 << n_bits) - 1)
        if pipeline == "auto":
            raise ValueError("pipeline='auto' is chosen by codesign.fpga.search.choose_pipeline for a target")
        raise ValueError(f"pipeline={pipeline!r}: choose one of {', '.join(PIPELINES)} or an integer register mask")
    if isinstance(pipeline, bool):
        raise _bad(pipeline)
    if isinstance(pipeline, int):
        pipeline = Pipeline(pipeline)
    if not isinstance(pipeline, Pipeline):
        raise _bad(pipeline)
    if not 0 <= pipeline.phases < (1 << n_bits):
        raise ValueError(f"pipeline={pipeline.phases!r}: a register mask needs {n_bits} bits (0..{(1 << n_bits) - 1})")
    if pipeline.cuts < 0 or pipeline.cuts & ~(ALL_CUTS | FORWARD) or not 0 <= pipeline.tree_split <= 8:
        raise ValueError(f"pipeline={pipeline.text}: CUTS takes the register bits {ALL_CUTS:#x} and FORWARD "
                         f"({FORWARD:#x}), SPLIT 0..8")
    if pipeline.forward and pipeline.cut("rows"):
        raise ValueError(f"pipeline={pipeline.text}: FORWARD and the rows register ({1 << CUT_BITS['rows']:#x}) "
                         "do not go together (the rows register is not part of the overlapped front)")
    if not kan and (pipeline.cuts or pipeline.tree_split):
        raise ValueError(f"pipeline={pipeline.text}: the MLP RTL takes phase masks only (no CUTS, no SPLIT)")
    return pipeline


def pipeline_mask(spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline = "ii1") -> int:
    """The phase mask PIPE (bit p: a stage boundary after phase p, p = 0..2L-2) of a pipeline choice."""
    return resolve_pipeline(spec, pipeline).phases


def _tree_regs(terms: int, split: int) -> int:
    """Registers on a path through rtl/adder_tree.sv of ``terms`` terms."""
    levels = math.ceil(math.log2(terms)) if terms > 1 else 0
    return (levels - 1) // split if split > 0 and levels > 0 else 0


def kan_bank_geometry(spec: KANSpec) -> tuple[int, int]:
    """(P, DEPTH) of the KAN RTL's coefficient banks: banks per input (the power of two >= k+1) and words per bank."""
    banks = 1 << math.ceil(math.log2(spec.spline_order + 1))
    return banks, math.ceil(spec.n_coef / banks)


def _grid_coordinate(spec: KANSpec, raw: int) -> int:
    """The unclamped grid coordinate u of an act_t raw value (rtl/kan_grid.sv, power-of-two cells)."""
    g = spec.grid_constants()
    offset = (raw - g.lo_raw) * g.inv_h_raw
    return offset >> g.u_shift if g.u_shift >= 0 else offset << -g.u_shift


def kan_folds(spec: KANSpec) -> dict[str, bool]:
    """Which casts the KAN RTL folds into its neighbours (rtl/kan_online.sv FOLD_GRID, FUSE_ERROR).

    ``grid``: a layer after the first takes its grid offset x - lo from the previous layer's
    rounding chain before saturation, with no scale step. The same cell, address and clamp
    follow only when act_t saturates (AP_SAT, AP_SAT_SYM) to values the grid clamps on both
    sides, and 1/h is a power of two (no multiply). ``error``: the error is formed in the last
    layer's forward cast, when act_t is signed and saturating and err_t keeps every fraction
    bit of act_t (so y - target is not rounded again).
    """
    act = spec.act_t
    saturating = act.omode in (OMode.AP_SAT, OMode.AP_SAT_SYM)
    low = act.min_raw + (1 if act.omode == OMode.AP_SAT_SYM and act.signed and act.width > 1 else 0)
    g = spec.grid_constants()
    grid = (len(spec.layer_shapes) > 1 and g.power_of_two and saturating
            and _grid_coordinate(spec, low) < 0 and _grid_coordinate(spec, act.max_raw) > g.u_max)
    error = (act.signed and act.omode in (OMode.AP_SAT, OMode.AP_SAT_ZERO, OMode.AP_SAT_SYM)
             and spec.err_t.frac >= act.frac)
    return {"grid": grid, "error": error}


def kan_arrivals(spec: KANSpec, pipe: Pipeline) -> dict[str, int]:
    """The cycle of the sample in which the prediction and the update's write data are ready (rtl/kan_online.sv)."""
    banks, _ = kan_bank_geometry(spec)
    shapes = spec.layer_shapes
    n_layers = len(shapes)
    c = pipe.cut
    folds = kan_folds(spec)
    ready = 0
    prediction = 0
    for layer, (n_in, _) in enumerate(shapes):
        # the products wait for the later of the bank word (read) and the basis rows (rows); a folded
        # layer's grid offset comes from the previous layer's cast, without a scale register
        scale = 0 if layer > 0 and folds["grid"] else c("scale")
        forward = (scale + c("grid") + c("decode") + max(c("read"), c("rows")) + c("mult")
                   + _tree_regs(n_in * banks, pipe.tree_split) + c("sum") + c("round"))
        prediction = ready + forward
        ready = prediction + (pipe.phases >> layer & 1)
    # the fused error's round register is the forward cast's, counted above
    grad = ready + (0 if folds["error"] else c("round")) + c("err")
    for layer in range(n_layers - 1, 0, -1):
        boundary = pipe.phases >> (2 * n_layers - 1 - layer) & 1
        grad += c("gmult") + _tree_regs(shapes[layer][1], pipe.tree_split) + c("gsum") + c("round") + boundary
    return {"prediction": prediction, "write": grad + c("umult") + c("ufull") + c("round")}


@dataclass(frozen=True)
class StageStructure:
    """The KAN core's cycle structure for one placement: computed here, passed to rtl/kan_online.sv as parameters.

    ``n_stages`` cycles from acceptance to the commit, the prediction ready at the end of stage
    ``pred_stage``, the next sample accepted ``n_front`` cycles before the commit, and
    ``read_in_front`` when layer 0's bank read register is the front's last (it forwards the write).
    """

    n_stages: int
    pred_stage: int
    n_front: int
    read_in_front: bool

    def sv_parameters(self) -> dict[str, int]:
        """The core's parameters N_STAGES, PRED_STAGE, N_FRONT and READ_IN_FRONT."""
        return {"N_STAGES": self.n_stages, "PRED_STAGE": self.pred_stage, "N_FRONT": self.n_front,
                "READ_IN_FRONT": int(self.read_in_front)}


def kan_stage_structure(spec: KANSpec, pipe: Pipeline) -> StageStructure:
    """Stages, prediction stage, overlapped front and the front's bank read of a KAN placement (the one place they are counted)."""
    at = kan_arrivals(spec, pipe)
    stages = at["write"] + 1
    regs = _front_registers(pipe)
    front = kan_front_stages(pipe, stages)
    return StageStructure(n_stages=stages, pred_stage=at["prediction"], n_front=front,
                          read_in_front=bool(pipe.cut("read") & pipe.forward) and front == regs)


def kan_front_stages(pipe: Pipeline, stages: int) -> int:
    """Stages of layer 0's front (grid, basis ROM, bank read) that the next sample overlaps (rtl/kan_online.sv N_FRONT).

    The grid and ROM read no learned state, and with FORWARD the bank read forwards the write it
    overlaps, so the next sample is accepted that many cycles before the commit; at most half
    the stages.
    """
    regs = _front_registers(pipe)
    return regs if 2 * regs <= stages else stages - regs


def _front_registers(pipe: Pipeline) -> int:
    """Registers of layer 0's front: scale, grid, decode, and the bank read with FORWARD (rtl/kan_online.sv FRONT_REGS)."""
    return pipe.cut("scale") + pipe.cut("grid") + pipe.cut("decode") + (pipe.cut("read") & pipe.forward)


def kan_read_in_front(spec: KANSpec, pipe: Pipeline) -> bool:
    """Whether the next sample's bank read is registered at this sample's commit edge and forwards it (rtl/kan_online.sv READ_IN_FRONT)."""
    return kan_stage_structure(spec, pipe).read_in_front


def pipeline_timing(spec: KANSpec | MLPSpec, pipeline: int | Pipeline) -> dict[str, int]:
    """II and latencies (cycles) that a register placement gives, as the bench measures them.

    II is the stages less the overlapped front (kan_front_stages). Latency counts from the cycle
    in which the sample is accepted (ap_start && ap_ready; that
    cycle computes its first stage) to the first cycle in which y_hat_ap_vld (prediction) or
    ap_done (update committed and visible to the next sample) is high.
    """
    pipe = resolve_pipeline(spec, pipeline)
    front = 0
    if fpga_kind(spec).phase_cuts:  # the KAN core: arrivals through the cuts inside its phases
        structure = kan_stage_structure(cast(KANSpec, spec), pipe)
        stages, pred_stage, front = structure.n_stages, structure.pred_stage, structure.n_front
    else:
        n_layers = len(spec.layer_shapes)
        stages = 1 + bin(pipe.phases).count("1")
        pred_stage = bin(pipe.phases & ((1 << (n_layers - 1)) - 1)).count("1")
    return {
        "stages": stages,
        "ii": stages - front,
        "overlap_stages": front,
        "prediction_latency_cycles": pred_stage + 1,
        "update_latency_cycles": stages,
    }
