"""codesign doctor lists the CIM peers (aihwkit, aihwkit-lightning) with the version installed, or none."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from codesign.doctor import tool_versions


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def test_doctor_reports_each_cim_peer_as_installed_or_not():
    versions = tool_versions()
    for peer in ("aihwkit", "aihwkit-lightning"):
        assert peer in versions
        assert versions[peer] == _installed(peer)


def test_the_peer_extra_is_not_a_test_dependency():
    extras = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(r.startswith("aihwkit-lightning") for r in extras["cim-peers"])
    assert not any("cim-peers" in r or "aihwkit" in r for r in extras["test"])
