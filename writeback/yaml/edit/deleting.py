"""Deleting the lines of an entry: where the deletion starts and ends, so that the block scalar before it keeps
its value and a missing final newline stays missing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from writeback.kube.pathtypes import FieldPath
from writeback.yaml.edit.slots import refuse
from writeback.yaml.edit.spans import (
    Text,
    block_indent,
    block_indicators,
    block_value_end,
    kind,
    node_start,
    scalar_span,
    tail_from,
)
from writeback.yaml.edit.trees import walk_nodes


def deleted_lines(
    t: Text, roots: tuple[Any, ...], first_line: int, last_offset: int, *, source: str, path: FieldPath
) -> tuple[int, int]:
    """``(start, end)`` of the text to delete for the lines from ``first_line`` to the line of ``last_offset``.

    At the end of a file without a final newline the line break before them goes too (and the empty lines
    before it, which would leave one at the end), unless it is part of a block scalar's value. Raises
    EditRefused when the block scalar before them would take the lines after them as its own.
    """
    start = t.starts[first_line]
    end = _clear_of_block_before(t, roots, start, t.after_line(last_offset), source=source, path=path)
    if end >= len(t.text) and not t.text.endswith("\n") and first_line > 0:
        floor = max((e for e in (block_value_end(t, n) for n in _blocks(roots)) if e <= start), default=0)
        line = first_line - 1
        cut = t.line_end(t.starts[line])
        while not t.line(line) and line > 0 and cut >= floor:
            line -= 1
            cut = t.line_end(t.starts[line])
        if cut >= floor:
            start = cut
    return start, end


def _blocks(roots: tuple[Any, ...]) -> Iterator[Any]:
    for root in roots:
        for node in walk_nodes(root):
            if kind(node) == "scalar" and node.style in ("|", ">"):
                yield node


def _clear_of_block_before(
    t: Text, roots: tuple[Any, ...], start: int, end: int, *, source: str, path: FieldPath
) -> int:
    """The end of a deletion ``[start, end)`` after which the block scalar just before it takes none of the lines
    that follow (a ``|+`` block would take blank lines, any block deeper ones): the file's blank tail goes with
    the deletion; other lines it would take make the removal refused."""
    before = _block_before(t, roots, start)
    if before is None or end >= len(t.text):
        return end
    node, indent = before
    tail = tail_from(t, t.line_of(end))
    if tail.lets_block_end(indent, keep="+" in block_indicators(t, node)):
        return end
    if tail.next_indent < 0:
        return len(t.text)  # only lines of spaces follow, to the end of the file
    raise refuse(source, path, "the block scalar before it would take the lines after it as its own")


def _block_before(t: Text, roots: tuple[Any, ...], start: int) -> tuple[Any, int] | None:
    """The block scalar that ends just before ``start`` (only blank lines between), and its indentation."""
    for node in _blocks(roots):
        end = scalar_span(t, node)[1]
        if end <= start and not t.text[end:start].strip(" \t\r\n"):
            header_line = t.line(t.line_of(node_start(node)))
            floor = len(header_line) - len(header_line.lstrip(" ")) + 1  # deeper than its key or dash
            return node, max(block_indent(t, node) or 0, floor)
    return None
