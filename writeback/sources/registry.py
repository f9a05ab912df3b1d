"""The registry of source kinds: ONE tuple, in order. Adding a source kind is one module plus one line here.

A target whose ``source`` is not set is of the first kind that claims it (Helm when the controller object it follows
renders a chart, Kustomize when the path holds a kustomization); plain manifests claim every path, so they come last.
"""

from __future__ import annotations

from collections.abc import Callable

from writeback.errors import InputError
from writeback.sources import marked, plain
from writeback.sources.base import ControllerObject, Source, SourceOption
from writeback.sources.helm import source as helm
from writeback.sources.kustomize import source as kustomize

SOURCES: tuple[Source, ...] = (
    helm.SOURCE,
    kustomize.SOURCE,
    marked.SOURCE,
    plain.SOURCE,
)


def names() -> tuple[str, ...]:
    return tuple(s.name for s in SOURCES)


def by_name(name: str) -> Source:
    for s in SOURCES:
        if s.name == name:
            return s
    raise InputError(f"unknown source {name!r} (known: {', '.join(names())})")


def resolve(
    name: str | None, *, exists: Callable[[str], bool], path: str, controller: ControllerObject | None = None
) -> Source:
    """The named source kind, else the first that claims ``path`` (``exists``: is a repo-relative file there;
    ``controller``: the GitOps controller object the target follows, if any).

    The one detection of a target's source kind: ``pipeline.detecting`` asks it of the checkout, ``pipeline.planning``
    of the repo texts it plans over."""
    if name is not None:
        return by_name(name)
    return next(s for s in SOURCES if s.claims(exists, path, controller))


def options() -> tuple[SourceOption, ...]:
    """Every registered kind's options (flags and config keys), once each."""
    seen: dict[str, SourceOption] = {}
    for s in SOURCES:
        for option in s.options:
            seen.setdefault(option.name, option)
    return tuple(seen.values())
