"""Markdown for the forges' PR/MR bodies (pure): escaped inline text and table cells, field paths that wrap,
values as code, and long values as a fenced diff. GitHub and GitLab render the same subset."""

from __future__ import annotations

import difflib
import html
import json
import re
from collections.abc import Mapping
from typing import Any

from writeback.kube.pathtypes import ABSENT
from writeback.yaml.edit.scalars import reads_as_str

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}#+!|~])")


class _Redacted:
    def __repr__(self) -> str:
        return "REDACTED"


REDACTED = _Redacted()


_MENTION = re.compile(r"@(?=[A-Za-z0-9])")  # GitHub and GitLab notify `@name` (a user, a team, `@all`)


def escape_inline(text: object, *, code: bool = False) -> str:
    """Markdown-safe inline text for GitHub and GitLab: punctuation escaped, HTML neutral, newlines as <br>. Outside
    code (``code=False``) an ``@`` gets a zero-width space after it, so that a live value never notifies anyone
    (inside ``<code>`` the forges mention nobody, and a value must copy as it is)."""
    s = _MD_SPECIAL.sub(r"\\\1", str(text))
    s = html.escape(s, quote=False)
    if not code:
        s = _MENTION.sub("@&#8203;", s)
    return s.replace("\r\n", "\n").replace("\n", "<br>")


def escape_cell(text: object, *, code: bool = False) -> str:
    """A table cell: as inline text, and never breaks the row (``|`` and newlines are escaped)."""
    return escape_inline(text, code=code)


def code(text: object) -> str:
    """Inline code that a value of any content cannot leave: ``<code>...</code>``, escaped."""
    return f"<code>{escape_cell(text, code=True)}</code>"


def _path_parts(path: str) -> list[str]:
    """A path cut after each dot and before each bracket that is not inside brackets or quotes, and after a
    selector's ``=`` and ``,``."""
    parts, start, depth, quoted = [], 0, 0, False
    for i, ch in enumerate(path):
        if ch == '"' and depth:
            quoted = not quoted
        elif quoted:
            continue
        elif ch == "[":
            if depth == 0 and i > start:
                parts.append(path[start:i])
                start = i
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif (ch == "." and depth == 0) or (ch in "=," and depth == 1):  # and inside a selector: [name=|VALUE]
            parts.append(path[start : i + 1])
            start = i + 1
    return [*parts, path[start:]] if start < len(path) else parts


def path_cell(path: object) -> str:
    """A field path in a table cell, with a line break opportunity (``<wbr>``) after each dot and before each
    bracket of the path (and after a selector's ``=``): however long the path, its column can wrap, and copying it
    gives the path unchanged."""
    return "<wbr>".join(escape_cell(part) for part in _path_parts(str(path)))


def format_value(value: object) -> str:
    """A Git or live value for a table cell."""
    if value is REDACTED:
        return "_(redacted)_"
    if value is ABSENT:
        return "_(absent)_"
    if isinstance(value, str) and value and reads_as_str(value):
        text = value
    else:  # a string that reads like another type ("5000", "false", "") is shown quoted: reviewers see a string
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return code(text)


_LONG = 100  # characters: past this (or with a newline) a value is shown as a diff below its table


def _text(value: object) -> str:
    if value is ABSENT:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)


def is_long(value: object) -> bool:
    """Values that do not fit a table cell: multi-line strings (a PEM bundle), long strings, big objects."""
    if value is REDACTED or value is ABSENT:
        return False
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return "\n" in text or len(text) > _LONG


def value_diff(row: Mapping[str, Any]) -> str:
    """A fenced unified diff from the Git value to the live value, for a row with a long value."""
    git, live = _text(row["git"]), _text(row["live"])
    lines = difflib.unified_diff(git.splitlines(), live.splitlines(), "git", "live", lineterm="", n=3)
    body = "\n".join(lines) or f"  {live}"
    runs = [len(m) for m in re.findall(r"`+", body)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}diff\n{body}\n{fence}"
