"""``apply_edits``: resolve edits to splices of the original text, apply them, verify the result."""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, Select
from writeback.yaml.edit.errors import EditRefused, VerifyError
from writeback.yaml.edit.readback import nest, remove_path, set_path, verify
from writeback.yaml.edit.slots import Layout, Missing, Slot, detect_layout, key_name, overridden_merge, refuse, walk
from writeback.yaml.edit.spans import Text, kind
from writeback.yaml.edit.structures import Change, Editor, Splice
from writeback.yaml.edit.trees import MERGE_TAG, ParsedDoc, compose, construct, same, tag_of


@dataclass(frozen=True, kw_only=True)
class Edit:
    """Set (``value``) or remove (``value`` is ABSENT) the field at ``path`` of one document."""

    document: int
    path: FieldPath
    value: Any = ABSENT


@dataclass(frozen=True, slots=True)
class _Expand:
    edits: tuple[Edit, ...]


_NOOP = Change(splices=())


def _root(doc: ParsedDoc) -> Slot:
    return Slot(node=doc.root, parent=None, owner_end=doc.start, flow=False, path=())


def _expand(slot: Slot, edit: Edit, *, source: str) -> _Expand:
    """Setting a mapping (sequence) over a mapping (sequence): edit entry by entry."""
    node, value, base = slot.node, edit.value, slot.path
    subs: list[Edit] = []
    if isinstance(value, dict):
        if any(tag_of(k) == MERGE_TAG for k, _ in node.value):
            raise refuse(source, base, "the mapping has a merge key (<<)")
        names = {k if isinstance(k, str) else str(k): v for k, v in value.items()}
        present = [key_name(k) for k, _ in node.value]
        subs = [Edit(document=edit.document, path=(*base, Key(n)), value=v) for n, v in names.items()]
        subs += [
            Edit(document=edit.document, path=(*base, Key(n))) for n in present if n is not None and n not in names
        ]
    else:
        have = len(node.value)
        subs = [Edit(document=edit.document, path=(*base, Index(i)), value=v) for i, v in enumerate(value)]
        subs += [Edit(document=edit.document, path=(*base, Index(i))) for i in range(have - 1, len(value) - 1, -1)]
    return _Expand(tuple(subs))


def _resolve(editor: Editor, docs: Sequence[ParsedDoc], edit: Edit) -> tuple[Change | _Expand, Slot]:
    """The change for ``edit`` and the slot where its walk ended (the target, or where it went missing)."""
    if not 0 <= edit.document < len(docs):
        raise refuse(editor.source, edit.path, f"the file has no document {edit.document}")
    found = walk(editor.t, _root(docs[edit.document]), edit.path, source=editor.source)
    return _change(editor, found, edit), found.slot if isinstance(found, Missing) else found


def _change(editor: Editor, found: Slot | Missing, edit: Edit) -> Change | _Expand:
    source = editor.source
    if edit.value is ABSENT:
        if isinstance(found, Missing):
            raise refuse(source, edit.path, "the path is not in the file (nothing to remove)")
        if found.parent is not None and found.key_node is not None and kind(found.parent.node) == "mapping":
            merge = overridden_merge(editor.t, found.parent.node, str(key_name(found.key_node)))
            if merge is not None:
                raise refuse(
                    source,
                    edit.path,
                    f"the key overrides the merge key `{merge}`; removing it would bring the merged value back",
                )
        return editor.remove(found)
    if isinstance(found, Missing):
        slot, at = found.slot, found.at
        seg, rest = edit.path[at], edit.path[at + 1 :]
        if kind(slot.node) == "scalar":
            return editor.replace(slot, nest(edit.path[at:], edit.value, source=source, full=edit.path))
        if isinstance(seg, Key):
            return editor.add_key(slot, seg.name, nest(rest, edit.value, source=source, full=edit.path))
        first: Select | Index = Index(0) if isinstance(seg, Index) else seg
        if isinstance(seg, Index) and seg.index != len(slot.node.value):
            raise refuse(source, edit.path, "list index out of range")
        return editor.append_item(slot, nest((first, *rest), edit.value, source=source, full=edit.path)[0])
    slot, value = found, edit.value
    node_kind = kind(slot.node)
    if node_kind == "scalar":
        if not (isinstance(value, dict | list) and value):
            if same(construct(slot.node), value):
                return _NOOP
            return editor.set_scalar(slot, value)
        return editor.replace(slot, value)
    if (node_kind == "mapping" and isinstance(value, dict)) or (node_kind == "sequence" and isinstance(value, list)):
        return _NOOP if same(construct(slot.node), value) else _expand(slot, edit, source=source)
    return editor.replace(slot, value)


