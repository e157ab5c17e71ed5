"""A register placement of the learner's RTL and what the command line says of it (a leaf: no kind, no registry).

A pipeline is a :class:`Pipeline`: the phase mask PIPE (bit p: a register after phase p of
F_0..F_{L-1}, B_{L-1}..B_1, U, p = 0..2L-2), the cuts inside the phases (CUTS: one bit per
kind of register, :data:`CUT_NAMES`, applied in every layer), the adder-tree split (a
register every ``tree_split`` levels) and the products' sharing (``share``: each multiplier
serves that many products, one per cycle, :data:`MAX_SHARE` at most). The KAN RTL takes all
four; the MLP RTL phase masks only. On the command line a pipeline is ``ii1`` (no register:
II = 1), ``staged`` (a register after every phase), ``deep`` (every register), ``auto`` (the
cheapest placement that fits the part and meets the spec's clock, chosen by the analytic
estimator: codesign.fpga.search.choose_pipeline), an integer phase mask, or
``PHASES:CUTS:SPLIT[:SHARE]`` (integers, 0x.. allowed). What a placement costs
in cycles is the kind's (codesign.fpga.kan.cycles, codesign.fpga.mlp.cycles); for a spec,
codesign.fpga.pipeline asks its kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["PIPELINES", "MAX_SHARE", "CUT_BITS", "CUT_NAMES", "ALL_CUTS", "SHARED_IN", "PRODUCT_CUTS",
           "FORWARD", "FORWARD_BIT", "DEEP_TREE_SPLIT", "CUT_HEADER",
           "Pipeline", "PipelineChoice", "StageStructure", "parse_pipeline", "check_placement", "cut_header", "tree_regs"]

PIPELINES = ("auto", "ii1", "staged", "deep")
MAX_SHARE = 64  # products per multiplier at most (rtl/shared_mult.sv: a 64:1 operand mux is three LUT levels)

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
    # block RAM only: its registered read is the read cut, the mux over the RAMs of a deep bank follows it
    ("bram_out", 14, "the block-RAM bank word, after the mux over its RAMs (block-RAM banks only)"),
    # shared products only (share > 1): the operands a shared multiplier takes, after their mux (the DSP's input register)
    ("shared_in", 15, "the shared multipliers' operands, after their mux (shared products only)"),
)
CUT_BITS = {name: bit for name, bit, _ in _CUTS}
CUT_NAMES = tuple(CUT_BITS)
SHARED_IN = 1 << CUT_BITS["shared_in"]
PRODUCT_CUTS = ("mult", "gmult", "umult")  # the registers of the product sites, which sharing always builds
# every register of an unshared placement (`deep`); SHARED_IN builds nothing there
ALL_CUTS = sum(1 << bit for bit in CUT_BITS.values()) & ~SHARED_IN
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
    """A register placement of the learner's RTL: phase mask, cuts inside the phases, adder-tree split, sharing.

    ``share`` > 1 time-multiplexes the products (rtl/shared_mult.sv): each multiplier serves ``share``
    products of one site, one per cycle, into a register per product, so a product site costs
    ``share`` cycles where its cut costs one, and the site's multipliers are ``share`` times fewer.

    ``dsp`` names the DSP primitive whose own registers hold the registers around the products
    (Family.dsp_instance, set for a board by codesign.fpga.search): where they sit on the part, not
    which registers there are, so it takes no part in comparisons, the text or the cycle counts.
    """

    phases: int = 0
    cuts: int = 0
    tree_split: int = 0
    dsp: str = field(default="", compare=False)
    share: int = 1

    def cut(self, name: str) -> int:
        """1 when the cut ``name`` (one of CUT_NAMES) is on."""
        return self.cuts >> CUT_BITS[name] & 1

    def register(self, name: str) -> int:
        """1 when the register of cut ``name`` is built: its bit, and every product site's when the products are shared."""
        return 1 if self.share > 1 and name in PRODUCT_CUTS else self.cut(name)

    def product_cycles(self, name: str) -> int:
        """Cycles of a product site (``mult``, ``gmult``, ``umult``): its cut (0 or 1); shared, ``share`` and the operand register."""
        return self.share + self.cut("shared_in") if self.share > 1 else self.cut(name)

    @property
    def forward(self) -> int:
        """1 when the bank read overlaps the previous sample's commit, with forwarding (the FORWARD bit)."""
        return int(bool(self.cuts & FORWARD))

    @property
    def text(self) -> str:
        """The form parse_pipeline reads back."""
        if not self.cuts and not self.tree_split and self.share == 1:
            return str(self.phases)
        shared = f":{self.share}" if self.share > 1 else ""
        return f"{self.phases:#x}:{self.cuts:#x}:{self.tree_split}{shared}"

    @classmethod
    def from_dict(cls, data: dict) -> Pipeline:
        """The placement a manifest or report recorded with :meth:`to_dict` (its mask, cuts and tree split)."""
        return cls(data["mask"], data.get("cuts", 0), data.get("tree_split", 0), data.get("dsp", ""), data.get("share", 1))

    def to_dict(self) -> dict[str, object]:
        """Plain data for manifests and reports."""
        data: dict[str, object] = {"mask": self.phases, "cuts": self.cuts, "tree_split": self.tree_split,
                                   "cut_names": [n for n in CUT_NAMES if self.cut(n)] + (["forward"] if self.forward else []),
                                   "text": self.text}
        if self.dsp:
            data["dsp"] = self.dsp
        if self.share > 1:
            data["share"] = self.share
        return data


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


