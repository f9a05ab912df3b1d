"""Hypothesis strategies: random YAML files (with comments and mixed styles) that remember their layout.

The renderer here is independent of writeback.yaml.edit: it records, for every field path,
the lines of its entry and the comment lines that belong to it, so tests can say which
lines an edit may touch.
"""

from __future__ import annotations

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
    keys = st.text(alphabet="abcdk", min_size=1, max_size=5) | st.sampled_from(["metadata", "spec", "yes", "1"])
    return st.lists(st.dictionaries(keys, values(), min_size=1, max_size=5), min_size=1, max_size=2)


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
    if "\n" in value and pick % 3 == 0:
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

    def block_scalar(self, head: str, value: str, indent: int) -> bool:
        body = value.rstrip("\n")
        trailing = len(value) - len(body)
        lines = body.split("\n")
        if not lines[0] or lines[0][0] in " \t":
            return False  # the first line would need an indentation digit
        chomp = "-" if trailing == 0 else ("" if trailing == 1 else "+")
        self.lines.append(f"{head}|{chomp}{self.scalar_suffix()}")
        self.lines.extend(" " * indent + ln if ln else "" for ln in lines)
        self.lines.extend([""] * (trailing - 1))
        if chomp != "+" and self.pick() % 5 == 0:
            self.lines.append(" " * indent)  # a line of spaces no deeper than the content: not content
        self.after_keep = chomp == "+"
        self.block_last = True
        return True

    def value(self, head: str, value: Any, indent: int, path: FieldPath) -> None:
        """Write ``value`` after ``head`` (``key:`` or ``- ``), children at ``indent``."""
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
        text = _scalar_text(value, self.pick())
        if text is None and self.block_scalar(head + sep, value, indent):
            return
        self.lines.append(f"{head}{sep}{text or json.dumps(value, ensure_ascii=False)}{self.scalar_suffix()}")

    def mapping(self, value: dict[str, Any], indent: int, path: FieldPath, prefix: str | None = None) -> None:
        for i, (k, v) in enumerate(value.items()):
            sub = (*path, Key(k))
            on_dash = prefix is not None and i == 0
            comments = set() if on_dash else self.comment_above(indent, root_first=not path and i == 0)
            first = len(self.lines)
            key = _key(k)
            head = (prefix if on_dash else " " * indent) + key + ":"
            self.recs[sub] = Rec(first=first, last=first, comments=comments, dash_line_key=on_dash)
            step = (0 if self.layout.flush else 2) if isinstance(v, list) else self.layout.indent
            child = indent + step
            self.value(head, v, child, sub)
            self.recs[sub].last = len(self.lines) - 1

    def sequence(self, value: list[Any], indent: int, path: FieldPath, prefix: str | None = None) -> None:
        for i, v in enumerate(value):
            sub = (*path, Index(i))
            on_dash = prefix is not None and i == 0
            comments = set() if on_dash else self.comment_above(indent, root_first=False)
            first = len(self.lines)
            self.recs[sub] = Rec(first=first, last=first, comments=comments, dash_line_key=on_dash)
            head = (prefix if on_dash else " " * indent) + "- "
            self.value(head, v, indent + 2, sub)
            self.recs[sub].last = len(self.lines) - 1


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
    text = nl.join(lines) + (nl if layout.final_newline or w.block_last else "")
    return Rendered(text=text, data=docs, recs=recs, lines=lines)
