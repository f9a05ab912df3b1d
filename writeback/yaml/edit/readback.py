"""The intended data of an edit, and the check that the edited text reads back as intended."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

from writeback.kube.paths import format_path
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, Select, scalar_text
from writeback.yaml.edit.errors import EditRefused, VerifyError, YamlSyntaxError
from writeback.yaml.edit.scalars import reads_as_str
from writeback.yaml.edit.slots import select_value
from writeback.yaml.edit.trees import compose, compose11, construct, read_fast, same


def _find_key(data: dict[Any, Any], name: str) -> Any:
    if name in data:
        return name
    for k in data:
        if not isinstance(k, str) and scalar_text(k) == name:
            return k
    return ABSENT


def _find_item(data: list[Any], seg: Select | Index) -> int | None:
    if isinstance(seg, Index):
        return seg.index if seg.index < len(data) else None
    return next((i for i, item in enumerate(data) if seg.matches(item)), None)


def get_path(data: Any, path: FieldPath) -> Any:
    """The value at ``path``, or ABSENT."""
    for seg in path:
        if isinstance(seg, Key):
            if not isinstance(data, dict):
                return ABSENT
            key = _find_key(data, seg.name)
            if key is ABSENT:
                return ABSENT
            data = data[key]
        else:
            if not isinstance(data, list):
                return ABSENT
            idx = _find_item(data, seg)
            if idx is None:
                return ABSENT
            data = data[idx]
    return data


def nest(path: FieldPath, value: Any, *, source: str, full: FieldPath) -> Any:
    """The value to write where ``path`` starts missing: ``a.b`` = 1 becomes ``{"a": {"b": 1}}``."""
    if not path:
        return copy.deepcopy(value)
    seg, rest = path[0], path[1:]
    inner = nest(rest, value, source=source, full=full)
    if isinstance(seg, Key):
        return {seg.name: inner}
    if isinstance(seg, Index):
        if seg.index != 0:
            raise EditRefused(f"{source}: cannot edit {format_path(full)}: list index {seg.index} is out of range")
        return [inner]
    if not isinstance(inner, dict):
        raise EditRefused(f"{source}: cannot edit {format_path(full)}: a new [key=value] item needs a mapping value")
    item: dict[str, Any] = {k: select_value(v) for k, v in seg.keys}
    for k, v in inner.items():
        item[k] = v
    return [item]


def set_path(data: Any, path: FieldPath, value: Any, *, source: str) -> Any:
    """``data`` with ``path`` set to ``value`` (mutates and returns it)."""
    if not path:
        return copy.deepcopy(value)
    seg = path[0]
    if isinstance(seg, Key) and isinstance(data, dict):
        key = _find_key(data, seg.name)
        if key is ABSENT:
            data[seg.name] = nest(path[1:], value, source=source, full=path)
        else:
            data[key] = set_path(data[key], path[1:], value, source=source)
        return data
    if not isinstance(seg, Key) and isinstance(data, list):
        idx = _find_item(data, seg)
        if idx is None:
            if isinstance(seg, Index) and seg.index != len(data):
                raise EditRefused(f"{source}: cannot edit {format_path(path)}: list index out of range")
            data.extend(nest((Index(0) if isinstance(seg, Index) else seg, *path[1:]), value, source=source, full=path))
        else:
            data[idx] = set_path(data[idx], path[1:], value, source=source)
        return data
    return nest(path, value, source=source, full=path)


def remove_path(data: Any, path: FieldPath) -> bool:
    parent = get_path(data, path[:-1])
    seg = path[-1]
    if isinstance(seg, Key) and isinstance(parent, dict):
        key = _find_key(parent, seg.name)
        if key is not ABSENT:
            del parent[key]
            return True
    if not isinstance(seg, Key) and isinstance(parent, list):
        idx = _find_item(parent, seg)
        if idx is not None:
            del parent[idx]
            return True
    return False


def _leaves(value: Any, path: FieldPath) -> Iterator[tuple[FieldPath, Any]]:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from _leaves(v, (*path, Key(k if isinstance(k, str) else scalar_text(k))))
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, Index(i)))
    else:
        yield path, value


def verify(
    *,
    before: str,
    after: str,
    expected: Sequence[Any],
    original: Sequence[Any],
    written: Sequence[tuple[int, FieldPath]],
    source: str,
) -> None:
    """Raise :class:`VerifyError` unless ``after`` reads as ``expected`` (YAML 1.2) and the written
    values also read back the same in YAML 1.1.

    The YAML 1.2 reading is libyaml's (fast) when libyaml read ``before`` exactly as ruamel did (``original``)
    and reads ``after`` as intended; in every other case ruamel reads ``after`` and decides.
    """
    if not (_reads_as(read_fast(before), original) and _reads_as(read_fast(after), expected)):
        _verify_ruamel(after, expected, source=source)
    _verify11(before=before, after=after, expected=expected, original=original, written=written, source=source)


def _reads_as(docs: Sequence[Any] | None, want: Sequence[Any]) -> bool:
    return docs is not None and len(docs) == len(want) and all(same(a, b) for a, b in zip(docs, want, strict=True))


def _verify_ruamel(after: str, expected: Sequence[Any], *, source: str) -> None:
    try:
        docs = compose(after, source=source)
    except YamlSyntaxError as e:
        raise VerifyError(f"{source}: the edited text does not parse: {e}") from e
    if len(docs) != len(expected):
        raise VerifyError(f"{source}: the edited text has {len(docs)} documents, expected {len(expected)}")
    for doc, want in zip(docs, expected, strict=True):
        got = construct(doc.root)
        if not same(got, want):
            raise VerifyError(f"{source}: document {doc.index} does not read back as intended after editing")


def _verify11(
    *,
    before: str,
    after: str,
    expected: Sequence[Any],
    original: Sequence[Any],
    written: Sequence[tuple[int, FieldPath]],
    source: str,
) -> None:
    if not written:
        return
    trees11 = compose11(after)
    if trees11 is None:
        if compose11(before) is not None:
            raise VerifyError(f"{source}: the edited text is not valid YAML 1.1")
        return
    data11 = [construct(tree, v11=True) for tree in trees11]
    for index, path in written:
        want_value = get_path(expected[index], path)
        for leaf_path, leaf in _leaves(want_value, path):
            if same(get_path(original[index], leaf_path), leaf):
                continue  # not changed by us
            got = get_path(data11[index], leaf_path) if index < len(data11) else ABSENT
            if got is ABSENT and any(isinstance(s, Key) and not reads_as_str(s.name) for s in leaf_path):
                continue  # a plain key such as `on:` elsewhere in the path: YAML 1.1 reads it as a boolean
            if not same(got, leaf):
                raise VerifyError(f"{source}: {format_path(leaf_path)} reads differently in YAML 1.1 ({got!r})")