def _bad(text: object) -> ValueError:
    return ValueError(f"--pipeline={text!r}: choose one of {', '.join(PIPELINES)}, an integer phase mask "
                      "or PHASES:CUTS:SPLIT[:SHARE]")


def parse_pipeline(text: str) -> str | int | Pipeline:
    """A pipeline as the command line gives it: a name, an integer phase mask (0x.. allowed) or PHASES:CUTS:SPLIT[:SHARE]."""
    if text in PIPELINES:
        return text
    try:
        if ":" in text:
            parts = [int(v, 0) for v in text.split(":")]
            if len(parts) not in (3, 4) or min(parts) < 0:
                raise ValueError
            return Pipeline(parts[0], parts[1], parts[2], share=parts[3] if len(parts) == 4 else 1)
        return int(text, 0)
    except ValueError:
        raise _bad(text) from None


def check_placement(pipeline: str | int | Pipeline, n_layers: int, phase_cuts: bool) -> Pipeline:
    """The register placement of a pipeline choice other than ``auto``, checked against a core of ``n_layers`` layers.

    ``phase_cuts``: the core takes registers inside its phases (CUTS, TREE_SPLIT); otherwise phase masks only.
    """
    n_bits = 2 * n_layers - 1
    kan = phase_cuts
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
    if pipeline.cuts < 0 or pipeline.cuts & ~(ALL_CUTS | FORWARD | SHARED_IN) or not 0 <= pipeline.tree_split <= 8:
        raise ValueError(f"pipeline={pipeline.text}: CUTS takes the register bits {ALL_CUTS | SHARED_IN:#x} and FORWARD "
                         f"({FORWARD:#x}), SPLIT 0..8")
    if pipeline.forward and pipeline.cut("rows"):
        raise ValueError(f"pipeline={pipeline.text}: FORWARD and the rows register ({1 << CUT_BITS['rows']:#x}) "
                         "do not go together (the rows register is not part of the overlapped front)")
    if not 1 <= pipeline.share <= MAX_SHARE:
        raise ValueError(f"pipeline={pipeline.text}: SHARE (products per multiplier) takes 1..{MAX_SHARE}, got {pipeline.share}")
    if not kan and (pipeline.cuts or pipeline.tree_split or pipeline.share > 1):
        raise ValueError(f"pipeline={pipeline.text}: the MLP RTL takes phase masks only (no CUTS, no SPLIT, no SHARE)")
    return pipeline


def tree_regs(terms: int, split: int) -> int:
    """Registers on a path through rtl/adder_tree.sv of ``terms`` terms."""
    levels = math.ceil(math.log2(terms)) if terms > 1 else 0
    return (levels - 1) // split if split > 0 and levels > 0 else 0