@dataclass(slots=True)
class _Batch:
    """Splices resolved against one parse of the text, and what they change."""

    splices: list[Splice] = field(default_factory=list)
    modified: set[int] = field(default_factory=set)  # ids of nodes replaced or removed
    grown: set[int] = field(default_factory=set)  # ids of collections that get entries added or removed
    within: set[int] = field(default_factory=set)  # ids of the nodes that hold a pending edit (and its own node)

    def conflicts(self, change: Change, slot: Slot, edit: Edit) -> bool:
        """Would ``change`` (resolved on the same parse) depend on or collide with this batch?"""
        chain = _chain(slot)
        if any(id(s.node) in self.modified for s in chain) or id(slot.node) in self.grown:
            return True
        if _replaces(change, edit) and id(slot.node) in self.within:
            return True  # it replaces a value that a pending edit changes inside: apply that first, then replace
        if any(id(s.node) in self.grown and kind(s.node) == "sequence" for s in chain):
            return True  # positions in that list may have shifted
        if edit.value is ABSENT and slot.parent is not None and id(slot.parent.node) in self.grown:
            return True
        return any(_collide(s, b) for s in change.splices for b in self.splices)

    def add(self, change: Change, slot: Slot, edit: Edit) -> None:
        self.splices.extend(change.splices)
        self.grown |= change.containers
        self.within |= {id(s.node) for s in _chain(slot)}
        if _replaces(change, edit):
            self.modified.add(id(slot.node))


def _chain(slot: Slot) -> list[Slot]:
    """``slot`` and the slots that hold it, up to the document's root."""
    chain = []
    at: Slot | None = slot
    while at is not None:
        chain.append(at)
        at = at.parent
    return chain


def _replaces(change: Change, edit: Edit) -> bool:
    """Does ``change`` replace or remove the node of its slot (rather than add entries to it)?"""
    return edit.value is ABSENT or bool(change.splices and not change.containers)


def _collide(a: Splice, b: Splice) -> bool:
    """Do two splices of one text overlap or touch? An insertion just past a replaced value does not collide:
    it is applied first (splices go from the end of the text), so it stays after the new value."""
    if a.start == a.end == b.end > b.start or b.start == b.end == a.end > a.start:
        return False
    return a.start <= b.end and b.start <= a.end


def _splice(text: str, splices: list[Splice]) -> str:
    out = text
    for s in sorted(splices, key=lambda s: (s.start, s.end), reverse=True):
        out = out[: s.start] + s.text + out[s.end :]
    return out


def apply_edits(text: str, edits: Sequence[Edit], *, source: str) -> str:
    """Apply ``edits`` by splicing ``text``; every byte outside the edited values stays as it was.

    Raises EditRefused (anchor/alias, merge key, unsupported node, missing path) and
    VerifyError (the result does not read back as intended in YAML 1.2 or 1.1).
    """
    if not edits:
        return text
    docs = compose(text, source=source)
    original = [construct(d.root) for d in docs]
    expected = copy.deepcopy(original)
    for edit in edits:
        if not 0 <= edit.document < len(expected):
            raise refuse(source, edit.path, f"the file has no document {edit.document}")
        if edit.value is ABSENT:
            if not edit.path or not remove_path(expected[edit.document], edit.path):
                raise refuse(source, edit.path, "the path is not in the file (nothing to remove)")
        else:
            expected[edit.document] = set_path(expected[edit.document], edit.path, edit.value, source=source)
    layout = detect_layout([d.root for d in docs])
    written = [(e.document, e.path) for e in edits if e.value is not ABSENT]

    def checked(after: str) -> str:
        verify(before=text, after=after, expected=expected, original=original, written=written, source=source)
        return after

    try:
        current = _splice_all(text, edits, layout=layout, source=source, literals=True)
    except EditRefused:
        # A literal block written by one edit can make a later removal of the batch refused (the block would
        # take the lines after the removed entry): write multi-line strings quoted. Other refusals come back.
        return checked(_splice_all(text, edits, layout=layout, source=source, literals=False))
    try:
        return checked(current)
    except VerifyError:
        # A new literal block can read what follows it differently: write multi-line strings quoted.
        fallback = _splice_all(text, edits, layout=layout, source=source, literals=False)
        if fallback == current:
            raise
        return checked(fallback)


def _splice_all(text: str, edits: Sequence[Edit], *, layout: Layout, source: str, literals: bool) -> str:
    """Resolve and apply every edit; edits that depend on earlier ones see their results."""
    nl = Text(text).nl
    queue: deque[Edit] = deque(edits)
    current = text
    while queue:
        docs = compose(current, source=source)
        roots = tuple(d.root for d in docs)
        editor = Editor(t=Text(current, nl=nl), layout=layout, source=source, roots=roots, literals=literals)
        batch = _Batch()
        while queue:
            try:
                result, slot = _resolve(editor, docs, queue[0])
            except EditRefused:
                if batch.splices:
                    break  # it may depend on the pending splices: apply them and try again
                raise
            if isinstance(result, _Expand):
                if batch.splices and batch.conflicts(_NOOP, slot, queue[0]):
                    break  # expand against the text with the pending splices applied
                queue.popleft()
                queue.extendleft(reversed(result.edits))
                continue
            if batch.splices and batch.conflicts(result, slot, queue[0]):
                break
            batch.add(result, slot, queue.popleft())
        current = _splice(current, batch.splices)
    return current


__all__ = ["Edit", "EditRefused", "apply_edits"]
