"""Checks shared by the yamledit tests: independent expected data and the bytes-outside measure."""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Sequence
from typing import Any

from writeback.kube.pathtypes import FieldPath, Index, Key
from writeback.yaml.edit import ScalarInfo


def set_at(data: Any, path: FieldPath, value: Any) -> Any:
    """``data`` (a deep copy) with the existing leaf at a Key/Index ``path`` set to ``value``."""
    out = copy.deepcopy(data)
    node = out
    for seg in path[:-1]:
        node = node[seg.name] if isinstance(seg, Key) else node[seg.index]  # type: ignore[union-attr]
    last = path[-1]
    if isinstance(last, Key):
        node[last.name] = value
    else:
        assert isinstance(last, Index)
        node[last.index] = value
    return out


def offsets(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def spans_of(text: str, infos: Sequence[ScalarInfo]) -> list[tuple[int, int]]:
    starts = offsets(text)
    return sorted((starts[s.line] + s.column, starts[s.end_line] + s.end_column) for s in infos)


def outside_bytes(before: str, after: str, spans: Sequence[tuple[int, int]]) -> int:
    """Bytes changed outside the edited character spans of ``before`` (0 when only the spans changed).

    The text between and around the spans must appear in ``after`` in order, unchanged.
    Otherwise the changed lines that do not hold an edited span are counted.
    """
    pos = 0
    segments = []
    prev = 0
    for start, end in spans:
        segments.append(before[prev:start])
        prev = end
    tail = before[prev:]
    ok = after.startswith(segments[0]) if segments else True
    pos = len(segments[0]) if segments else 0
    for seg in segments[1:]:
        found = after.find(seg, pos)
        if found < 0:
            ok = False
            break
        pos = found + len(seg)
    ok = ok and after.endswith(tail) and len(after) - len(tail) >= pos
    if ok:
        return 0
    starts = offsets(before)
    allowed: set[int] = set()
    for start, end in spans:
        first = max(i for i, s in enumerate(starts) if s <= start)
        last = max(i for i, s in enumerate(starts) if s <= max(start, end - 1))
        allowed.update(range(first, last + 1))
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    changed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        outside = [i for i in range(i1, i2) if i not in allowed]
        changed += sum(len(old[i]) for i in outside)
        if i1 == i2 and not ({i1 - 1, i1} & allowed):
            changed += sum(len(x) for x in new[j1:j2])
    return max(changed, 1)


def line_diff(before: str, after: str) -> tuple[list[int], list[str]]:
    """(deleted or replaced line numbers of ``before``, inserted or replacing lines of ``after``).

    Line endings are compared separately (:func:`same_line_endings`).
    """
    old, new = before.splitlines(), after.splitlines()
    deleted: list[int] = []
    inserted: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":
            deleted.extend(range(i1, i2))
            inserted.extend(new[j1:j2])
    return deleted, inserted


def same_line_endings(before: str, after: str, *, final: bool = True) -> bool:
    """CRLF stays CRLF, LF stays LF, and (with ``final``) the final newline or its absence is kept."""
    crlf_before = "\r\n" in before
    lone_lf = re.compile(r"(?<!\r)\n")
    if crlf_before and not lone_lf.search(before) and lone_lf.search(after):
        return False
    if not crlf_before and "\r\n" in after:
        return False
    return not final or before.endswith("\n") == after.endswith("\n")


def kept_in_order(before: str, after: str, allowed: set[int], *, inserts: bool = False) -> bool:
    """Do all lines of ``before`` outside ``allowed`` appear unchanged and in order in ``after``?

    Without ``inserts``, consecutive kept lines are searched as one block (nothing may come between them).
    """
    old = before.splitlines()
    if inserts:
        new_lines = after.splitlines()
        at = 0
        for i, line in enumerate(old):
            if i in allowed:
                continue
            while at < len(new_lines) and new_lines[at] != line:
                at += 1
            if at == len(new_lines):
                return False
            at += 1
        return True
    new = "\n" + "\n".join(after.splitlines()) + "\n"
    blocks: list[list[str]] = [[]]
    for i, line in enumerate(old):
        if i in allowed:
            if blocks[-1]:
                blocks.append([])
        else:
            blocks[-1].append(line)
    pos = 0
    for block in blocks:
        if not block:
            continue
        found = new.find("\n" + "\n".join(block) + "\n", pos)
        if found < 0:
            return False
        pos = found + len("\n".join(block)) + 1
    return True
