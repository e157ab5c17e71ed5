"""A long external tool says that it still runs; a tool's failure is one plain line (no colours, no progress bars)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from codesign.fpga.pnr import _run
from codesign.processes import ToolError, heartbeat, run_tool

SLEEP = [sys.executable, "-c", "import time; time.sleep(1.2)"]


def test_a_running_tool_says_so_every_interval(tmp_path):
    stream = io.StringIO()
    partial, final = tmp_path / ".o.codesign-partial", tmp_path / "o"
    with heartbeat(stream, interval=0.3, moved=(partial, final)):
        result = run_tool(SLEEP, tool="sleeper", log=partial / "rtl" / "sleeper.log")
    assert result.returncode == 0
    lines = [ln for ln in stream.getvalue().splitlines() if ln]
    assert 3 <= len(lines) <= 5, lines
    assert all(ln.startswith("  ... still running sleeper (") for ln in lines), lines
    assert lines[0].startswith("  ... still running sleeper (0.3 s; log ")
    assert all(str(final / "rtl" / "sleeper.log") in ln for ln in lines), lines  # where the log will be


def test_the_log_of_a_relative_output_folder_is_named_where_it_will_be(tmp_path, monkeypatch):
    """A build given a relative --out writes into a relative partial folder; tools may name their logs absolutely."""
    monkeypatch.chdir(tmp_path)
    stream = io.StringIO()
    with heartbeat(stream, interval=0.3, moved=(Path(".o.codesign-partial"), Path("o"))):
        run_tool(SLEEP, tool="sleeper", log=tmp_path / ".o.codesign-partial" / "rtl" / "sleeper.log")
    lines = [ln for ln in stream.getvalue().splitlines() if ln]
    assert lines and all(ln.endswith("; log o/rtl/sleeper.log)") for ln in lines), lines


def test_a_quick_tool_and_a_tool_outside_a_heartbeat_say_nothing(tmp_path, capsys):
    stream = io.StringIO()
    with heartbeat(stream, interval=5.0):
        run_tool([sys.executable, "-c", "pass"], tool="quick")
    run_tool(SLEEP, tool="sleeper")
    assert stream.getvalue() == "" and capsys.readouterr() == ("", "")


def test_the_time_limit_still_holds_inside_a_heartbeat():
    stream = io.StringIO()
    with heartbeat(stream, interval=0.2), pytest.raises(ToolError, match="did not finish within 0.5 s"):
        run_tool([sys.executable, "-c", "import time; time.sleep(30)"], tool="sleeper", timeout=0.5)
    assert stream.getvalue().count("still running sleeper") in (2, 3)


def test_a_heartbeat_needs_a_positive_interval():
    with pytest.raises(ValueError, match="positive"), heartbeat(io.StringIO(), interval=0):
        pass


def test_a_tool_failure_is_one_plain_line(tmp_path):
    """A tool that colours its errors and draws progress bars into its log: the error keeps only the words."""
    log = tmp_path / "tool.log"
    script = (
        "import sys; log = open(sys.argv[1], 'w'); "
        "log.write(' 10%|#         | 1/10\\r 50%|#####     | 5/10\\r\\n'); "
        "log.write('\\x1b[1;31mERROR: \\x1b[0mno route for net \\x1b]8;;http://x\\x07clk\\x1b]8;;\\x07\\n'); "
        "log.write(' 45%|####5     | 45/100 [00:01<00:01, 44.1it/s]\\n'); sys.exit(1)"
    )
    with pytest.raises(ToolError) as info:
        _run([sys.executable, "-c", script, str(log)], Path(tmp_path), 60.0, "nextpnr-ecp5", log)
    text = str(info.value)
    assert "\x1b" not in text and "%|" not in text and "\r" not in text and "\n" not in text
    assert text.startswith("nextpnr-ecp5: failed: ERROR: no route for net clk (log: ")
