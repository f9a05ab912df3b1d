"""Setting a block scalar (``|``, ``>``) to a string: where its text is, and the new text in the same style."""

from __future__ import annotations

from writeback.yaml.edit.scalars import block_scalar
from writeback.yaml.edit.slots import Slot
from writeback.yaml.edit.spans import Text, block_indent, block_scalar_end, node_start, tail_from, value_start


def rewrite_block(t: Text, slot: Slot, value: str, *, step: int) -> tuple[int, int, str] | None:
    """``(start, end, text)`` replacing the block scalar of ``slot`` with ``value`` in the same style: the same
    indicator, indentation (and digit) and header comment. None when ``value`` cannot be such a block here.

    Only the scalar's span changes (``iter_scalars``); the blank lines after a ``|`` or ``|-`` block stay.
    ``step`` is the file's indentation step, for a block that has no content line yet.
    """
    node = slot.node
    start = value_start(t, node)
    header_end = t.line_end(start)
    header = t.text[start:header_end]
    indicators = header.split("#")[0].rstrip(" \t")
    comment = header[len(indicators) :]
    digit = "".join(c for c in indicators if c.isdigit())
    end = block_scalar_end(t, node, keep=False)  # under | and |- the blank lines after it do not count
    # The scanner's indentation is the parent's plus the digit: a mapping's column, a list's dash column.
    parent = t.column(node_start(slot.parent.node)) if slot.parent is not None else -1
    base = max(parent + 1, 1) - 1
    indent = block_indent(t, node)
    if end == header_end:  # no content line
        if digit:
            indent = base + int(digit)
        else:  # deeper than every line of spaces after the header, which would otherwise become content
            owner_col = t.column(node_start(slot.key_node)) if slot.key_node is not None else t.column(start)
            spaces = tail_from(t, t.line_of(header_end) + 1).blank_width
            indent = max(indent or 0, spaces, owner_col + step)
    if indent is None:
        return None
    first_line = next((line for line in value.split("\n") if line), "")
    if not digit and first_line.startswith(" "):
        digit = str(indent - base) if 1 <= indent - base <= 9 else ""  # content starting with spaces needs one
    built = block_scalar(value, indicator=indicators[0], indent_digit=digit, indent=indent, nl=t.nl)
    if built is None:
        return None
    head, content = built
    if "+" in head:
        # Under |+ every blank line after the content is part of the value.
        keep_end = block_scalar_end(t, node, keep=True)
        blanks = t.nl * t.text[end:keep_end].count("\n")
        if blanks and content.endswith(blanks):
            content = content[: len(content) - len(blanks)]  # they stay, and fewer are written
        elif "+" in indicators:
            end = keep_end  # they are in the span of the old |+ block: rewrite them
        elif blanks:
            return None  # more blank lines follow the span than the value has line breaks to end with
    if end >= len(t.text) and value.endswith("\n"):
        return None  # the final line break would be missing at the end of the file
    return start, end, head + comment + t.nl + content
