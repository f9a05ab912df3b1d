"""What a source kind is: the ``Source`` Protocol. A source kind says how a target's desired objects come out of the
repository (plain manifests, a Kustomize overlay, values bound by markers, a Helm chart) and where a drifted field
must be written in it.

A source module defines one, ``registry.SOURCES`` lists them; nothing outside a source's module tests its name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from writeback.adapters.files import LoadResult, NamespaceDefaults, NamespacedFn
from writeback.model import ChangeSet, DesiredObject, Drift, Unresolved
from writeback.sources.documents import Manifest
from writeback.sources.locations import Location, NotFound

Rendered = tuple[Mapping[str, Any], ...]  # the objects a (patched) source renders, as the controller would apply them


@dataclass(frozen=True, slots=True, kw_only=True)
class Tools:
    """The external programs sources run, by name (``kustomize``, ``helm``), where a path is given; a source's
    adapter finds any other itself (``$WRITEBACK_<NAME>``, else PATH)."""

    paths: Mapping[str, Path] = field(default_factory=dict)

    def get(self, name: str) -> Path | None:
        return self.paths.get(name)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadRequest:
    """Where a source's desired objects are read: a tree (the working tree, or a checkout at a revision)."""

    root: Path  # the repository's top (or a checkout of it at the compared revision)
    path: str  # the target's path in it
    namespaces: NamespaceDefaults
    namespaced: NamespacedFn
    tools: Tools
    where: str = ""  # " (at the compared revision abc123)": problems say which tree
    exclude: frozenset[str] = frozenset()  # files relative to the top that are never manifests (a --live dump)


@dataclass(frozen=True, slots=True, kw_only=True)
class LocateRequest:
    """What locating in the repo texts needs: the texts, the target's path, and how to resolve namespaces."""

    files: Mapping[str, str]  # repo-relative path -> text
    root: str  # the target's path, normalized ("" for the top)
    edit_base: bool = False  # Kustomize: edit the shared base instead of the overlay
    default_namespace: str | None = None


# where one drifted field is written, or why it cannot be said (NotFound; Unresolved: with the resource's own words)
Locator = Callable[[Drift], Location | Unresolved | NotFound]


@runtime_checkable
class Source(Protocol):
    """One kind of source (see the module docstring)."""

    @property
    def name(self) -> str:
        """The ``source:`` / ``--source`` value: ``plain``, ``kustomize``."""

    @property
    def help(self) -> str:
        """One line for ``--help`` and the config schema."""

    @property
    def renders(self) -> bool:
        """Its objects are rendered from the path (which may reach anywhere in the repo): a revision is checked out
        whole, and a change set is checked by rendering it again (``render_patched``)."""

    @property
    def render_name(self) -> str:
        """How messages name its rendering: ``kustomize build``."""

    @property
    def render_failure(self) -> str:
        """What an aborted change set says when its patched source does not render."""

    @property
    def verified_live(self) -> bool:
        """Whether the PR's server-side dry-run line applies to its change sets (not when it edits chart values)."""

    def claims(self, exists: Callable[[str], bool], path: str) -> bool:
        """Whether a target whose source is not set is of this kind (``exists``: is this repo-relative file there)."""

    def load(self, request: LoadRequest) -> LoadResult[DesiredObject]:
        """The desired objects of the target, read or rendered from ``request.root``."""

    def locator(self, request: LocateRequest) -> Locator:
        """Where each drifted field is written in the repo texts (pure)."""

    def render_patched(self, cs: ChangeSet, *, repo: Path, path: str, tools: Tools) -> Rendered:
        """The objects merging ``cs`` would apply (a PatchError when the patched source does not render)."""


def sops_encrypted(m: Manifest, files: Mapping[str, str]) -> bool:
    """A SOPS-encrypted manifest (its values are never written)."""
    text = files.get(m.file, "")
    return "sops" in m.data or ("\nsops:" in text and "ENC[" in text)

