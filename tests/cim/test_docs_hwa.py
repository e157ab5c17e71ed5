"""The hardware-aware training example of docs/cim.md runs as written and trains through the chips."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "cim.md"


def test_the_hwa_example_of_the_docs_runs_and_its_chips_learn(capsys):
    block = re.search(r"<!-- hwa-example:begin -->\n```python\n(.*?)```\n<!-- hwa-example:end -->", DOC.read_text(), re.S)
    assert block, "docs/cim.md lost its hwa-example block"
    scope: dict = {}
    exec(compile(block.group(1), str(DOC), "exec"), scope)  # exactly the documented code
    accuracy = scope["accuracy"]
    assert accuracy.shape == (20,) and float(accuracy.min()) > 0.9, accuracy  # the toy task is learned on every chip
    assert "accuracy on 20 chips after one day" in capsys.readouterr().out
