"""Text splices for one edit: change a scalar, replace a value, add or remove an entry or item."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from writeback.kube.pathtypes import FieldPath
from writeback.yaml.edit.blocks import rewrite_block
from writeback.yaml.edit.deleting import deleted_lines
from writeback.yaml.edit.scalars import (
    block_lines,
    double_quoted,
    inline,
    is_collection,
    key_text,
    literal_lines,
    single_quoted_lines,
)
from writeback.yaml.edit.slots import Layout, Slot, refuse
from writeback.yaml.edit.spans import (
    CLEAR,
    Tail,
    Text,
    content_end,
    dash_before,
    has_tag,
    is_comment_line,
    is_empty_null,
    kind,
    node_start,
    scalar_span,
    tail_at,
    tail_from,
    value_start,
)
from writeback.yaml.edit.trees import AliasRef, walk_nodes


@dataclass(frozen=True, slots=True)
class Splice:
    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    splices: tuple[Splice, ...]
    containers: frozenset[int] = frozenset()  # ids of collections whose entries were added or removed


@dataclass(frozen=True, slots=True, kw_only=True)
class Editor:
    t: Text
    layout: Layout
    source: str
    roots: tuple[Any, ...] = ()  # the documents' root nodes
    literals: bool = True  # write multi-line strings as literal blocks where possible

    # ------------------------------------------------------------ helpers

    def end_of(self, slot: Slot) -> int:
        return content_end(self.t, slot.node, owner_end=slot.owner_end)

    def column(self, offset: int) -> int:
        return self.t.column(offset)

    def lines_text(self, lines: list[str]) -> str:
        return self.t.nl.join(lines)

    def tail(self, at: int) -> Tail | None:
        """What a literal block written to end at ``at`` must leave alone (None: write no literal blocks)."""
        return tail_at(self.t, at) if self.literals else None

    def _blocks(self, value: Any, *, indent: int, tail: Tail | None) -> list[str]:
        layout = self.layout
        return block_lines(
            value,
            indent=indent,
            step=layout.step,
            seq_offset=layout.seq_offset,
            literal=tail is not None,
            tail=tail or CLEAR,
        )

    def child_lines(self, value: Any, *, key_col: int, tail: Tail | None) -> list[str]:
        indent = key_col + (self.layout.step if isinstance(value, dict) else self.layout.seq_offset)
        return self._blocks(value, indent=indent, tail=tail)

    def item_lines(self, value: Any, *, dash_col: int, tail: Tail | None, item_indent: int = 2) -> list[str]:
        dash = " " * dash_col + "-" + " " * (item_indent - 1)
        if not is_collection(value):
            lit = literal_lines(value, indent=dash_col + item_indent, tail=tail) if tail is not None else None
            return [dash + lit[0], *lit[1:]] if lit else [dash + inline(value)]
        lines = self._blocks(value, indent=dash_col + item_indent, tail=tail)
        lines[0] = dash + lines[0][dash_col + item_indent :]
        return lines

    def entry_lines(self, name: Any, value: Any, *, col: int, tail: Tail | None) -> list[str]:
        head = " " * col + key_text(name) + ":"
        if is_collection(value):
            return [head, *self.child_lines(value, key_col=col, tail=tail)]
        lit = literal_lines(value, indent=col + self.layout.step, tail=tail) if tail is not None else None
        return [f"{head} {lit[0]}", *lit[1:]] if lit else [f"{head} {inline(value)}"]

    def content_indent(self, slot: Slot, start: int) -> int | None:
        """The indentation of new continuation lines of a value in block context (None in flow context)."""
        if slot.flow or slot.parent is None:
            return None
        if slot.key_node is not None:
            return self.column(node_start(slot.key_node)) + self.layout.step
        dash = dash_before(self.t, start)
        return None if dash is None else self.column(dash) + 2

    def plain_to_literal(self, slot: Slot, value: Any, start: int, end: int) -> Change | None:
        """A plain scalar in block context that becomes multi-line: write a literal block."""
        t = self.t
        indent = self.content_indent(slot, start)
        tail = self.tail(end)  # a trailing comment or spaces would join the block's content
        lit = literal_lines(value, indent=indent, tail=tail) if indent is not None and tail is not None else None
        if lit is None:
            return None
        return Change(splices=(Splice(start, end, lit[0] + t.nl + t.nl.join(lit[1:])),))

    # ------------------------------------------------------------ values

    def set_scalar(self, slot: Slot, value: Any) -> Change:
        """Change a scalar node to a scalar (or empty collection) ``value``, keeping its style."""
        node, t = slot.node, self.t
        if has_tag(t, node):
            raise refuse(self.source, slot.path, "the value has an explicit tag (!tag); not edited")
        if is_empty_null(node):
            if slot.parent is None:
                raise refuse(self.source, slot.path, "the document is empty")
            return Change(splices=(self._fill_empty(slot, value),))
        start, end = scalar_span(t, node)
        if node.style in ("|", ">") and isinstance(value, str):
            block = rewrite_block(t, slot, value, step=self.layout.step)
            if block is not None:
                return Change(splices=(Splice(*block),))
            return Change(splices=(Splice(start, end, double_quoted(value)),))
        if node.style is None:
            literal = self.plain_to_literal(slot, value, start, end)
            if literal is not None:
                return literal
        if node.style == "'" and isinstance(value, str) and "\n" in value:
            indent = self.content_indent(slot, start)
            lines = single_quoted_lines(value) if indent is not None else None
            if indent is not None and lines is not None:
                text = t.nl.join([lines[0], *((" " * indent + line) if line else "" for line in lines[1:])])
                return Change(splices=(Splice(start, end, text),))
        return Change(splices=(Splice(start, end, inline(value, style=node.style, flow=slot.flow)),))

    def _keep_anchors(self, slot: Slot) -> None:
        """Refuse to delete an anchor that an alias outside the deleted value still uses."""
        inside = list(walk_nodes(slot.node))
        anchored = {id(n) for n in inside if not isinstance(n, AliasRef) and n.anchor is not None}
        if not anchored:
            return
        inside_ids = {id(n) for n in inside}
        for root in self.roots:
            for node in walk_nodes(root):
                if isinstance(node, AliasRef) and id(node.target) in anchored and id(node) not in inside_ids:
                    name = node.target.anchor
                    raise refuse(self.source, slot.path, f"it holds the anchor &{name}, which *{name} still uses")

    def _fill_empty(self, slot: Slot, value: Any) -> Splice:
        """Write a value where there is none (``key:``, ``-``, or a flow key without ``:``)."""
        at = slot.owner_end
        sep = " " if self.t.text[at - 1 : at] in (":", "-") else ": "
        return Splice(at, at, sep + inline(value, flow=slot.flow))

    def replace(self, slot: Slot, value: Any) -> Change:
        """Replace any value with ``value`` (a structure, or a scalar over a collection)."""
        node, t = slot.node, self.t
        if slot.parent is None:
            raise refuse(self.source, slot.path, "cannot replace a whole document")
        self._keep_anchors(slot)
        if kind(node) == "scalar" and has_tag(t, node):
            raise refuse(self.source, slot.path, "the value has an explicit tag (!tag); not edited")
        flow_node = kind(node) != "scalar" and bool(node.flow_style)
        if slot.flow or flow_node or not is_collection(value):
            if kind(node) == "scalar":
                if is_empty_null(node):
                    return Change(splices=(self._fill_empty(slot, value),))
                start, end = scalar_span(t, node)
                return Change(splices=(Splice(start, end, inline(value, flow=slot.flow)),))
            if flow_node:
                return Change(splices=(Splice(node_start(node), node.end_mark.index, inline(value, flow=slot.flow)),))
            return Change(splices=(Splice(slot.owner_end, self.end_of(slot), " " + inline(value)),))
        end = self.end_of(slot)
        if slot.key_node is None:
            dash_col = self.column(slot.owner_end - 1)
            lines = self.item_lines(value, dash_col=dash_col, tail=self.tail(end))
            lines[0] = lines[0][dash_col + 1 :]
            return Change(splices=(Splice(slot.owner_end, end, self.lines_text(lines)),))
        key_col = self.column(node_start(slot.key_node))
        line_end = t.line_end(end)
        if kind(node) == "scalar" and t.text[end:line_end].strip(" \t").startswith("#"):
            # Keep the trailing comment on the key's line; the new block goes below it.
            lines = self.child_lines(value, key_col=key_col, tail=self.tail(line_end))
            return Change(
                splices=(
                    Splice(slot.owner_end, end, ""),
                    Splice(line_end, line_end, t.nl + self.lines_text(lines)),
                )
            )
        lines = self.child_lines(value, key_col=key_col, tail=self.tail(end))
        return Change(splices=(Splice(slot.owner_end, end, t.nl + self.lines_text(lines)),))

    # ------------------------------------------------------------ adding

    def add_key(self, slot: Slot, name: str, value: Any) -> Change:
        node, t = slot.node, self.t
        touched = frozenset({id(node)})
        if node.flow_style or not node.value:
            return Change(
                splices=(self._flow_insert(slot, f"{key_text(name, flow=True)}: {inline(value, flow=True)}"),),
                containers=touched,
            )
        first_key = node_start(node.value[0][0])
        before = t.text[t.line_start(first_key) : first_key]
        col = self.column(first_key)
        if before.strip(" \t") == "?":  # an explicit "? key": entries start at the "?"
            col = len(before) - len(before.lstrip(" "))
        at = t.line_end(self.end_of(slot))
        if self._open_block_at_eof(node, at):
            # A line break after the last block scalar would change its value: insert before the last key.
            last_key = node_start(node.value[-1][0])
            if not t.first_on_line(last_key):
                raise refuse(self.source, slot.path, "a block scalar ends the file without a final newline")
            if len(node.value) > 1:
                prev_key, prev_value = node.value[-2]
                floor = t.line_of(content_end(t, prev_value, owner_end=node_start(prev_key)))
            else:
                floor = t.line_of(slot.owner_end) if slot.parent is not None else t.line_of(last_key)
            at = t.starts[self._own_comments_start(t.line_of(last_key), col, floor)]
            tail = tail_from(t, t.line_of(at)) if self.literals else None  # the entry goes before these lines
            lines = self.entry_lines(name, value, col=col, tail=tail)
            return Change(splices=(Splice(at, at, self.lines_text(lines) + t.nl),), containers=touched)
        text = t.nl + self.lines_text(self.entry_lines(name, value, col=col, tail=self.tail(at)))
        return Change(splices=(Splice(at, at, text),), containers=touched)

    def _open_block_at_eof(self, node: Any, at: int) -> bool:
        """Does the collection end the file (no final newline) with a block scalar that keeps its line break?"""
        if at < len(self.t.text) or self.t.text.endswith("\n"):
            return False
        while kind(node) in ("mapping", "sequence") and not node.flow_style and node.value:
            node = node.value[-1][1] if kind(node) == "mapping" else node.value[-1]
        if kind(node) != "scalar" or node.style not in ("|", ">"):
            return False
        header = self.t.text[value_start(self.t, node) : self.t.line_end(value_start(self.t, node))]
        return "-" not in header.split("#")[0]

    def append_item(self, slot: Slot, value: Any) -> Change:
        node, t = slot.node, self.t
        touched = frozenset({id(node)})
        if node.flow_style or not node.value:
            return Change(splices=(self._flow_insert(slot, inline(value, flow=True)),), containers=touched)
        first = node_start(node.value[0])
        dash = dash_before(t, first)
        if dash is None:
            raise refuse(self.source, slot.path, "unsupported sequence layout")
        same_line = t.line_of(dash) == t.line_of(first)
        item_indent = first - dash if same_line and kind(node.value[0]) == "mapping" else 2
        at = t.line_end(self.end_of(slot))
        if self._open_block_at_eof(node, at):
            raise refuse(self.source, slot.path, "a block scalar ends the file without a final newline")
        lines = self.item_lines(value, dash_col=self.column(dash), item_indent=item_indent, tail=self.tail(at))
        text = t.nl + self.lines_text(lines)
        return Change(splices=(Splice(at, at, text),), containers=touched)

    def _flow_insert(self, slot: Slot, text: str) -> Splice:
        node = slot.node
        if node.value:
            last = node.value[-1]
            last_node = last[1] if kind(node) == "mapping" else last
            end = content_end(self.t, last_node, owner_end=node_start(last_node))
            return Splice(end, end, ", " + text)
        close = int(node.end_mark.index) - 1
        if self.t.text[close] not in "}]":
            raise refuse(self.source, slot.path, "unsupported empty collection")
        return Splice(close, close, text)

    # ------------------------------------------------------------ removing

    def _own_comments_start(self, line: int, col: int, floor: int) -> int:
        t = self.t
        while line - 1 > floor:
            above = t.line(line - 1)
            if not is_comment_line(above) or len(above) - len(above.lstrip(" ")) != col:
                break
            line -= 1
        return line

    def _delete_lines(self, first_line: int, last_offset: int, path: FieldPath) -> Splice:
        start, end = deleted_lines(self.t, self.roots, first_line, last_offset, source=self.source, path=path)
        return Splice(start, end, "")

    def _flow_remove_last(self, prev: Any, start: int, end: int) -> tuple[Splice, ...]:
        """Remove the last entry of a flow collection, keeping the previous entry's comments."""
        t = self.t
        prev_end = content_end(t, prev, owner_end=node_start(prev))
        comma = prev_end
        while comma < start and t.text[comma] in " \t":
            comma += 1
        if t.text[comma] != "," or "\n" not in t.text[comma:start]:
            return (Splice(prev_end, end, ""),)
        rest = t.text[end : t.line_end(end)].strip(" \t")
        if t.first_on_line(start) and (not rest or rest.startswith("#")):
            return (Splice(comma, comma + 1, ""), Splice(t.line_start(start), t.after_line(end), ""))
        return (Splice(comma, comma + 1, ""), Splice(start, end, ""))

    def remove(self, slot: Slot) -> Change:
        parent = slot.parent
        if parent is None:
            raise refuse(self.source, slot.path, "cannot remove a whole document")
        self._keep_anchors(slot)
        container, t = parent.node, self.t
        touched = frozenset({id(container)})
        entries = container.value
        i = slot.index if slot.index is not None else next(n for n, (k, _) in enumerate(entries) if k is slot.key_node)
        mapping = kind(container) == "mapping"
        start = node_start(slot.key_node) if mapping else node_start(slot.node)
        end = self.end_of(slot)
        if parent.flow or container.flow_style:
            if len(entries) == 1:
                return Change(splices=(Splice(start, end, ""),), containers=touched)
            if i < len(entries) - 1:
                nxt = entries[i + 1][0] if mapping else entries[i + 1]
                return Change(splices=(Splice(start, node_start(nxt), ""),), containers=touched)
            prev = entries[i - 1][1] if mapping else entries[i - 1]
            return Change(splices=self._flow_remove_last(prev, start, end), containers=touched)
        if not mapping:
            dash = dash_before(t, start)
            if dash is None:
                raise refuse(self.source, slot.path, "unsupported sequence layout")
            start = dash
        col = self.column(start)
        if i > 0:
            prev = entries[i - 1]
            prev_slot_end = content_end(t, prev[1] if mapping else prev, owner_end=start)
            floor = t.line_of(prev_slot_end)
        elif parent.parent is None:
            floor = t.line_of(start)  # never take a file's header comments
        else:
            floor = t.line_of(parent.owner_end)
        first_line = t.line_of(start)
        if t.first_on_line(start):
            first_line = self._own_comments_start(first_line, col, floor)
        empty = "{}" if mapping else "[]"
        if len(entries) == 1:
            if parent.key_node is not None and t.first_on_line(start):
                at = parent.owner_end
                return Change(
                    splices=(Splice(at, at, " " + empty), self._delete_lines(first_line, end, slot.path)),
                    containers=touched,
                )
            return Change(splices=(Splice(start, end, empty),), containers=touched)
        if t.first_on_line(start):
            return Change(splices=(self._delete_lines(first_line, end, slot.path),), containers=touched)
        if i != 0:
            raise refuse(self.source, slot.path, "unsupported layout (entry not at the start of its line)")
        # The first entry after "- " on the dash line: pull the next entry up when it follows directly,
        # else leave a bare "-" (the item's content then starts on the next line).
        following = node_start(entries[1][0] if mapping else entries[1])
        if not mapping:
            following = dash_before(t, following) or following
        if t.line_of(following) == t.line_of(end) + 1:
            return Change(splices=(Splice(start, following, ""),), containers=touched)
        cut = start
        while cut > 0 and t.text[cut - 1] in " \t":
            cut -= 1
        return Change(splices=(Splice(cut, t.line_end(end), ""),), containers=touched)
