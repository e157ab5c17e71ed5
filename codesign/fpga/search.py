"""The pipeline search: the register placement ``auto`` chooses for a spec's clock on a board, made once.

:func:`choose_pipeline` resolves any pipeline request into a frozen
:class:`~codesign.fpga.pipeline.PipelineChoice` (placement, estimated period, clock met, note); a build
makes that one call at its edge and hands the choice to the estimate, the HLS schedule, the RTL and the
report. ``auto`` first shares the products as little as lets the design fit (:func:`fitting_share`), then walks
the register set greedily (:func:`candidate_pipelines`) with the cost model's period (codesign.fpga.cost).
"""

from __future__ import annotations

import math
from dataclasses import replace

from codesign.fpga.boards import Board
from codesign.fpga.cost import features, period_ns, resource_counts, utilization_percent
from codesign.fpga.kinds import fpga_kind
from codesign.fpga.pipeline import pipeline_timing, resolve_pipeline
from codesign.fpga.placement import CUT_BITS, MAX_SHARE, SHARED_IN, Pipeline, PipelineChoice
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["MAX_TREE_SPLIT", "SHARE_FILL_PERCENT", "fitting_share", "candidate_pipelines",
           "choose_pipeline", "deeper_hint", "is_deepest", "rechoose_pipeline"]


def _clog2(n: int) -> int:
    """SystemVerilog $clog2: bits to count 0..n-1 (0 for n <= 1)."""
    return max(0, math.ceil(math.log2(n))) if n > 1 else 0


MAX_TREE_SPLIT = 8  # the largest SPLIT check_placement takes
# ``auto`` shares the products until every resource's estimate is at most this much of the part: the LUT
# estimate is off Yosys by 12 % on average (docs/figure1.md), and a placer needs room beyond that
SHARE_FILL_PERCENT = 80.0


def fitting_share(spec: KANSpec | MLPSpec, board: Board) -> int:
    """The fewest products per multiplier that bring every resource to SHARE_FILL_PERCENT of the part or below.

    1 for a core without product sharing (the MLP) or a design that fits unshared. Sharing trades DSPs for
    operand muxes (LUTs), so where no share brings everything under the fill, the share of the smallest
    largest utilization. Judged on the deep placement (the most registers) with the spec's kept cuts.
    """
    kind = fpga_kind(spec)
    if not kind.phase_cuts:
        return 1
    deep = resolve_pipeline(spec, "deep")
    deep = replace(deep, cuts=deep.cuts | kind.kept_cuts(spec) | SHARED_IN)

    def fullest(share: int) -> float:
        counts = resource_counts(spec, replace(deep, share=share), board.family)
        return max(utilization_percent(counts, board).values())

    fill: dict[int, float] = {}
    for share in range(1, MAX_SHARE + 1):
        fill[share] = fullest(share)
        if fill[share] <= SHARE_FILL_PERCENT:
            return share
    return min(fill, key=lambda share: (fill[share], share))


