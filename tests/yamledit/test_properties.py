"""Property-based: random YAML files with comments and mixed styles, random edits, same invariants as the corpus."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import yaml as pyyaml
from hypothesis import event, given
from hypothesis import strategies as st

from tests.fuzzing import fuzz
from tests.yamledit.generating import Rec, Rendered, documents, layouts, render, scalars, values
from tests.yamledit.support import kept_in_order, outside_bytes, same_line_endings, set_at, spans_of
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key
from writeback.yaml.edit import Edit, EditRefused, apply_edits, iter_scalars, load_documents

_OPEN_END = "a block scalar ends the file without a final newline"
_TAKEN = "the block scalar before it would take the lines after it as its own"


def _rendered(data: st.DataObject) -> Rendered:
    docs = data.draw(documents())
    layout = data.draw(layouts())
    picks = data.draw(st.lists(st.integers(0, 11), min_size=1, max_size=12))
    rendered = render(docs, layout, picks)
    assert [d.data for d in load_documents(rendered.text, source="gen.yaml")] == rendered.data, rendered.text
    return rendered


def _apply(text: str, edits: list[Edit]) -> str | None:
    """``apply_edits``, or None for the refusals docs/yamledit.md names in its Limits that these files can meet:
    adding after a block scalar that ends a file without a final newline (a line break would change its value),
    and removing an entry whose following lines the block scalar before it would then take as its own."""
    try:
        return apply_edits(text, edits, source="gen.yaml")
    except EditRefused as e:
        adds = any(edit.value is not ABSENT for edit in edits)
        removes = any(edit.value is ABSENT for edit in edits)
        if (_OPEN_END in str(e) and adds and not text.endswith("\n")) or (_TAKEN in str(e) and removes):
            event("refused: " + (_OPEN_END if _OPEN_END in str(e) else _TAKEN))  # counted in the statistics
            return None
        raise


def _get(data: Any, path: FieldPath) -> Any:
    for seg in path:
        data = data[seg.name] if isinstance(seg, Key) else data[seg.index]  # type: ignore[union-attr]
    return data


@fuzz(ci=60)
@given(st.data())
def test_scalar_edits_change_only_their_values(data: st.DataObject) -> None:
    rendered = _rendered(data)
    text = rendered.text
    assert apply_edits(text, [], source="gen.yaml") == text
    infos = list(iter_scalars(text, source="gen.yaml"))
    unique = st.lists(st.sampled_from(infos), max_size=4, unique_by=lambda s: (s.document, s.path))
    chosen = data.draw(unique) if infos else []
    edits = [Edit(document=s.document, path=s.path, value=data.draw(scalars())) for s in chosen]
    expected = copy.deepcopy(rendered.data)
    for edit in edits:
        expected[edit.document] = set_at(expected[edit.document], edit.path, edit.value)
    after = apply_edits(text, edits, source="gen.yaml")
    assert [d.data for d in load_documents(after, source="gen.yaml")] == expected
    assert outside_bytes(text, after, spans_of(text, chosen)) == 0, (text, after)
    # YAML 1.1 (PyYAML, what kubectl/Helm read) sees the same written values.
    docs11 = list(pyyaml.safe_load_all(after))
    for e in edits:
        got = _get(docs11[e.document], e.path)
        assert type(got) is type(e.value) and got == e.value, (e.value, got, after)
    assert same_line_endings(text, after)
    # Independent of the editor's own positions: only the lines of the edited entries changed.
    allowed: set[int] = set()
    for s in chosen:
        rec = rendered.recs[s.document][s.path]
        allowed.update(range(rec.first, rec.last + 1))
    assert kept_in_order(text, after, allowed), (text, after, allowed)


def _containers(rendered: Rendered) -> list[tuple[int, FieldPath, Any]]:
    out = []
    for index, doc in enumerate(rendered.data):
        for path in rendered.recs[index]:
            value = _get(doc, path)
            if isinstance(value, dict | list):
                out.append((index, path, value))
    return out


def _allowed_for_remove(recs: dict[FieldPath, Rec], path: FieldPath, siblings: int) -> set[int]:
    rec = recs[path]
    allowed = set(range(rec.first, rec.last + 1)) | rec.comments
    parent = recs[path[:-1]]
    if rec.in_flow:
        allowed.update(range(rec.in_flow[0], rec.in_flow[1] + 1))
    if siblings == 1 and path[:-1]:
        allowed.add(parent.first)  # "key:" gets " {}" / " []"
        allowed.update(range(parent.first, parent.last + 1) if parent.dash_line_key else ())
    nxt = _next_entry(recs, path) if rec.dash_line_key and siblings > 1 else None
    if nxt is not None and recs[nxt].first == rec.last + 1:
        allowed.add(recs[nxt].first)  # the next entry moves up onto the dash line
    return allowed


def _blank_lines_before(rendered: Rendered, allowed: set[int]) -> None:
    """At the end of a file without a final newline, blank lines before a removed last entry go too: every blank
    line of the file's tail that, with the edited lines, comes after the last line that stays (several removed
    entries in a row leave their blank lines between them at the end)."""
    line = max(allowed) - 1
    while line > 0 and (line in allowed or not rendered.lines[line].strip()):
        allowed.add(line)
        line -= 1


def _next_entry(recs: dict[FieldPath, Rec], path: FieldPath) -> FieldPath | None:
    """The path of the entry after ``path`` in the file (None when the entry after it is one an edit added)."""
    last = path[-1]
    if isinstance(last, Index):
        return (*path[:-1], Index(last.index + 1)) if (*path[:-1], Index(last.index + 1)) in recs else None
    assert isinstance(last, Key), path  # the generated files select no list items by key
    keys = [p[-1] for p in recs if len(p) == len(path) and p[:-1] == path[:-1] and isinstance(p[-1], Key)]
    at = keys.index(last) + 1
    return (*path[:-1], keys[at]) if at < len(keys) else None


@fuzz(ci=60)
@given(st.data())
def test_structural_edits_change_only_expected_lines(data: st.DataObject) -> None:
    rendered = _rendered(data)
    text = rendered.text
    index, path, container = data.draw(st.sampled_from(_containers(rendered)))
    recs = rendered.recs[index]
    expected = copy.deepcopy(rendered.data)
    target = _get(expected[index], path)
    action = data.draw(st.sampled_from(["add", "remove"] if container else ["add"]))
    new_value = data.draw(values(1))
    if action == "add" and isinstance(container, dict):
        key = data.draw(st.sampled_from(["added", "new-key", "on", "a.b"]).filter(lambda k: k not in container))
        edit = Edit(document=index, path=(*path, Key(key)), value=new_value)
        target[key] = new_value
    elif action == "add":
        edit = Edit(document=index, path=(*path, Index(len(container))), value=new_value)
        target.append(new_value)
    else:
        keys = list(container) if isinstance(container, dict) else list(range(len(container)))
        chosen = data.draw(st.sampled_from(keys))
        edit = Edit(document=index, path=(*path, Key(chosen) if isinstance(chosen, str) else Index(chosen)))
        del target[chosen]
    after = _apply(text, [edit])
    if after is None:
        return
    assert [d.data for d in load_documents(after, source="gen.yaml")] == expected, (text, after)
    # Removing the last entry of a file without a final newline may keep a block scalar's line break.
    assert same_line_endings(text, after, final=edit.value is not ABSENT or text.endswith("\n"))
    rec = recs[path]
    if edit.value is ABSENT:
        allowed = _allowed_for_remove(recs, edit.path, len(container))
        if not text.endswith("\n") and max(allowed) == len(rendered.lines) - 1:
            _blank_lines_before(rendered, allowed)
    elif rec.flow or not container or rec.in_flow:
        allowed = set(range(rec.first, rec.last + 1))
    else:
        allowed = set()
    assert kept_in_order(text, after, allowed, inserts=True), (text, after, allowed)


@dataclass
class _Shadow:
    """Where a value of the edited data came from: its path in the rendered file, or None when an edit added it."""

    origin: FieldPath | None
    children: dict[str, _Shadow] | list[_Shadow] | None = None


def _shadow(value: Any, origin: FieldPath | None) -> _Shadow:
    def sub(seg: Key | Index) -> FieldPath | None:
        return None if origin is None else (*origin, seg)

    if isinstance(value, dict):
        return _Shadow(origin, {k: _shadow(v, sub(Key(k))) for k, v in value.items()})
    if isinstance(value, list):
        return _Shadow(origin, [_shadow(v, sub(Index(i))) for i, v in enumerate(value)])
    return _Shadow(origin)


def _lines(rec: Rec) -> set[int]:
    return set(range(rec.first, rec.last + 1))


def _random_edit(
    data: st.DataObject, rendered: Rendered, expected: list[Any], shadows: list[_Shadow]
) -> tuple[Edit, set[int]] | None:
    """One random set/add/remove edit that still applies to ``expected`` (updated in place, with ``shadows``),
    and the lines of the rendered file that it may change."""
    index = data.draw(st.integers(0, len(expected) - 1))
    recs = rendered.recs[index]
    containers = []
    stack: list[tuple[FieldPath, Any, _Shadow]] = [((), expected[index], shadows[index])]
    while stack:
        path, value, shadow = stack.pop()
        if isinstance(value, dict | list):
            containers.append((path, value, shadow))
            assert isinstance(shadow.children, dict | list)
            if isinstance(value, dict):
                assert isinstance(shadow.children, dict)
                stack.extend(((*path, Key(k)), v, shadow.children[k]) for k, v in value.items())
            else:
                assert isinstance(shadow.children, list)
                stack.extend(((*path, Index(i)), v, shadow.children[i]) for i, v in enumerate(value))
    path, container, shadow = data.draw(st.sampled_from(containers))
    children: Any = shadow.children
    keys = list(container) if isinstance(container, dict) else list(range(len(container)))
    action = data.draw(st.sampled_from(["set", "add", "remove"] if keys else ["add"]))
    if action == "add":
        value = data.draw(values(1))
        allowed: set[int] = set()
        if shadow.origin is not None:
            rec = recs[shadow.origin]
            if rec.flow or rec.in_flow or not container:
                allowed = _lines(rec)  # written inside the flow collection, or over "{}" / "[]"
        if isinstance(container, dict):
            key = data.draw(st.sampled_from(["n1", "n2", "yes"]).filter(lambda k: k not in container))
            container[key] = value
            children[key] = _shadow(value, None)
            return Edit(document=index, path=(*path, Key(key)), value=copy.deepcopy(value)), allowed
        container.append(value)
        children.append(_shadow(value, None))
        return Edit(document=index, path=(*path, Index(len(container) - 1)), value=copy.deepcopy(value)), allowed
    chosen = data.draw(st.sampled_from(keys))
    seg = Key(chosen) if isinstance(chosen, str) else Index(chosen)
    origin = children[chosen].origin
    if action == "remove":
        if not path and len(keys) == 1:
            return None  # keep documents non-empty
        allowed = set()
        if origin is not None:
            allowed = _allowed_for_remove(recs, origin, len(container))
            if recs[origin].dash_line_key:
                allowed |= _lines(recs[origin[:-1]])  # a later entry moves up onto the dash line
        elif len(keys) == 1 and shadow.origin:
            # the last entry, one an edit added, of a collection of the file: its key line gets " {}" or " []"
            parent = recs[shadow.origin]
            allowed = _lines(parent) if parent.dash_line_key or parent.flow or parent.in_flow else {parent.first}
        del container[chosen]
        del children[chosen]
        return Edit(document=index, path=(*path, seg)), allowed
    value = data.draw(values(1))
    container[chosen] = value
    children[chosen] = _shadow(value, None)
    children[chosen].origin = origin  # a new value, but the entry (its key line and comments) stays
    return Edit(document=index, path=(*path, seg), value=copy.deepcopy(value)), (
        _lines(recs[origin]) if origin is not None else set()
    )


@fuzz(ci=60)
@given(st.data())
def test_mixed_edit_batches_read_back_as_intended(data: st.DataObject) -> None:
    rendered = _rendered(data)
    text = rendered.text
    expected = copy.deepcopy(rendered.data)
    shadows = [_shadow(doc, ()) for doc in expected]
    drawn = [_random_edit(data, rendered, expected, shadows) for _ in range(data.draw(st.integers(1, 5)))]
    edits = [d[0] for d in drawn if d]
    allowed = set().union(*(d[1] for d in drawn if d))
    after = _apply(text, edits)
    if after is None:
        return
    assert [d.data for d in load_documents(after, source="gen.yaml")] == expected, (text, after)
    # A removal at the end of a file without a final newline may add one after a block scalar (documented).
    assert same_line_endings(text, after, final=False)
    if allowed and not text.endswith("\n") and max(allowed) == len(rendered.lines) - 1:
        _blank_lines_before(rendered, allowed)
    # Bytes outside the edits: every line no edit may touch is kept, in order (new lines may come between).
    assert kept_in_order(text, after, allowed, inserts=True), (text, after, sorted(allowed))
    if edits and edits[-1].value is not ABSENT:
        assert apply_edits(after, edits[-1:], source="gen.yaml") == after  # setting what is there changes nothing
    header = [line for line in rendered.lines if line.startswith("# file header")]
    assert all(line in after for line in header)
