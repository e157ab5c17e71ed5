"""How a failure that reaches the command line becomes one line: its cause and the fix.

Bad input, a missing optional extra, a failed external tool and an operating-system error each
end as ``codesign: error: ...`` and exit 2; anything else is a bug in codesign and keeps its traceback.
"""

from __future__ import annotations

import errno
import re
from functools import lru_cache

from codesign.processes import ToolError

__all__ = ["ToolError", "extra_providing", "one_line_error", "require_module"]

# import names whose distribution is named differently
_IMPORT_ALIASES = {"sklearn": "scikit-learn", "yaml": "pyyaml", "cocotb_tools": "cocotb", "cocotbext": "cocotbext-axi"}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@lru_cache(maxsize=1)
def _extras_by_distribution() -> dict[str, str]:
    """{distribution name: the codesign extra that installs it}, read from the installed package's metadata."""
    from importlib import metadata  # noqa: PLC0415 - only when a module is missing

    found: dict[str, str] = {}
    try:
        requirements = metadata.requires("codesign") or []
    except metadata.PackageNotFoundError:
        return found
    for text in requirements:
        name = re.match(r"\s*([A-Za-z0-9._-]+)", text)
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", text)
        if name and extra and extra.group(1) != "test" and _normalize(name.group(1)) != "codesign":
            found.setdefault(_normalize(name.group(1)), extra.group(1))
    return found


def extra_providing(module: str) -> str | None:
    """The codesign extra whose packages provide an importable module, or None."""
    top = module.split(".")[0]
    return _extras_by_distribution().get(_normalize(_IMPORT_ALIASES.get(top, top)))


def require_module(module: str) -> None:
    """Raise ModuleNotFoundError (one line at the command line, naming the extra) when a module is not installed."""
    import importlib.util  # noqa: PLC0415

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ModuleNotFoundError(f"No module named {module!r}", name=module)


def _os_error(exc: OSError) -> str:
    text = str(exc) if not exc.strerror else exc.strerror
    if exc.filename:
        text = f"{text}: {exc.filename}" if exc.strerror else text
    fixes = {errno.ENOSPC: "free some disk space or choose another --out", errno.EROFS: "choose a writable --out",
             errno.EACCES: "choose a folder you can write to", errno.EPERM: "choose a folder you can write to"}
    fix = fixes.get(exc.errno or 0)
    return f"{text} ({fix})" if fix else text


def one_line_error(exc: BaseException) -> str | None:
    """The message of a failure caused by input, environment or a tool, on one line; None for an internal bug."""
    if isinstance(exc, ModuleNotFoundError):
        module = exc.name or "a module"
        extra = extra_providing(module)
        if extra is None:
            return f"{module} is not installed (pip install {module.split('.')[0]})"
        package = _IMPORT_ALIASES.get(module.split(".")[0], module.split(".")[0])
        return f"this needs the '{extra}' extra ({package} is not installed): pip install 'codesign[{extra}]'"
    if isinstance(exc, MemoryError):
        return "out of memory: choose smaller sizes (fewer samples, chips or a smaller model)"
    if isinstance(exc, (FileExistsError, FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)):
        message = str(exc) if not exc.filename else _os_error(exc)
    elif isinstance(exc, OSError):
        message = _os_error(exc)
    elif isinstance(exc, (ValueError, ToolError)):
        message = str(exc)
    else:
        return None
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
