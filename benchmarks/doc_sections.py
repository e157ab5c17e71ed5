"""The marked sections of docs that benchmarks rewrite: ``<!-- NAME:begin -->`` ... ``<!-- NAME:end -->``."""

from __future__ import annotations

import re


def replace_section(text: str, name: str, body: str) -> str | None:
    """``text`` with ``body`` between its NAME markers (the markers kept), or None when it has no such markers."""
    pattern = re.compile(rf"(<!-- {re.escape(name)}:begin -->\n).*?(<!-- {re.escape(name)}:end -->)", re.S)
    if not pattern.search(text):
        return None
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text)
