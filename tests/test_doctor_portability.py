"""codesign doctor names clang++ and pyslang, and notes in one line, never as a failure, that clang++ is missing."""

from __future__ import annotations

import shutil

from codesign import doctor


def test_versions_name_clang_and_pyslang():
    versions = doctor.tool_versions()
    assert "clang++" in versions and "pyslang" in versions
    assert (versions["clang++"] is None) == (shutil.which("clang++") is None)


def test_missing_clang_is_a_note_not_a_failure(monkeypatch):
    real = shutil.which
    monkeypatch.setattr(doctor.shutil, "which", lambda name, *a, **k: None if name == "clang++" else real(name, *a, **k))
    check = doctor._check_csim()
    assert check.ok  # g++ and ap_fixed.h still work
    assert check.note.startswith("clang++ not found") and "\n" not in check.note
    assert doctor._clang_version() is None
