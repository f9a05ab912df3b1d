"""Where a node sits in its document, and finding nodes by field path."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from writeback.kube.paths import format_path
from writeback.kube.pathtypes import FieldPath, Index, Key, Select, scalar_text
from writeback.yaml.edit.errors import EditRefused
from writeback.yaml.edit.spans import Text, colon_after, dash_before, kind, node_start
from writeback.yaml.edit.trees import MERGE_TAG, AliasRef, construct, tag_of


@dataclass(frozen=True, slots=True, kw_only=True)
class Slot:
    """A node and its place: the container, the entry's key node or item index, and the owner end."""

    node: Any
    parent: Slot | None
    key_node: Any = None
    index: int | None = None
    owner_end: int  # just past "key:" or "-" (where an empty value would be written)
    flow: bool  # inside a flow collection
    path: FieldPath  # concrete: Select resolved to Index


@dataclass(frozen=True, slots=True, kw_only=True)
class Missing:
    """The walk stopped: ``slot`` has no child for ``path[at]``."""

    slot: Slot
    at: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """A file's indentation habits, for new block content."""

    step: int  # a nested mapping's indent relative to its key
    seq_offset: int  # a block sequence's dash column relative to its key (0: flush)


def refuse(source: str, path: FieldPath, reason: str) -> EditRefused:
    where = format_path(path) if path else "(document root)"
    return EditRefused(f"{source}: cannot edit {where}: {reason}")


def key_name(key_node: Any) -> str | None:
    if isinstance(key_node, AliasRef) or kind(key_node) != "scalar":
        return None
    return str(key_node.value)


def select_value(text: str) -> Any:
    """The value written for a selector key of a new list item: an integer if it looks like one."""
    return int(text) if re.fullmatch(r"-?(?:0|[1-9][0-9]*)", text) else text


def _select_matches(item: Any, seg: Select) -> bool:
    if isinstance(item, AliasRef) or kind(item) != "mapping":
        return False
    have: dict[str, Any] = {}
    for k, v in item.value:
        name = key_name(k)
        if name is not None and not isinstance(v, AliasRef) and kind(v) == "scalar":
            have[name] = construct(v)
    return all(name in have and scalar_text(have[name]) == value for name, value in seg.keys)


def _merge_entries(node: Any) -> list[tuple[Any, Any, set[str]]]:
    """The merge keys (``<<``) of a mapping: key node, value node, and the names each one brings in."""
    entries = []
    for k, v in node.value:
        if tag_of(k) == MERGE_TAG:
            data = construct(v) if not isinstance(v, AliasRef) else construct(v.target)
            names: set[str] = set()
            for src in data if isinstance(data, list) else [data]:
                if isinstance(src, dict):
                    names.update(str(scalar_text(x)) for x in src)
            entries.append((k, v, names))
    return entries


def _merged_keys(node: Any) -> set[str]:
    return set().union(*(names for _, _, names in _merge_entries(node)))


def overridden_merge(t: Text, node: Any, name: str) -> str | None:
    """The text of the merge key (``<<: *base``) that also brings ``name`` into mapping ``node``, if any."""
    for key_node, value_node, names in _merge_entries(node):
        if name in names:
            end = value_node.end if isinstance(value_node, AliasRef) else value_node.end_mark.index
            return " ".join(t.text[node_start(key_node) : end].split())
    return None


def child(t: Text, slot: Slot, seg: Key | Select | Index, *, source: str, full: FieldPath = ()) -> Slot | None:
    """The child slot of a mapping/sequence slot for ``seg``, or None when absent."""
    node = slot.node
    full = full or (*slot.path, seg)
    flow = slot.flow or bool(node.flow_style)
    if kind(node) == "mapping" and isinstance(seg, Key):
        for key_node, value_node in node.value:
            if tag_of(key_node) == MERGE_TAG and seg.name == "<<":
                raise refuse(source, full, "inside a merge key (<<)")
            if key_name(key_node) == seg.name:
                return Slot(
                    node=value_node,
                    parent=slot,
                    key_node=key_node,
                    owner_end=colon_after(t, key_node),
                    flow=flow,
                    path=(*slot.path, seg),
                )
        if seg.name in _merged_keys(node):
            raise refuse(source, full, "the value comes from a merge key (<<)")
        return None
    if kind(node) == "sequence" and isinstance(seg, Index | Select):
        if isinstance(seg, Index):
            idx = seg.index if seg.index < len(node.value) else None
        else:
            idx = next((i for i, item in enumerate(node.value) if _select_matches(item, seg)), None)
        if idx is None:
            return None
        item = node.value[idx]
        dash = None if flow else dash_before(t, node_start(item))
        return Slot(
            node=item,
            parent=slot,
            index=idx,
            owner_end=(dash + 1) if dash is not None else node_start(item),
            flow=flow,
            path=(*slot.path, Index(idx)),
        )
    where = format_path(slot.path) if slot.path else "the document"
    raise refuse(source, full, f"the path does not match the file: {where} is a {kind(node)}")


def check_plain(slot: Slot, *, source: str, full: FieldPath) -> None:
    """Refuse a node reached through or carrying an anchor or alias."""
    node = slot.node
    what = "the value" if len(slot.path) == len(full) else (format_path(slot.path) if slot.path else "the document")
    if isinstance(node, AliasRef):
        raise refuse(source, full, f"{what} is an alias (*name); the edit would change every alias")
    if node.anchor is not None:
        raise refuse(source, full, f"{what} carries the anchor &{node.anchor}; the edit would reach its aliases")


def walk(t: Text, root: Slot, path: FieldPath, *, source: str) -> Slot | Missing:
    slot = root
    for i, seg in enumerate(path):
        check_plain(slot, source=source, full=path)
        if kind(slot.node) == "scalar":
            return Missing(slot=slot, at=i)
        found = child(t, slot, seg, source=source, full=path)
        if found is None:
            return Missing(slot=slot, at=i)
        slot = found
    check_plain(slot, source=source, full=path)
    return slot


def detect_layout(roots: list[Any]) -> Layout:
    steps: Counter[int] = Counter()
    offsets: Counter[int] = Counter()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, AliasRef):
            continue
        if kind(node) == "sequence":
            stack.extend(node.value)
        elif kind(node) == "mapping":
            for k, v in node.value:
                stack.append(v)
                if isinstance(v, AliasRef) or isinstance(k, AliasRef) or kind(v) == "scalar" or v.flow_style:
                    continue
                if not v.value:
                    continue
                if v.start_mark.line == k.start_mark.line:
                    continue
                delta = v.start_mark.column - k.start_mark.column
                if kind(v) == "mapping" and delta > 0:
                    steps[delta] += 1
                elif kind(v) == "sequence" and delta >= 0:
                    offsets[delta] += 1
    step = steps.most_common(1)[0][0] if steps else 2
    offset = offsets.most_common(1)[0][0] if offsets else step
    return Layout(step=step, seq_offset=offset)
