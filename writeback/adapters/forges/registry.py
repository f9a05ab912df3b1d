"""The registry of forge kinds: ONE tuple. Adding a forge is one module (settings, opener, client) plus one line here.

The first is the default where no forge is configured (``plan``'s preview of a PR).
"""

from __future__ import annotations

from writeback.adapters.forges import github, gitlab
from writeback.adapters.forges.base import ForgeKind

FORGES: tuple[ForgeKind, ...] = (
    github.KIND,
    gitlab.KIND,
)
DEFAULT = FORGES[0]


def names() -> tuple[str, ...]:
    return tuple(f.name for f in FORGES)


def by_name(name: str) -> ForgeKind:
    """The forge kind called ``name`` (a ``KeyError`` naming the known ones otherwise: config checks it first)."""
    for f in FORGES:
        if f.name == name:
            return f
    raise KeyError(f"unknown forge {name!r} (known: {', '.join(names())})")
