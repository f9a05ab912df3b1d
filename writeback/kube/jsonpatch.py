"""JSON patches (RFC 6902) over plain objects: read a field by its key path, and the ``add``/``remove``/``test``
operations that write it. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from writeback.errors import InputError
from writeback.kube.paths import json_pointer

Op = dict[str, Any]


def get_at(body: Mapping[str, Any], path: Sequence[str]) -> tuple[bool, Any]:
    """(present, value) of the field at ``path`` (mapping keys only)."""
    node: Any = body
    for p in path:
        if not isinstance(node, Mapping) or p not in node:
            return False, None
        node = node[p]
    return True, node


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
