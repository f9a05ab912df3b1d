"""JSON pointers (RFC 6901) and JSON patches (RFC 6902) over plain objects: a field path's pointer, a pointer's
tokens, and the ``add``/``remove``/``test`` operations that write a field by its key path. Pure.

The field-path walk itself is ``writeback.kube.paths.lookup``; ``jsonpointer`` is used here only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsonpointer

from writeback.errors import InputError, PathSyntaxError
from writeback.kube.paths import key, lookup
from writeback.kube.pathtypes import ABSENT, FieldPath, Key, Select

__all__ = [
    "Op",
    "get_at",
    "json_pointer",
    "parse_pointer",
    "pointer_index",
    "pointer_to",
    "remove_op",
    "set_op",
    "version_test_op",
]

Op = dict[str, Any]

# ---------------------------------------------------------------- pointers


def json_pointer(parts: Sequence[str | int]) -> str:
    """RFC 6901 pointer of the given reference tokens (``~`` and ``/`` escaped): ``/metadata/annotations/a~1b``."""
    return str(jsonpointer.JsonPointer.from_parts([str(p) for p in parts]).path)


def parse_pointer(pointer: str) -> tuple[str, ...]:
    """The reference tokens of an RFC 6901 pointer; PathSyntaxError when it is not one."""
    try:
        return tuple(jsonpointer.JsonPointer(pointer).parts)
    except jsonpointer.JsonPointerException as e:
        raise PathSyntaxError(f"{pointer!r}: not a JSON pointer ({e})") from e


def pointer_index(items: Sequence[Any], token: str) -> int | None:
    """The list position a pointer token names in ``items``: an RFC 6901 array index (``0``, ``12``; not ``01``, not
    ``-``) that is in range, else None."""
    try:
        index = jsonpointer.JsonPointer.get_part(items, token)
    except jsonpointer.JsonPointerException:
        return None
    return index if isinstance(index, int) and 0 <= index < len(items) else None


def pointer_to(data: Any, path: FieldPath) -> str | None:
    """The JSON pointer of the field at ``path`` in ``data``, a keyed item by its position (the first item its
    selector matches), or None when a keyed item is not there."""
    out: list[str | int] = []
    cur = data
    for seg in path:
        if isinstance(seg, Key):
            out.append(seg.name)
            cur = cur.get(seg.name) if isinstance(cur, Mapping) else None
        elif isinstance(seg, Select):
            if not isinstance(cur, list):
                return None
            idx = next((i for i, item in enumerate(cur) if seg.matches(item)), None)
            if idx is None:
                return None
            out.append(idx)
            cur = cur[idx]
        else:
            out.append(seg.index)
            cur = cur[seg.index] if isinstance(cur, list) and seg.index < len(cur) else None
    return json_pointer(out)


# ---------------------------------------------------------------- patches


def get_at(body: Mapping[str, Any], path: Sequence[str]) -> tuple[bool, Any]:
    """(present, value) of the field at ``path`` (mapping keys only)."""
    value = lookup(body, tuple(key(p) for p in path))
    return (False, None) if value is ABSENT else (True, value)


def set_op(body: Mapping[str, Any], path: Sequence[str], value: Any) -> Op:
    """An ``add`` that works when parents are missing: it adds the first missing parent with the rest nested."""
    for depth in range(1, len(path)):
        present, _ = get_at(body, path[:depth])
        if not present:
            nested: Any = value
            for p in reversed(path[depth:]):
                nested = {p: nested}
            return {"op": "add", "path": json_pointer(path[:depth]), "value": nested}
    return {"op": "add", "path": json_pointer(path), "value": value}


def remove_op(path: Sequence[str]) -> Op:
    return {"op": "remove", "path": json_pointer(path)}


def version_test_op(body: Mapping[str, Any]) -> Op:
    """A ``test`` of ``metadata.resourceVersion``: a write by anyone else between our read and our patch fails it."""
    version = (body.get("metadata") or {}).get("resourceVersion")
    if not version:
        raise InputError("the object has no metadata.resourceVersion (not read from the API server?)")
    return {"op": "test", "path": "/metadata/resourceVersion", "value": version}
