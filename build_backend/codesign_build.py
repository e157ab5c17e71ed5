"""codesign's build backend: setuptools' hooks, and one more file in an editable install.

From the folder that holds a checkout named ``codesign`` (``git clone ... codesign`` and staying one folder up),
Python's path finder sees that folder, which has no ``__init__.py``, as a namespace package ``codesign`` and returns
it before setuptools' editable finder (appended to ``sys.meta_path``, after the path finder) is asked: ``import
codesign`` then gives an empty package and ``from codesign import __version__`` fails. A wheel install has no such
problem, since a regular package anywhere on ``sys.path`` wins over namespace portions. The editable install gets the
same rule: a finder placed just before the path finder imports the checkout when the path finder finds only
namespace portions of ``codesign``. Wheels and sdists are setuptools' own.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 - every hook is setuptools' except build_editable

# the module written into the editable wheel; {finder} is the module setuptools generated there
_FIRST_FINDER = '''"""Part of codesign's editable install (build_backend/codesign_build.py): `import codesign` finds the checkout
even where the working folder holds a folder named codesign without __init__.py, which the path finder alone
would import as an empty namespace package."""
import sys
from importlib.machinery import NamespaceLoader, PathFinder

import {finder} as _editable


class CodesignBeforeNamespaces:
    """Asked for `codesign` before the path finder: a regular package on sys.path wins, else the checkout."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname != "codesign" or path is not None:
            return None
        found = PathFinder.find_spec(fullname, path, target)
        if found is not None and found.loader is not None and not isinstance(found.loader, NamespaceLoader):
            return found
        return _editable._EditableFinder.find_spec(fullname, path, target) or found


def install():
    if CodesignBeforeNamespaces not in sys.meta_path:
        at = sys.meta_path.index(PathFinder) if PathFinder in sys.meta_path else len(sys.meta_path)
        sys.meta_path.insert(at, CodesignBeforeNamespaces)
'''


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _add_first_finder(wheel: Path) -> None:
    """Rewrite an editable wheel with the finder module and the .pth that installs it (after setuptools' .pth)."""
    with zipfile.ZipFile(wheel) as old:
        entries = [(info, old.read(info)) for info in old.infolist()]
    names = [info.filename for info, _ in entries]
    finders = [n for n in names if "/" not in n and n.startswith("__editable___") and n.endswith("_finder.py")]
    if len(finders) != 1:
        return  # setuptools chose another editable strategy (a static .pth or a link tree): nothing shadows it
    finder = finders[0].removesuffix(".py")
    module = finder.removesuffix("_finder") + "_first"
    # .pth files are read in sorted order: "codesign-..." sorts after setuptools' "__editable__.codesign-..."
    added = {f"{module}.py": _FIRST_FINDER.format(finder=finder).encode(),
             f"{module.removeprefix('__editable___')}.pth": f"import {module}; {module}.install()\n".encode()}
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as new:
        for info, data in entries:
            if info.filename.endswith(".dist-info/RECORD"):
                lines = [*data.decode().splitlines(), *(_record_line(n, d) for n, d in added.items())]
                data = ("\n".join(lines) + "\n").encode()
            new.writestr(info, data)
        for name, data in added.items():
            new.writestr(name, data)

def build_editable(wheel_directory, config_settings=None, metadata_directory=None):  # noqa: D103 - PEP 660 hook
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    _add_first_finder(Path(wheel_directory) / name)
    return name
