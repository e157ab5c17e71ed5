"""A Python that has only the base install (`pip install -e .` without extras): codesign and its requirements."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path


def environment_site_dirs() -> list[str]:
    """This environment's package folders, its own first: a virtual environment's, then those it sees of its base
    Python's (--system-site-packages). Not the checkout, whose egg-info is no installed distribution."""
    own = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    seen = [p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))]
    return list(dict.fromkeys(own + seen))


def base_install(site: Path) -> None:
    """Links into ``site`` the installed distributions that `pip install -e .` without extras brings: codesign and
    the closure of its requirements that no extra marks (every optional package is then really absent)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    installed = environment_site_dirs()
    todo, seen = ["codesign"], set()
    while todo:
        dist = next(iter(metadata.distributions(name=todo.pop(), path=installed)))
        name = dist.metadata["Name"].lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
        for top in {f.parts[0] for f in dist.files or [] if f.parts[0] not in ("..", "__pycache__")}:
            if not (site / top).exists():
                (site / top).symlink_to(dist.locate_file(top))


def run_codesign(site: Path, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`codesign ARGV` in a Python whose only site-packages is ``site`` (python -S; its .pth files processed)."""
    code = f"import site, sys; site.addsitedir({str(site)!r}); from codesign.cli import main; sys.exit(main({argv!r}))"
    return subprocess.run([sys.executable, "-S", "-c", code], cwd=cwd, capture_output=True, text=True, timeout=600)
