"""What a GitOps controller's ignore rule selects in an object, as drift paths: a JSON pointer's (or a jq path's)
tokens resolved in the live or the Git object. Pure.

A list position becomes the item's key selector when the list is keyed (``containers/0`` is
``containers[name=web]``), as drift paths name items; so a pointer ignores that item wherever it moves. Shared by
Argo CD's ``ignoreDifferences`` and Flux's ignore rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from writeback.drift.listkeys import KeyResolver, item_selector
from writeback.kube.jsonpatch import pointer_index
from writeback.kube.pathtypes import FieldPath, Index, Key, Segment

__all__ = ["Position", "at_or_below", "field_path", "rfc_position"]

Position = Callable[[list[Any], str | int], int | None]  # a token's position in a list, or None


def rfc_position(items: list[Any], token: str | int) -> int | None:
    """An RFC 6901 array index (``"0"``, ``"12"``; not ``"01"`` or ``"-"``) or a jq path's position, in range."""
    if isinstance(token, str):
        return pointer_index(items, token)
    return token if 0 <= token < len(items) else None


def field_path(
    tokens: Sequence[str | int], body: Any, keys: KeyResolver, *, position: Position = rfc_position
) -> FieldPath | None:
    """Pointer or jq path tokens as a drift path, or None when a list position is not in ``body``."""
    out: list[Segment] = []
    node = body
    for token in tokens:
        if isinstance(node, list):
            at = position(node, token)
            if at is None:
                return None
            names = keys(tuple(out))
            sel = item_selector(node[at], names) if names else None
            out.append(sel or Index(at))
            node = node[at]
        else:
            out.append(Key(str(token)))
            node = node.get(str(token)) if isinstance(node, Mapping) else None
    return tuple(out)


def at_or_below(path: FieldPath, target: FieldPath) -> bool:
    """Whether ``path`` is ``target`` or lies below it (a rule that selects a node selects all of it)."""
    return tuple(path[: len(target)]) == target
