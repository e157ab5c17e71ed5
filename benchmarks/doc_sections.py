"""The marked sections of docs that benchmarks rewrite: ``<!-- NAME:begin -->`` ... ``<!-- NAME:end -->``."""

from __future__ import annotations

import re
import sys
from pathlib import Path


def replace_section(text: str, name: str, body: str) -> str | None:
    """``text`` with ``body`` between its NAME markers (the markers kept), or None when it has no such markers."""
    pattern = re.compile(rf"(<!-- {re.escape(name)}:begin -->\n).*?(<!-- {re.escape(name)}:end -->)", re.S)
    if not pattern.search(text):
        return None
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text)


def put_block(doc: Path, name: str, block: str) -> None:
    """Replace ``doc``'s block from ``<!-- begin NAME -->`` to ``<!-- end NAME -->`` with ``block`` (which holds both
    markers), or append it when the doc has none; the rest of the doc stays as it is."""
    old = doc.read_text() if doc.is_file() else ""
    pattern = re.compile(rf"<!-- begin {re.escape(name)} -->.*?<!-- end {re.escape(name)} -->\n?", re.S)
    new = pattern.sub(lambda _: block, old) if pattern.search(old) else old.rstrip("\n") + "\n\n" + block
    doc.write_text(new)


def write_sections(doc: Path, sections: dict[str, str], tool: str) -> None:
    """Put each body between its NAME markers in ``doc`` and write it; a missing pair of markers is one line, exit 2."""
    text = doc.read_text()
    for name, body in sections.items():
        replaced = replace_section(text, name, body)
        if replaced is None:
            print(f"{tool}: error: {doc} has no <!-- {name}:begin/end --> markers", file=sys.stderr)
            raise SystemExit(2)
        text = replaced
    doc.write_text(text)
    print(f"wrote {doc}")