def candidate_pipelines(spec: KANSpec | MLPSpec, board: Board, target_ns: float | None = None, share: int = 1) -> list[Pipeline]:
    """The placements ``auto`` chooses from: two greedy walks over the register set, a few hundred model evaluations.

    Up from no register: each step adds the register that gives the shortest estimated period
    (then the fewest register bits), as long as the period does not grow, until every register
    is placed. Down from every register (when ``target_ns`` is given): each step removes the
    register that saves the most cycles (then the most bits) while the period still meets
    ``target_ns``, until none can go. Every placement shares its products ``share`` per multiplier.
    """
    kind = fpga_kind(spec)
    kan = kind.phase_cuts  # the KAN core: registers inside the phases, a grid front
    n_bits = 2 * len(spec.layer_shapes) - 1
    family = board.family
    max_levels = _clog2(kind.tree_terms(spec)) if kan else 0
    # coarse to fine: more registers to the right; a split of 8 or more levels places one register at most in
    # any tree the schema allows (1,024 inputs x banks), and check_placement takes SPLIT 0..8
    splits = list(range(min(max_levels - 1, MAX_TREE_SPLIT), 0, -1)) if kan else []

    # block-RAM banks read through the RAM's own register: the read cut is in every placement; shared multipliers
    # take their operands from a register (the DSP's own): without it the operand mux and the multiply are one
    # path, which the model puts at 3.70 ns and Yosys at 3.89 ns on the default spec (247.5 MHz, docs/shared_products.md)
    kept = kind.kept_cuts(spec) | (SHARED_IN if kan and share > 1 else 0)
    idle = kind.idle_cuts(spec)  # bits that build nothing for this spec: tried, they would only tie
    if kan and share == 1:
        idle |= SHARED_IN  # the shared multipliers' operand register: none to build

    def added(pipe: Pipeline) -> list[Pipeline]:
        out = [replace(pipe, phases=pipe.phases | 1 << b) for b in range(n_bits) if not pipe.phases >> b & 1]
        if kan:
            out += [replace(pipe, cuts=pipe.cuts | 1 << k) for k in CUT_BITS.values() if not (pipe.cuts | idle) >> k & 1]
            finer = [v for v in splits if pipe.tree_split == 0 or v < pipe.tree_split]
            if finer:
                out.append(replace(pipe, tree_split=finer[0]))
        return out

    def removed(pipe: Pipeline) -> list[Pipeline]:
        out = [replace(pipe, phases=pipe.phases & ~(1 << b)) for b in range(n_bits) if pipe.phases >> b & 1]
        out += [replace(pipe, cuts=pipe.cuts & ~(1 << k)) for k in CUT_BITS.values() if pipe.cuts >> k & 1 and not kept >> k & 1]
        if pipe.tree_split:
            coarser = [v for v in splits if v > pipe.tree_split]
            out.append(replace(pipe, tree_split=coarser[-1] if coarser else 0))
        return out

    def bits(pipe: Pipeline) -> float:
        return sum(features(spec, pipe, family)["ff"].values())

    def period(pipe: Pipeline) -> float:
        return round(period_ns(spec, pipe, board), 6)

    current = Pipeline(cuts=kept, share=share)
    visited = [current]
    while True:
        options = sorted(added(current), key=lambda p: (period(p), bits(p)))
        if not options or period(options[0]) > period(current):
            break
        current = options[0]
        visited.append(current)
    if target_ns is not None and period(current) <= target_ns:
        while True:
            options = [p for p in removed(current) if period(p) <= target_ns]
            if not options:
                break
            current = min(options, key=lambda p: (pipeline_timing(spec, p)["ii"], bits(p)))
            visited.append(current)
    return visited


def choose_pipeline(spec: KANSpec | MLPSpec, board: Board, pipeline: str | int | Pipeline = "auto") -> PipelineChoice:
    """A pipeline resolved once: for ``auto`` the placement that meets the spec's clock at least time per sample.

    ``auto`` shares the products as little as lets the design fit (fitting_share), then takes, among the
    candidate placements (candidate_pipelines) whose estimated period meets 1000 / spec.clock_mhz, the one
    with the least II x period (then the fewest registers); when none meets it, the fastest clock, with
    ``clock_met`` False and a one-line ``note``. Any other request is resolved as it is and its clock estimated.
    """
    target = 1000.0 / spec.clock_mhz
    dsp = board.family.dsp_instance  # where the product registers sit on this family, whatever the placement
    if pipeline != "auto":
        pipe = resolve_pipeline(spec, pipeline)
        pipe = replace(pipe, cuts=pipe.cuts | fpga_kind(spec).kept_cuts(spec), dsp=dsp)  # e.g. a block RAM's read
        period = period_ns(spec, pipe, board)
        met = period <= target + 1e-9
        note = None if met else (f"clock target {spec.clock_mhz:g} MHz not met: estimate {round(1000.0 / period, 1):g} MHz "
                                 f"with pipeline {pipe.text} (--pipeline auto chooses registers for the target)")
        request = pipeline if isinstance(pipeline, str) else pipe.text
        return PipelineChoice(request, pipe, spec.clock_mhz, period, met, note)
    period, ii, pipe, met = _auto_placement(spec, board, target, fitting_share(spec, board))
    pipe = replace(pipe, dsp=dsp)
    if met:
        return PipelineChoice("auto", pipe, spec.clock_mhz, period, True)
    note = (f"clock target {spec.clock_mhz:g} MHz not met by any register placement: best estimate "
            f"{1000.0 / period:.1f} MHz (pipeline {pipe.text}, II {ii})")
    return PipelineChoice("auto", pipe, spec.clock_mhz, period, False, note)


