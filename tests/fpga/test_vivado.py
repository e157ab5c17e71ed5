"""The Vivado non-project flow written beside the RTL names exactly the manifest's sources, top, clock port and period.

Vivado is not installed here: these tests read the scripts, they do not run them.
"""

from __future__ import annotations

import re

import pytest

from codesign.fpga.rtl_emit import emit_rtl
from codesign.fpga.vivado import write_vivado_flow
from codesign.kan.spec import KANSpec, MLPSpec


def _braced(script: str, command: str) -> list[str]:
    lines = [ln for ln in script.splitlines() if ln.startswith(command + " {")]
    assert len(lines) == 1, f"{command}: {lines}"
    return lines[0][len(command) + 2 : -1].split()


@pytest.mark.parametrize("spec", [KANSpec(), MLPSpec(), KANSpec(widths=(3, 5, 2), grid_size=7, clock_mhz=300)],
                         ids=["kan", "mlp", "kan_300mhz"])
def test_script_and_xdc_name_the_manifest(tmp_path, spec):
    manifest = emit_rtl(spec, tmp_path, pipeline="staged")
    entry = manifest["vivado"]
    assert entry["run_here"] is False and entry["clock_mhz"] == spec.clock_mhz
    for top, sources, clock in [(manifest["top"], manifest["sources"], "ap_clk"),
                                (manifest["axi"]["top"], manifest["axi"]["sources"], "aclk")]:
        files = entry[top]
        script = (tmp_path / files["script"]).read_text()
        xdc = (tmp_path / files["xdc"]).read_text()
        assert _braced(script, "read_verilog -sv") == sources
        assert all((tmp_path / s).is_file() for s in sources)
        assert _braced(script, "read_mem") == manifest["memories"]
        assert re.findall(r"^synth_design -top (\S+) -part \$part", script, re.M) == [top]
        assert re.findall(r"^read_xdc (\S+)$", script, re.M) == [files["xdc"]]
        steps = [ln.split()[0] for ln in script.splitlines() if ln.endswith("_design")]
        assert steps == ["opt_design", "place_design", "route_design"]
        assert re.search(r"^report_utilization -file \S+$", script, re.M)
        assert re.search(r"^report_timing_summary -file \S+$", script, re.M)
        clocks = re.findall(r"^create_clock -period ([\d.]+) -name (\S+) \[get_ports (\S+)\]$", xdc, re.M)
        assert len(clocks) == 1
        period, _, port = clocks[0]
        assert float(period) == pytest.approx(1000.0 / spec.clock_mhz, abs=5e-4) and port == clock == files["clock_port"]
        # the port is the top's clock input
        assert re.search(rf"input\s+logic\s+{port}\b", (tmp_path / f"{top}.sv").read_text())


def test_a_bad_clock_is_refused(tmp_path):
    manifest = emit_rtl(KANSpec(widths=(1, 1), grid_size=5), tmp_path)
    with pytest.raises(ValueError, match="clock_mhz=0"):
        write_vivado_flow(tmp_path, manifest, 0)
