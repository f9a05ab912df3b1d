"""What a source kind is: the ``Source`` Protocol. A source kind says how a target's desired objects come out of the
repository (plain manifests, a Kustomize overlay, values bound by markers, a Helm chart) and where a drifted field
must be written in it.

A source module defines one, ``registry.SOURCES`` lists them; nothing outside a source's module tests its name.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from writeback.adapters.files import LoadResult, NamespaceDefaults, NamespacedFn
from writeback.gitops.base import Getter, GitOpsController
from writeback.kube.discovery import DiscoveryReader
from writeback.kube.refs import ObjectRef
from writeback.model import ChangeSet, DesiredObject, Drift, Unresolved
from writeback.sources.documents import Manifest
from writeback.sources.locations import Location, NotFound

Rendered = tuple[Mapping[str, Any], ...]  # the objects a (patched) source renders, as the controller would apply them


@dataclass(frozen=True, slots=True, kw_only=True)
class Tools:
    """What sources' programs are given: the programs and paths by name (``kustomize``, ``helm``, a source's path
    option such as ``chart-cache``), where one is given (a source's adapter finds a program that is not given
    itself: ``$WRITEBACK_<NAME>``, else PATH); a source's text options by name (``kube-version``,
    ``api-versions``); and, in cluster mode, the cluster's discovery (read at most once per cycle, on first use)."""

    paths: Mapping[str, Path] = field(default_factory=dict)
    texts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    discovery: DiscoveryReader | None = None  # None: offline (a --live dump)

    def get(self, name: str) -> Path | None:
        return self.paths.get(name)

    def text(self, name: str) -> str | None:
        """A ``TEXT`` option's value, if given."""
        found = self.texts.get(name)
        return found[0] if found else None

    def values(self, name: str) -> tuple[str, ...]:
        """A ``LIST`` option's values, as given (``()``: none)."""
        return self.texts.get(name, ())


class OptionKind(enum.StrEnum):
    PATH = "path"  # a directory or file: ``Tools.get(name)``
    TEXT = "text"  # one string: ``Tools.text(name)``
    LIST = "list"  # strings (the flag repeated, or comma-separated; the config key a list): ``Tools.values(name)``


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceOption:
    """A setting a source kind takes from a flag or a config key (``--chart-cache DIR``, ``chart_cache``); it
    reaches the source through ``Tools`` by ``name``, as its ``kind`` says."""

    name: str  # the Tools key: ``chart-cache``
    flag: str  # ``--chart-cache``
    config_key: str  # the config target's key: ``chart_cache``
    help: str
    kind: OptionKind = OptionKind.PATH
    metavar: str = "DIR"


def _no_object(ref: ObjectRef) -> Mapping[str, Any] | None:
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerObject:
    """The GitOps controller object the target follows, as read live (from the cluster, or the dump offline): its
    kind, ref and body. ``get`` reads another object from the same place (a source it names); ``cluster``: it was
    read from the cluster, so what the controller's own sources serve may be fetched."""

    controller: GitOpsController
    ref: ObjectRef
    body: Mapping[str, Any]
    get: Getter = _no_object
    cluster: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadRequest:
    """Where a source's desired objects are read: a tree (the working tree, or a checkout at a revision)."""

    root: Path  # the repository's top (or a checkout of it at the compared revision)
    path: str  # the target's path in it
    namespaces: NamespaceDefaults
    namespaced: NamespacedFn
    tools: Tools
    where: str = ""  # " (at the compared revision abc123)": problems say which tree
    controller: ControllerObject | None = None  # the GitOps controller object the target follows, if any
    exclude: frozenset[str] = frozenset()  # files relative to the top that are never manifests (a --live dump)
    # pack each body as its file is read (``bodies.PackedBody``) where the source can: nothing else holds the parsed
    # documents and the stage that meets the live objects unpacks them (a one-shot run: ``pipeline.settled``)
    pack: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class LocateRequest:
    """What locating in the repo texts needs: the texts, the target's path, and how to resolve namespaces; a source
    that renders also gets the checkout the texts were read from, its programs and the controller object."""

    files: Mapping[str, str]  # repo-relative path -> text
    root: str  # the target's path, normalized ("" for the top)
    edit_base: bool = False  # Kustomize: edit the shared base instead of the overlay
    default_namespace: str | None = None
    repo: Path | None = None  # the checkout ``files`` were read from (None: texts only, nothing can be rendered)
    tools: Tools = field(default_factory=Tools)
    controller: ControllerObject | None = None
    links: Mapping[str, str] = field(default_factory=dict)  # a symbolic link in ``files`` -> the real path it reads


# Where one drifted field is written (one place, or several: an image string made of two values keys), or why it
# cannot be said (NotFound; Unresolved: with the resource's own words).
Found = tuple[Location, ...] | Unresolved | NotFound


@dataclass(frozen=True, slots=True, kw_only=True)
class Patched:
    """What merging a change set would apply, as its source renders it, and the source's own proof of it for the PR
    body (where the server-side dry-run line does not apply: ``Source.verified_live``)."""

    objects: Rendered
    proof: str | None = None


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
        """Whether the PR's server-side dry-run line applies to its change sets (not when it edits chart values:
        then the PR shows the source's own proof, ``Patched.proof``, where it gives one)."""

    @property
    def options(self) -> tuple[SourceOption, ...]:
        """The settings it takes from flags or config keys (each reaches it through ``Tools``)."""

    def claims(self, exists: Callable[[str], bool], path: str, controller: ControllerObject | None) -> bool:
        """Whether a target whose source is not set is of this kind (``exists``: is this repo-relative file there;
        ``controller``: the GitOps controller object the target follows, if any)."""

    def load(self, request: LoadRequest) -> LoadResult[DesiredObject]:
        """The desired objects of the target, read or rendered from ``request.root``."""

    def locate(self, request: LocateRequest, drifts: Sequence[Drift]) -> Sequence[Found]:
        """Where each drifted field is written in the repo texts: one result per drift, in order (all at once: a
        source that renders traces them together)."""

    def render_patched(self, cs: ChangeSet, request: LocateRequest) -> Patched:
        """What merging ``cs`` would apply, rendered from ``request.repo`` with the change set's files (a PatchError
        when the patched source does not render, or does not render as it must)."""


def sops_encrypted(m: Manifest, files: Mapping[str, str]) -> bool:
    """A SOPS-encrypted manifest (its values are never written)."""
    text = files.get(m.file, "")
    return "sops" in m.data or ("\nsops:" in text and "ENC[" in text)