def _auto_placement(spec: KANSpec | MLPSpec, board: Board, target_ns: float, share: int) -> tuple[float, int, Pipeline, bool]:
    """(period, II, placement, meets target_ns) of ``auto``'s choice for a period target.

    Among the candidates (candidate_pipelines) that meet ``target_ns``, the least II x period, then the fewest
    register bits; when none meets it, the fastest clock (then the least II).
    """
    scored = []
    for pipe in candidate_pipelines(spec, board, target_ns, share):
        scored.append((period_ns(spec, pipe, board), pipeline_timing(spec, pipe)["ii"], pipe))
    meeting = [t for t in scored if t[0] <= target_ns + 1e-9]
    if meeting:
        best_time = min(p * ii for p, ii, _ in meeting)
        close = [t for t in meeting if t[0] * t[1] <= best_time * 1.0001]
        family = board.family
        period, ii, pipe = min(close, key=lambda t: (sum(features(spec, t[2], family)["ff"].values()), t[0]))
        return period, ii, pipe, True
    period, ii, pipe = min(scored, key=lambda t: (t[0], t[1]))
    return period, ii, pipe, False


def is_deepest(spec: KANSpec | MLPSpec, placement: Pipeline) -> bool:
    """Whether ``placement`` holds every register of the deep pipeline (and a tree split at least as fine)."""
    deep = resolve_pipeline(spec, "deep")
    tree_as_deep = deep.tree_split == 0 or 0 < placement.tree_split <= deep.tree_split
    return placement.phases & deep.phases == deep.phases and placement.cuts & deep.cuts == deep.cuts and tree_as_deep


def deeper_hint(spec: KANSpec | MLPSpec, placement: Pipeline) -> str:
    """What to try when ``placement`` misses the clock: the deep pipeline, unless it already is that (or deeper)."""
    if is_deepest(spec, placement):
        return "no deeper placement exists: lower clock_mhz in the config or narrow the types"
    return "try --pipeline deep"


def rechoose_pipeline(spec: KANSpec | MLPSpec, board: Board, tried: list[Pipeline], routed_period_ns: float,
                      estimated_period_ns: float) -> PipelineChoice | None:
    """The next placement to route after a routed clock missed the target; None when no untried deeper one is left.

    The router measured ``routed_period_ns`` where the analytic model said ``estimated_period_ns``: ``auto``
    chooses again for the target tightened by that ratio (the model's error on this spec, taken as the same
    for the other placements), which places more registers; when that placement was routed already, the
    deep pipeline. ``clock_met`` of the result is the analytic model's verdict on the untightened target.
    """
    target = 1000.0 / spec.clock_mhz
    scale = max(1.0, routed_period_ns / estimated_period_ns)
    tight = target / scale
    shared = max((p.share for p in tried), default=1)  # the routed ones' sharing, which the fit asked for
    _, _, placement, _ = _auto_placement(spec, board, tight, shared)
    deep = replace(resolve_pipeline(spec, "deep"), share=shared)
    for pipe, request in [(placement, f"auto, re-chosen for the routed clock (model x{scale:.2f})"), (deep, "deep")]:
        pipe = replace(pipe, dsp=board.family.dsp_instance)
        if pipe not in tried:
            period = period_ns(spec, pipe, board)
            return PipelineChoice(request, pipe, spec.clock_mhz, period, period <= target + 1e-9)
    return None
