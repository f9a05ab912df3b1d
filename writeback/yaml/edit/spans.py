"""Text geometry: lines, value spans and content ends of positioned nodes."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any

from writeback.yaml.edit.trees import AliasRef


def is_comment_line(line: str) -> bool:
    return line.lstrip(" \t").startswith("#")


@dataclass(slots=True)
class Text:
    """A text with line lookups. Offsets are character offsets (``\\r\\n`` counts as two)."""

    text: str
    nl: str = ""  # the line break for new lines; detected from the text when not given
    starts: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.starts = [0, *(m.end() for m in re.finditer("\n", self.text))]
        self.nl = self.nl or ("\r\n" if "\r\n" in self.text else "\n")

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def line_start(self, offset: int) -> int:
        return self.starts[self.line_of(offset)]

    def line_end(self, offset: int) -> int:
        """Offset of the line break ending the line of ``offset`` (or the end of the text)."""
        line = self.line_of(offset)
        if line + 1 < len(self.starts):
            end = self.starts[line + 1] - 1
            return end - 1 if end > 0 and self.text[end - 1] == "\r" else end
        return len(self.text)

    def line(self, number: int) -> str:
        start = self.starts[number]
        end = self.line_end(start)
        return self.text[start:end]

    def lines_count(self) -> int:
        return len(self.starts)

    def offset(self, line: int, column: int) -> int:
        return self.starts[line] + column

    def column(self, offset: int) -> int:
        return offset - self.line_start(offset)

    def first_on_line(self, offset: int) -> bool:
        """Is only indentation before ``offset`` on its line?"""
        return self.text[self.line_start(offset) : offset].strip(" \t") == ""

    def after_line(self, offset: int) -> int:
        """Offset of the start of the next line (past the line break), or the end of the text."""
        line = self.line_of(offset)
        return self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)


def kind(node: Any) -> str:
    return "alias" if isinstance(node, AliasRef) else str(node.id)


def value_start(t: Text, node: Any) -> int:
    """Where the scalar's own text starts: past its ``&anchor`` and ``!tag`` properties."""
    pos: int = node.start_mark.index
    text = t.text
    while pos < len(text) and text[pos] in "&!":
        while pos < len(text) and text[pos] not in " \t\r\n":
            pos += 1
        while pos < len(text) and text[pos] in " \t":
            pos += 1
    return pos


def has_tag(t: Text, node: Any) -> bool:
    pos: int = node.start_mark.index
    text = t.text
    while pos < len(text) and text[pos] in "&!":
        if text[pos] == "!":
            return True
        while pos < len(text) and text[pos] not in " \t\r\n":
            pos += 1
        while pos < len(text) and text[pos] in " \t":
            pos += 1
    return False


def is_empty_null(node: Any) -> bool:
    return kind(node) == "scalar" and node.value == "" and node.style is None and str(node.tag).endswith(":null")


def _leading_spaces(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block_indent(lines: list[str], node: Any, header: str) -> int:
    """The content indentation of a block scalar whose body is ``lines`` (as ruamel's scanner finds it)."""
    first = next((i for i, line in enumerate(lines) if line.strip(" ")), None)
    if first is None:
        return max((len(line) for line in lines), default=0)
    if any(c.isdigit() for c in header):
        # An explicit indentation digit counts from the parent's indentation: read it off the value.
        value = str(node.value).replace("\a", "")
        text_line = next((v for v in value.split("\n") if v.strip(" ")), None)
        if text_line is not None:
            return _leading_spaces(lines[first]) - _leading_spaces(text_line)
    return max(_leading_spaces(line) if i == first else len(line) for i, line in enumerate(lines[: first + 1]))


def block_scalar_end(t: Text, node: Any, *, keep: bool | None = None) -> int:
    """End of the last content line of a block scalar (keep chomping: of the last kept blank line).

    A content line keeps its trailing spaces, and a line of spaces longer than the indentation is content.
    """
    start = value_start(t, node)
    header_end = t.line_end(start)
    end: int = node.end_mark.index
    header = t.text[start:header_end].split("#")[0].strip()
    body = t.text[header_end:end]
    if keep is None:
        keep = "+" in header
    if keep:
        # Every line break up to the end mark belongs to the value; stop before the final one.
        stripped = body.rstrip(" \t")
        if stripped.endswith("\n"):
            stripped = stripped[:-1]
            if stripped.endswith("\r"):
                stripped = stripped[:-1]
        return max(block_scalar_end(t, node, keep=False), header_end + len(stripped))  # not before content
    raw = body.split("\n")  # raw[0] is the header's "\r" (CRLF) or ""
    lines = [line.removesuffix("\r") for line in raw[1:]]
    indent = _block_indent(lines, node, header)
    pos = last = header_end + len(raw[0])
    for line, raw_line in zip(lines, raw[1:], strict=True):
        pos += 1  # past the "\n" before this line
        if len(line) > indent and not line[:indent].strip(" "):
            last = pos + len(line)
        pos += len(raw_line)
    return last if last > header_end + len(raw[0]) else header_end


def scalar_span(t: Text, node: Any) -> tuple[int, int]:
    start = value_start(t, node)
    if node.style in ("|", ">"):
        return start, block_scalar_end(t, node)
    return start, int(node.end_mark.index)


def colon_after(t: Text, key_node: Any) -> int:
    """Offset just past the ``:`` that follows a mapping key (``? key`` may have it on the next line).

    A key without a ``:`` (``{a, b: 1}``) gives the end of the key.
    """
    key_end = int(key_node.end) if isinstance(key_node, AliasRef) else int(key_node.end_mark.index)
    pos, text = key_end, t.text
    while pos < len(text):
        ch = text[pos]
        if ch == ":":
            return pos + 1
        if ch == "#":
            pos = t.line_end(pos)
        elif ch in " \t\r\n":
            pos += 1
        else:
            break
    return key_end


def dash_before(t: Text, item_start: int) -> int | None:
    """The ``-`` indicator before a block sequence item starting at ``item_start``."""
    pos = item_start - 1
    text = t.text
    while pos >= 0 and text[pos] in " \t\r\n":
        pos -= 1
    return pos if pos >= 0 and text[pos] == "-" else None


def content_end(t: Text, node: Any, *, owner_end: int) -> int:
    """End of the meaningful text of a node (no trailing blank lines or following comments).

    ``owner_end`` is where an empty value would sit (just past ``key:`` or ``-``).
    """
    k = kind(node)
    if k == "alias":
        return int(node.end)
    if k == "scalar":
        if is_empty_null(node):
            return owner_end
        return scalar_span(t, node)[1]
    if node.flow_style:
        return int(node.end_mark.index)
    if not node.value:
        return owner_end
    if k == "mapping":
        key_node, value_node = node.value[-1]
        return content_end(t, value_node, owner_end=colon_after(t, key_node))
    last = node.value[-1]
    dash = dash_before(t, last.start_mark.index if kind(last) != "alias" else last.start)
    return content_end(t, last, owner_end=(dash + 1) if dash is not None else int(node.end_mark.index))


def node_start(node: Any) -> int:
    return int(node.start) if isinstance(node, AliasRef) else int(node.start_mark.index)
