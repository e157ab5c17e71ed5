"""A built wheel holds the shipped trees and imports from where it was installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from codesign.resources import RESOURCE_TREES, resource_dir

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
        check=True, capture_output=True, text=True,
    )
    (whl,) = out.glob("codesign-*.whl")
    return whl


def repo_files(tree: str) -> set[str]:
    """Non-Python files a tree holds in the repository (what the wheel must ship)."""
    base = ROOT / tree
    return {
        f"codesign/{tree}/{p.relative_to(base).as_posix()}"
        for p in base.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_wheel_holds_every_shipped_tree(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for tree in RESOURCE_TREES:
        missing = repo_files(tree) - names
        assert not missing, f"wheel lacks {sorted(missing)[:5]}"
    assert "codesign/fixed/kernel.py" in names and "codesign/cli.py" in names
    # every subpackage of the source tree is shipped (the packages list in pyproject is explicit)
    for init in (ROOT / "codesign").rglob("__init__.py"):
        rel = init.relative_to(ROOT).as_posix()
        assert rel in names, f"wheel lacks {rel}: add its package to pyproject.toml"
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "codesign = codesign.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_wheel_imports_and_finds_its_trees(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target), str(wheel)],
        check=True, capture_output=True,
    )
    probe = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(target)!r})
        import codesign
        from codesign.resources import RESOURCE_TREES, resource_dir
        from codesign.fixed import FixedType
        assert codesign.__file__.startswith({str(target)!r}), codesign.__file__
        for tree in RESOURCE_TREES:
            d = resource_dir(tree)
            assert str(d).startswith({str(target)!r}) and (d / "__init__.py").is_file(), d
        t = FixedType.parse("ap_fixed<8,3,AP_RND,AP_SAT>")
        assert int(t.quantize([100.0])[0]) == 127
        from codesign.fpga.templates import render, render_rtl  # the HLS and RTL templates, from the wheel
        assert "u_core" in render_rtl("core_instance.sv", core="kan_online", parameters="", connections="")
        assert "${{" not in render("common/top_axi.cpp", version="0", learner="kan_online", top="kan_online_top")
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_editable_install_finds_the_repository_trees():
    for tree in RESOURCE_TREES:
        assert resource_dir(tree) == ROOT / tree
