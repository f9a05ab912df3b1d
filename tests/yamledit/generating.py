"""Hypothesis strategies: random YAML files (with comments and mixed styles) that remember their layout.

The renderer here is independent of writeback.yaml.edit: it records, for every field path,
the lines of its entry and the comment lines that belong to it, so tests can say which
lines an edit may touch.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from writeback.kube.pathtypes import FieldPath, Index, Key

RESERVED = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}
TRICKY = ["yes", "no", "on", "off", "y", "n", "0755", "1e3", "null", "~", "true", "1:20", "1_000", ".inf", "*x", "&a"]
TRICKY += ["- a", "a: b", "#c", "a #b", "[x]", "{y}", "|", ">", "%p", "@q", "`r", "!t", " lead", "trail ", ""]
_ALPHABET = "abxyz019 -_:#'\"\\é\t{}[],&*!|>%@`."
_PLAIN = re.compile(r"[a-z][a-z0-9\-]*")


@dataclass
class Rec:
    """Where a field sits: entry lines (key or dash line to last line), own comment lines, flow container lines."""

    first: int
    last: int
    comments: set[int] = field(default_factory=set)
    in_flow: tuple[int, int] | None = None
    dash_line_key: bool = False  # the first key of a sequence item, written on the dash line
    flow: bool = False  # the value itself is a flow collection


@dataclass
class Layout:
    indent: int
    flush: bool
    crlf: bool
    final_newline: bool
    comments: bool


@dataclass
class Rendered:
    text: str
    data: list[Any]
    recs: list[dict[FieldPath, Rec]]
    lines: list[str]


def scalars() -> st.SearchStrategy[Any]:
    words = st.text(alphabet="abcxyz", min_size=1, max_size=6)
    return st.one_of(
        st.integers(-10_000, 10**9),
        st.booleans(),
        st.none(),
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(lambda f: round(f, 3)),
        st.sampled_from(TRICKY),
        words,
        st.text(alphabet=_ALPHABET, max_size=10),
        st.lists(st.text(alphabet="abc é\t-#:", min_size=1, max_size=8), min_size=1, max_size=3).map(
            lambda ls: "\n".join(x.strip() or "w" for x in ls) + "\n"
        ),
        # trailing spaces, lines of spaces, empty and more-indented lines (content of a block scalar)
        st.lists(st.sampled_from(["x", "y ", "z  ", "  ", " ", "", "  in", "\tt", "'q'"]), min_size=1, max_size=4).map(
            lambda ls: "\n".join(["w", *ls]) + "\n" * (len(ls) % 3)
        ),
    )


def end_strings() -> st.SearchStrategy[str]:
    """Multi-line strings whose last line holds only spaces or ends in a space or tab, with 0 to 3 final line
    breaks: as block scalars, every chomping indicator (issue 22: the ends of files)."""
    middle = st.lists(st.sampled_from(["x", "y z", "", "  in", "é"]), max_size=2)
    last = st.sampled_from(["y ", "z  ", "  ", "   ", " ", "    ", "q \t"])
    return st.tuples(middle, last, st.integers(0, 3)).map(lambda p: "\n".join(["w", *p[0], p[1]]) + "\n" * p[2])


def tails() -> st.SearchStrategy[Any]:
    """A value for the last entry of a file: such a string, or a list or mapping that ends with one."""
    return st.one_of(
        end_strings(),
        st.tuples(st.lists(scalars(), max_size=2), end_strings()).map(lambda p: [*p[0], p[1]]),
        st.tuples(st.dictionaries(st.sampled_from(["a", "b"]), scalars(), max_size=2), end_strings()).map(
            lambda p: {**p[0], "z": p[1]}
        ),
    )


def values(depth: int = 2) -> st.SearchStrategy[Any]:
    if depth == 0:
        return scalars()
    keys = st.text(alphabet="abcdk", min_size=1, max_size=4) | st.sampled_from(["name", "on", "x.y", "é"])
    inner = values(depth - 1)
    return st.one_of(
        scalars(),
        st.dictionaries(keys, inner, min_size=1, max_size=4),
        st.lists(inner, min_size=1, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 9), max_size=2),
        st.lists(st.sampled_from(["p", "q", "r-s"]), max_size=3),
    )


def documents() -> st.SearchStrategy[list[dict[str, Any]]]:
    """One or two documents; often the last one ends with an ``end`` entry from :func:`tails`."""
    keys = st.text(alphabet="abcdk", min_size=1, max_size=5) | st.sampled_from(["metadata", "spec", "yes", "1"])
    docs = st.lists(st.dictionaries(keys, values(), min_size=1, max_size=5), min_size=1, max_size=2)
    return st.tuples(docs, st.none() | tails()).map(
        lambda p: p[0] if p[1] is None else [*p[0][:-1], {**p[0][-1], "end": p[1]}]
    )


def layouts() -> st.SearchStrategy[Layout]:
    return st.builds(Layout, st.sampled_from([2, 4]), st.booleans(), st.booleans(), st.booleans(), st.booleans())


def _scalar_text(value: Any, pick: int) -> str | None:
    """One-line text of a scalar (None for strings that need a block scalar)."""
    if value is None:
        return ["null", "~"][pick % 2]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    assert isinstance(value, str), value
    if "\n" in value and pick % 3 != 1:
        return None
    if _PLAIN.fullmatch(value) and value not in RESERVED and pick % 3 != 2:
        return value
    if pick % 2 and "\n" not in value and "\t" not in value:
        return "'" + value.replace("'", "''") + "'"
    return json.dumps(value, ensure_ascii=False)


def _key(name: str) -> str:
    return name if _PLAIN.fullmatch(name) and name not in RESERVED else json.dumps(name, ensure_ascii=False)


def _flowable(value: Any) -> bool:
    items = value.values() if isinstance(value, dict) else value
    return bool(value) and all(not isinstance(v, dict | list) and not (isinstance(v, str) and "\n" in v) for v in items)


class _Writer:
    def __init__(self, layout: Layout, picks: list[int]) -> None:
        self.layout = layout
        self.picks = picks
        self.n = 0
        self.lines: list[str] = []
        self.recs: dict[FieldPath, Rec] = {}
        self.after_keep = False  # the last lines are a |+ block scalar: a blank line would join it
        self.block_last = False  # the last line belongs to a block scalar
        self.last_block: tuple[FieldPath, str, bool] | None = None  # its path, value, and does its final line break
        # belong to the value (without a final newline, the file's end takes it away)

    def pick(self) -> int:
        self.n += 1
        return self.picks[self.n % len(self.picks)] if self.picks else 0

    def comment_above(self, indent: int, root_first: bool) -> set[int]:
        if not self.layout.comments or self.pick() % 3:
            return set()
        if self.pick() % 4 == 0 and not self.after_keep:
            self.lines.append("")
        if self.pick() % 5 == 0 and indent:
            self.lines.append("# column zero note")  # not owned by the entry below (other indent)
            return set()
        self.lines.append(" " * indent + f"# about line {len(self.lines)}")
        return set() if root_first else {len(self.lines) - 1}

    def scalar_suffix(self) -> str:
        return "  # trailing" if self.layout.comments and self.pick() % 4 == 0 else ""

    def block_scalar(self, head: str, value: str, indent: int, col: int, path: FieldPath) -> bool:
        """Write ``value`` as a literal or folded block (``col``: the column of its key or dash)."""
        body = value.rstrip("\n")
        trailing = len(value) - len(body)
        lines = body.split("\n")
        first = next((ln for ln in lines if ln), "")
        digit = ""
        if self.pick() % 3 == 0 or (first and first[0] in " \t"):
            indent += self.pick() % 2  # an indentation indicator also allows a content indentation off the step
            digit = str(indent - col)
        if not first.strip(" \t") or (not digit and not lines[0]):
            return False  # a first line of spaces would set the indentation
        folded = self.pick() % 2 == 0
        chomp = "-" if trailing == 0 else ("" if trailing == 1 else "+")
        self.lines.append(f"{head}{'>' if folded else '|'}{digit}{chomp}{self.scalar_suffix()}")
        self.lines.extend(" " * indent + ln if ln else "" for ln in (_folded(lines) if folded else lines))
        kept = " " * (self.pick() % (indent + 1)) if self.pick() % 2 else ""  # a kept blank line: no deeper
        self.lines.extend([kept] * (trailing - 1))
        spaces = chomp != "+" and self.pick() % 5 == 0
        if spaces:
            self.lines.append(" " * indent)  # a line of spaces no deeper than the content: not content
        self.after_keep = chomp == "+"
        self.block_last = True
        self.last_block = (path, value, chomp == "+" or (chomp == "" and not spaces))
        return True

    def value(self, head: str, value: Any, indent: int, path: FieldPath, col: int) -> None:
        """Write ``value`` after ``head`` (``key:`` or ``- ``, its key or dash at ``col``), children at ``indent``."""
        sep = "" if head.endswith(" ") else " "
        self.after_keep = self.block_last = False
        if isinstance(value, dict | list) and (not value or (_flowable(value) and self.pick() % 3 == 0)):
            if isinstance(value, dict):
                inner = ", ".join(f"{_key(k)}: {_scalar_text(v, 1) or json.dumps(v)}" for k, v in value.items())
                text = "{" + inner + "}"
            else:
                text = "[" + ", ".join(_scalar_text(v, 1) or json.dumps(v) for v in value) + "]"
            self.lines.append(f"{head}{sep}{text}{self.scalar_suffix()}")
            line = len(self.lines) - 1
            self.recs[path].flow = True
            for k in value if isinstance(value, dict) else range(len(value)):
                sub = (*path, Key(k) if isinstance(k, str) else Index(k))
                self.recs[sub] = Rec(first=line, last=line, in_flow=(line, line))
            return
        if isinstance(value, dict):
            if head.endswith("- "):
                self.mapping(value, indent, path, prefix=head)
            else:
                self.lines.append(head + self.scalar_suffix())
                self.mapping(value, indent, path)
            return
        if isinstance(value, list):
            if head.endswith("- "):
                self.sequence(value, indent, path, prefix=head)
            else:
                self.lines.append(head + self.scalar_suffix())
                self.sequence(value, indent, path)
            return
        scalar = _scalar_text(value, self.pick())
        if scalar is None and self.block_scalar(head + sep, value, indent, col, path):
            return
        self.lines.append(f"{head}{sep}{scalar or json.dumps(value, ensure_ascii=False)}{self.scalar_suffix()}")

    def mapping(self, value: dict[str, Any], indent: int, path: FieldPath, prefix: str | None = None) -> None:
        for i, (k, v) in enumerate(value.items()):
            sub = (*path, Key(k))
            on_dash = prefix is not None and i == 0
            comments = set() if on_dash else self.comment_above(indent, root_first=not path and i == 0)
            first = len(self.lines)
            key = _key(k)
            head = (prefix if on_dash and prefix is not None else " " * indent) + key + ":"
            self.recs[sub] = Rec(first=first, last=first, comments=comments, dash_line_key=on_dash)
            step = (0 if self.layout.flush else 2) if isinstance(v, list) else self.layout.indent
            child = indent + step
            self.value(head, v, child, sub, indent)
            self.recs[sub].last = len(self.lines) - 1

    def sequence(self, value: list[Any], indent: int, path: FieldPath, prefix: str | None = None) -> None:
        for i, v in enumerate(value):
            sub = (*path, Index(i))
            on_dash = prefix is not None and i == 0
            comments = set() if on_dash else self.comment_above(indent, root_first=False)
            first = len(self.lines)
            self.recs[sub] = Rec(first=first, last=first, comments=comments, dash_line_key=on_dash)
            head = (prefix if on_dash and prefix is not None else " " * indent) + "- "
            self.value(head, v, indent + 2, sub, indent)
            self.recs[sub].last = len(self.lines) - 1


def _folded(lines: list[str]) -> list[str]:
    """Source lines of a folded block scalar whose value lines are ``lines``: a line break between two lines of
    text that start without a space would fold into a space, so it is written as an empty line."""
    out: list[str] = []
    prev = ""  # the last line with text
    empties = 0
    for line in lines:
        if not line:
            empties += 1
            continue
        folds = bool(out) and bool(prev) and prev[0] not in " \t" and line[0] not in " \t"
        out.extend([""] * (empties + 1 if folds else empties))
        out.append(line)
        prev, empties = line, 0
    return out


def _set(data: Any, path: FieldPath, value: Any) -> None:
    for seg in path[:-1]:
        data = data[seg.name] if isinstance(seg, Key) else data[seg.index]  # type: ignore[union-attr]
    last = path[-1]
    if isinstance(last, Key):
        data[last.name] = value
    else:
        assert isinstance(last, Index)
        data[last.index] = value


def render(docs: list[dict[str, Any]], layout: Layout, picks: list[int]) -> Rendered:
    lines: list[str] = []
    recs: list[dict[FieldPath, Rec]] = []
    if layout.comments:
        lines.append("# file header")
    for i, doc in enumerate(docs):
        if i or picks[:1] == [1]:
            lines.append("---")
        w = _Writer(layout, picks)
        w.recs[()] = Rec(first=0, last=0)
        w.mapping(doc, 0, ())
        offset = len(lines)
        for rec in w.recs.values():
            rec.first += offset
            rec.last += offset
            rec.comments = {c + offset for c in rec.comments}
            if rec.in_flow:
                rec.in_flow = (rec.in_flow[0] + offset, rec.in_flow[1] + offset)
        lines.extend(w.lines)
        recs.append(w.recs)
    nl = "\r\n" if layout.crlf else "\n"
    text = nl.join(lines) + (nl if layout.final_newline else "")
    data = docs
    if not layout.final_newline and w.block_last and w.last_block is not None and w.last_block[2]:
        path, value, _ = w.last_block  # the file ends in the block's last line: its final line break is gone
        data = copy.deepcopy(docs)
        _set(data[-1], path, value[:-1])
    return Rendered(text=text, data=data, recs=recs, lines=lines)
