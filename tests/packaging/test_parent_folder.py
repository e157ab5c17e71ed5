"""From the folder that holds a checkout named codesign, `import codesign` is the installed package, not the checkout
folder as an empty namespace package: for an editable install (the project's build backend) and for a wheel."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.packaging.base_install import environment_site_dirs

ROOT = Path(__file__).resolve().parents[2]

# python -S: only the install under test, then the environment's packages (numpy, torch) without their .pth files,
# so that this environment's own codesign install plays no part; the working folder is first on sys.path, as for
# `python -m` and `python -c`
PROBE = """
import site, sys
site.addsitedir({site!r})
sys.path.extend({packages!r})
import codesign
from codesign import __version__
import codesign.examples.hls4ml_head  # the example of the report: codesign.fpga.hls4ml_head imports __version__
print(codesign.__file__)
"""


@pytest.fixture(scope="module")
def holder(tmp_path_factory) -> Path:
    """A folder that holds a real clone of this repository named codesign."""
    holder = tmp_path_factory.mktemp("holder")
    subprocess.run(["git", "clone", "-q", str(ROOT), str(holder / "codesign")], check=True, capture_output=True)
    return holder


def probe(site: Path, holder: Path) -> subprocess.CompletedProcess:
    code = PROBE.format(site=str(site), packages=environment_site_dirs())
    return subprocess.run([sys.executable, "-S", "-c", code], cwd=holder, capture_output=True, text=True, timeout=300)


def test_editable_install_is_imported_from_the_folder_that_holds_a_checkout(holder, tmp_path):
    from pyproject_hooks import BuildBackendHookCaller, quiet_subprocess_runner

    system = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    hooks = BuildBackendHookCaller(str(ROOT), system["build-backend"], backend_path=system.get("backend-path"),
                                   runner=quiet_subprocess_runner)
    wheel = tmp_path / "dist" / hooks.build_editable(str(tmp_path / "dist"))
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")  # what pip does with a pure-Python wheel
    out = probe(tmp_path / "site", holder)
    assert out.returncode == 0, out.stderr[-2000:]
    assert Path(out.stdout.strip()) == ROOT / "codesign" / "__init__.py"


def test_wheel_is_imported_from_the_folder_that_holds_a_checkout(holder, tmp_path):
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, text=True)
    (wheel,) = out.glob("codesign-*.whl")
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    result = probe(tmp_path / "site", holder)
    assert result.returncode == 0, result.stderr[-2000:]
    assert Path(result.stdout.strip()) == tmp_path / "site" / "codesign" / "__init__.py"
