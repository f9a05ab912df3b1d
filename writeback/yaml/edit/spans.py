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


def _block_parts(t: Text, node: Any) -> tuple[int, str, list[str]]:
    """A block scalar's header end, its indicators (``|2-``) and its body lines (without line breaks)."""
    start = value_start(t, node)
    header_end = t.line_end(start)
    indicators = t.text[start:header_end].split("#")[0].strip()
    lines = [line.removesuffix("\r") for line in t.text[header_end : node.end_mark.index].split("\n")[1:]]
    return header_end, indicators, lines


def _block_indent(lines: list[str], node: Any, indicators: str) -> int | None:
    """The content indentation of a block scalar whose body is ``lines`` (as ruamel's scanner finds it).

    None when an indentation indicator sets it and no line has content: it then counts from the parent's
    indentation, which the text of the scalar does not tell.
    """
    if any(c.isdigit() for c in indicators):
        # The first non-empty line of the value is the first body line deeper than the indentation; every body
        # line before it is a blank line, read as one empty line of the value.
        values = str(node.value).replace("\a", "").split("\n")
        m = next((i for i, v in enumerate(values) if v), None)
        if m is None or m >= len(lines):
            return None
        return _leading_spaces(lines[m]) - _leading_spaces(values[m])
    first = next((i for i, line in enumerate(lines) if line.strip(" ")), None)
    if first is None:
        return max((len(line) for line in lines), default=0)
    return max(_leading_spaces(line) if i == first else len(line) for i, line in enumerate(lines[: first + 1]))


def block_indicators(t: Text, node: Any) -> str:
    """A block scalar's header indicators: ``|``, ``>-``, ``|2+`` (without its comment)."""
    return _block_parts(t, node)[1]


def block_indent(t: Text, node: Any) -> int | None:
    """The content indentation of a block scalar node (None: an indentation indicator and no content line)."""
    _, indicators, lines = _block_parts(t, node)
    return _block_indent(lines, node, indicators)


def block_scalar_end(t: Text, node: Any, *, keep: bool | None = None) -> int:
    """End of the last content line of a block scalar (keep chomping: of the last kept blank line).

    A content line keeps its trailing spaces, and a line of spaces longer than the indentation is content.
    """
    header_end, indicators, lines = _block_parts(t, node)
    end: int = node.end_mark.index
    body = t.text[header_end:end]
    if keep is None:
        keep = "+" in indicators
    if keep:
        # Every line break up to the end mark belongs to the value; stop before the final one.
        stripped = body.rstrip(" \t")
        if stripped.endswith("\n"):
            stripped = stripped[:-1]
            if stripped.endswith("\r"):
                stripped = stripped[:-1]
        return max(block_scalar_end(t, node, keep=False), header_end + len(stripped))  # not before content
    raw = body.split("\n")  # raw[0] is the header's "\r" (CRLF) or ""
    indent = _block_indent(lines, node, indicators)
    pos = last = header_end + len(raw[0])
    for line, raw_line in zip(lines, raw[1:], strict=True):
        pos += 1  # past the "\n" before this line
        if indent is not None and len(line) > indent and not line[:indent].strip(" "):
            last = pos + len(line)
        pos += len(raw_line)
    return last if last > header_end + len(raw[0]) else header_end


def block_value_end(t: Text, node: Any) -> int:
    """Where the text that makes a block scalar's value ends: past its content and the line breaks its chomping
    keeps (``|-``: none; ``|``: the one after the content; ``|+``: every one up to the end of the node)."""
    header_end, indicators, _ = _block_parts(t, node)
    content_end = block_scalar_end(t, node, keep=False)
    if "-" in indicators or (content_end == header_end and "+" not in indicators):
        return content_end
    if "+" in indicators:
        return max(int(node.end_mark.index), content_end)
    return t.after_line(content_end)


@dataclass(frozen=True, slots=True, kw_only=True)
class Tail:
    """What follows the place where new text ends, as a block scalar written last in that text would read it."""

    joins: bool = False  # text follows on the same line, or no line break follows (the end of the file)
    blank_width: int = -1  # the widest line of only spaces before the next line with text (-1: no such line)
    blank_breaks: bool = False  # some of those lines end in a line break (the last line of a file may not)
    next_indent: int = -1  # the indentation of the next line with text (-1: none)

    def lets_block_end(self, indent: int, *, keep: bool) -> bool:
        """Does a block scalar with content at ``indent`` end here, taking none of the text after it?

        A line with text at ``indent`` or deeper, or a line of more spaces, would be content. Under ``|+`` (keep)
        the line break of every blank line after it would be part of the value.
        """
        if self.joins or self.next_indent >= indent or self.blank_width > indent:
            return False
        return not (keep and self.blank_breaks)


CLEAR = Tail()  # a line with less indentation follows directly: nothing for a block scalar to take


def tail_from(t: Text, line: int) -> Tail:
    """The lines from ``line`` on, as they would follow a block scalar ending just before them."""
    width, breaks = -1, False
    for number in range(line, t.lines_count()):
        text = t.line(number)
        if text.strip(" "):
            return Tail(blank_width=width, blank_breaks=breaks, next_indent=_leading_spaces(text))
        if number + 1 < t.lines_count():
            width, breaks = max(width, len(text)), True
        elif text:  # the last line of a file without a final newline
            width = max(width, len(text))
    return Tail(blank_width=width, blank_breaks=breaks)


def tail_at(t: Text, at: int) -> Tail:
    """What follows offset ``at`` for new text ending there (then the rest of its line, then the next lines)."""
    if t.text[at : t.line_end(at)] or t.line_end(at) == len(t.text):
        return Tail(joins=True)
    return tail_from(t, t.line_of(at) + 1)


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
