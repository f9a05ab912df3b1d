"""Semantic versions and the constraints Helm and Flux accept (``6.x``, ``>=1.2 <2``, ``~1.2.3``, ``^1.2``, ``*``),
to pick a chart version from a chart cache. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["pick", "satisfies", "version_key"]

_VERSION = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")
_TERM = re.compile(r"^(!=|>=|<=|=>|=<|>|<|=|~>|~|\^)?\s*(.*)$")

Version = tuple[int, int, int, tuple[tuple[int, int | str], ...]]


def version_key(text: str) -> Version | None:
    """A sortable key of a full version (``1.2.3``, ``v1.2.3-rc.1``); None when it is not one."""
    m = _VERSION.match(text.strip())
    if m is None or m.group(2) is None or m.group(3) is None:
        return None
    pre = tuple((0, int(p)) if p.isdigit() else (1, p) for p in (m.group(4) or "").split(".") if p)
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), pre


def _lt(a: Version, b: Version) -> bool:
    if a[:3] != b[:3]:
        return a[:3] < b[:3]
    if not a[3] or not b[3]:
        return bool(a[3]) and not b[3]  # a prerelease comes before its release
    return a[3] < b[3]


def _bounds(op: str, text: str) -> list[tuple[str, Version]] | None:
    parts = re.split(r"\.", text.lstrip("vV")) if text not in ("", "*", "x", "X") else []
    nums: list[int | None] = []
    for p in parts[:3]:
        if p in ("x", "X", "*"):
            nums.append(None)
        else:
            m = re.match(r"^(\d+)", p)
            if m is None:
                return None
            nums.append(int(m.group(1)))
    while len(nums) < 3:
        nums.append(None)
    if text and (v := version_key(text)) is not None and op in ("", "=") and v[3]:
        return [("=", v)]
    fixed = [n for n in nums if n is not None]
    filled: Version = (nums[0] or 0, nums[1] or 0, nums[2] or 0, ())
    if not fixed:
        return [] if op in ("", "=", ">=", "~", "^") else None
    if op in ("", "=") and len(fixed) == 3:
        return [("=", filled)]
    if (op in ("", "=", "~", "~>") and len(fixed) < 3) or op in ("~", "~>"):
        upper = (filled[0] + 1, 0, 0, ()) if len(fixed) == 1 else (filled[0], filled[1] + 1, 0, ())
        return [(">=", filled), ("<", upper)]
    if op == "^":
        if filled[0] > 0 or len(fixed) == 1:
            upper = (filled[0] + 1, 0, 0, ())
        elif filled[1] > 0 or len(fixed) == 2:
            upper = (0, filled[1] + 1, 0, ())
        else:
            upper = (0, 0, filled[2] + 1, ())
        return [(">=", filled), ("<", upper)]
    return [({"=>": ">=", "=<": "<="}.get(op, op), filled)]


def _check(v: Version, op: str, b: Version) -> bool:
    if op == "=":
        return v == b
    if op == "!=":
        return v != b
    if op == ">":
        return _lt(b, v)
    if op == "<":
        return _lt(v, b)
    if op == ">=":
        return not _lt(v, b)
    if op == "<=":
        return not _lt(b, v)
    return False


def satisfies(version: str, constraint: str | None) -> bool:
    """Does ``version`` meet ``constraint`` (None, ``""`` or ``*``: any release)? Prereleases only match exactly."""
    v = version_key(version)
    if v is None:
        return False
    if constraint is None or constraint.strip() in ("", "*"):
        return not v[3]
    for group in constraint.split("||"):
        terms = [t for t in re.split(r"[,\s]+(?=[^,\s])", re.sub(r"([<>=~^!]+)\s+", r"\1", group.strip())) if t]
        ok = True
        for term in terms:
            m = _TERM.match(term.strip().rstrip(","))
            bounds = _bounds(m.group(1) or "", m.group(2).strip()) if m else None
            if bounds is None or not all(_check(v, op, b) for op, b in bounds):
                ok = False
                break
            if v[3] and not any(op == "=" and b == v for op, b in bounds):
                ok = False
                break
        if ok:
            return True
    return False


def pick(available: Iterable[str], constraint: str | None) -> str | None:
    """The highest of ``available`` that meets ``constraint``."""
    best: tuple[Version, str] | None = None
    for text in available:
        v = version_key(text)
        if v is not None and satisfies(text, constraint) and (best is None or _lt(best[0], v)):
            best = (v, text)
    return best[1] if best else None
