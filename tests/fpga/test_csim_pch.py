"""The C-simulation's precompiled headers: built once into codesign's cache, used after, never able to break a build.

A small project (a testbench and a firmware file over ap_fixed) keeps this quick; every build test of
the suite then compiles the real firmware through the same precompiled headers.
"""

from __future__ import annotations

from codesign.fpga.csim import PCH_NAME, compile_csim, find_ap_types, find_compiler, run_csim

FIRMWARE = """#include <ap_fixed.h>
ap_fixed<12, 4> square(ap_fixed<12, 4> x) { return x * x; }
"""
TESTBENCH = """#include <cstdio>
#include <ap_fixed.h>
ap_fixed<12, 4> square(ap_fixed<12, 4> x);
int main() {
    ap_fixed<12, 4> y = square(ap_fixed<12, 4>(1.5));  // 2.25 exactly
    int ok = y.range().to_int() == 2.25 * 256;
    std::printf("csim: samples=1 prediction_mismatches=%d state_values=0 state_mismatches=0 result=%s\\n",
                !ok, ok ? "PASS" : "FAIL");
    return !ok;
}
"""


def _compile_and_run(tmp_path):
    project = tmp_path / "project"
    (project / "firmware").mkdir(parents=True, exist_ok=True)
    (project / "tb").mkdir(exist_ok=True)
    (project / "firmware" / "mini.cpp").write_text(FIRMWARE)
    (project / "tb" / "mini_test.cpp").write_text(TESTBENCH)
    binary = compile_csim(project, "mini", find_compiler(), find_ap_types())
    return (project / "csim" / "compile.log").read_text(), run_csim(binary, project)


def test_headers_are_precompiled_once_then_used_and_a_damaged_one_is_replaced_once(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("CODESIGN_CACHE_DIR", str(cache))

    log, result = _compile_and_run(tmp_path)  # cold: plain headers, the precompiled ones built beside
    assert result.bit_exact and "-include" not in log and "-x c++-header" in log
    (gch,) = cache.glob(f"csim-pch/*/{PCH_NAME}.gch")
    assert gch.stat().st_size > 1_000_000
    assert sorted(p.name for p in gch.parent.iterdir()) == [PCH_NAME, f"{PCH_NAME}.gch"]  # no claim, no partial file

    log, again = _compile_and_run(tmp_path)  # warm: both sources read the precompiled headers
    assert log.count(f"-include {gch.with_suffix('')}") == 2 and again.bit_exact

    gch.write_bytes(gch.read_bytes()[:100_000])  # truncated: g++ stops with an error on it
    log, recovered = _compile_and_run(tmp_path)
    assert recovered.bit_exact and "-include" not in log.split("$ ")[1]
    assert not gch.exists()  # dropped: the next build precompiles anew

    claim = gch.with_suffix(".building")
    claim.touch()  # unless another build is precompiling now: then this one does not repeat it
    log, result = _compile_and_run(tmp_path)
    assert result.bit_exact and "c++-header" not in log and not gch.exists() and claim.exists()


def test_an_unwritable_cache_only_costs_the_speed(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.write_text("a file where the cache folder would be")
    monkeypatch.setenv("CODESIGN_CACHE_DIR", str(cache))
    log, result = _compile_and_run(tmp_path)
    assert result.bit_exact and "-include" not in log
