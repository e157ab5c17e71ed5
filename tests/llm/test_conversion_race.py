"""Two processes converting the same GGUF: the second to finish keeps the first one's copy, never fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from codesign.llm.models import publish_conversion


def _conversion(folder: Path, marker: str) -> Path:
    folder.mkdir()
    (folder / "codesign_source.json").write_text("{}")
    (folder / "model.safetensors").write_text(marker)
    return folder


def test_the_second_conversion_to_finish_keeps_the_first(tmp_path: Path) -> None:
    target = tmp_path / "model"
    publish_conversion(_conversion(tmp_path / "model.1.partial", "first"), target)
    publish_conversion(_conversion(tmp_path / "model.2.partial", "second"), target)
    assert (target / "model.safetensors").read_text() == "first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_a_half_written_target_is_not_taken_for_a_conversion(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.mkdir()
    (target / "stray").write_text("")  # not a finished conversion: no codesign_source.json
    with pytest.raises(OSError):
        publish_conversion(_conversion(tmp_path / "model.1.partial", "first"), target)
