"""The hidden marker at the top of a PR body that identifies a change set.

Pure text: shared by the renderer (which writes it) and the forge adapters (which read it back).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MARKER = re.compile(r"<!-- writeback:fingerprint=(?P<fp>[0-9A-Za-z]+) changeset=(?P<cs>[^\s>]+) -->")


@dataclass(frozen=True, slots=True, kw_only=True)
class PrMarker:
    fingerprint: str
    changeset_id: str


def format_marker(*, fingerprint: str, changeset_id: str) -> str:
    if not re.fullmatch(r"[0-9A-Za-z]+", fingerprint) or not re.fullmatch(r"[^\s>]+", changeset_id):
        raise ValueError(f"unsafe marker values: {fingerprint!r}, {changeset_id!r}")
    return f"<!-- writeback:fingerprint={fingerprint} changeset={changeset_id} -->"


def parse_marker(body: str | None) -> PrMarker | None:
    """The marker of a PR body, looked up only in its first lines (where the renderer puts it)."""
    if not body:
        return None
    m = _MARKER.search(body[:1000])
    return PrMarker(fingerprint=m["fp"], changeset_id=m["cs"]) if m else None


def comment_marker(kind: str, key: str) -> str:
    """A hidden marker for an idempotent comment (one comment per kind and key)."""
    return f"<!-- writeback:{kind}={key} -->"
