"""Path patterns matched against a drift's path *and the subtree below it*. Pure.

Used for ``policy.sensitive_paths`` (what ``writeback.capture.redaction`` redacts) and ``policy.flag_paths``. A
pattern may point below the drift's own path: a person who adds a whole env item, container or map
adds the sensitive leaf with it, so the drift's value must be redacted too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from writeback.kube.paths import match
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, PatternSegment, Select, scalar_text

__all__ = ["matches_within"]


def _leaf_paths(value: Any, at: FieldPath) -> Iterator[FieldPath]:
    """Every path inside ``value``; a list item is addressed by all its scalar fields (or its index)."""
    yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaf_paths(v, (*at, Key(str(k))))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            scalars = (
                tuple((str(k), scalar_text(v)) for k, v in item.items() if isinstance(v, str | int | float | bool))
                if isinstance(item, dict)
                else ()
            )
            yield from _leaf_paths(item, (*at, Index(i)))
            if scalars:
                yield from _leaf_paths(item, (*at, Select(keys=scalars)))


def matches_within(patterns: Sequence[Sequence[PatternSegment]], *, path: FieldPath, values: Sequence[Any]) -> bool:
    """``path`` matches a pattern, or one of ``values`` (the drift's live and Git sides) holds a matching leaf."""
    if not patterns:
        return False
    if any(match(p, path) for p in patterns):
        return True
    for value in values:
        if value is ABSENT or not isinstance(value, dict | list):
            continue
        if any(match(p, inner, prefix=False) for inner in _leaf_paths(value, path) for p in patterns):
            return True
    return False
