"""What writeback asks of a kind of GitOps controller object: the ``GitOpsController`` Protocol. Pure.

A controller module (``argocd``, ``flux``) defines one object per kind it knows, and ``registry.CONTROLLERS`` lists
them. Nothing outside a controller's module tests its kind: the pipeline, the CLI, the config and break-glass ask
the registry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from writeback.kube.jsonpatch import Op
from writeback.kube.refs import ObjectRef, group_of, split_ns_name

Getter = Callable[[ObjectRef], Mapping[str, Any] | None]

# ``main@sha1:<sha>`` (Flux), ``sha1:<sha>``, ``main/<40 hex>`` (older Flux), or a bare commit (Argo CD)
_REVISION = re.compile(
    r"^(?:(?P<ref>.+?)[@/])?(?:sha1|sha256):(?P<sha>[0-9a-f]{7,64})$|^(?P<ref2>.+)/(?P<sha2>[0-9a-f]{40})$"
)


_VERSION = re.compile(r"^v?[0-9]+(?:\.[0-9]+){1,2}(?:[-+][0-9A-Za-z.+-]*)?$")


def is_chart_version(revision: str) -> bool:
    """A chart's version (``6.14.1``), which a controller reports as the revision of a release whose chart comes from
    a Helm repository: no Git commit."""
    return _VERSION.match(revision.strip()) is not None


def commit_of(revision: str) -> str:
    """The commit in a controller's revision text (``main@sha1:<sha>`` -> ``<sha>``; a bare commit as it is)."""
    value = revision.strip()
    m = _REVISION.match(value)
    if m:
        return m.group("sha") or m.group("sha2")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class PathIgnore:
    """One ignore rule in the form of Flux's ``IgnoreRule``: JSON pointers (RFC 6901; ``""`` is the whole object) that
    drift detection leaves out on the objects its target selects. The target's ``group``, ``version``, ``kind``,
    ``name`` and ``namespace`` are regular expressions matched whole; ``label_selector`` and
    ``annotation_selector`` are label selectors; an empty one selects every object."""

    where: str  # how messages name the rule: "Flux Kustomization flux-system/apps spec.ignore[0]"
    paths: tuple[str, ...]
    group: str = ""
    version: str = ""
    kind: str = ""
    name: str = ""
    namespace: str = ""
    label_selector: str = ""
    annotation_selector: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerState:
    """What a controller object says about the Git side it applies (all optional)."""

    source: str = ""  # where the revision was read, e.g. "Argo CD Application argocd/web status.sync.revision"
    revision: str | None = None  # as written in the status (``commit_of`` gives the commit)
    namespace: str | None = None  # destination / target namespace of manifests that name none
    # ignore rules in the form of Argo CD's ``spec.ignoreDifferences`` entries
    ignore_differences: tuple[Mapping[str, Any], ...] = ()
    # ignore rules in the form of Flux's IgnoreRule (a Kustomization's ``spec.ignore``, a HelmRelease's
    # ``spec.driftDetection.ignore``)
    path_ignores: tuple[PathIgnore, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Fetched:
    """The commit a controller has fetched from Git (what it applies once auto-sync is on), and where it says so."""

    where: str
    commit: str | None


@runtime_checkable
class GitOpsController(Protocol):
    """One kind of GitOps controller object (an Argo CD Application, a Flux Kustomization, ...)."""

    @property
    def name(self) -> str:
        """The registry key, also stored in break-glass records: ``argocd``, ``flux-kustomization``."""

    @property
    def api_version(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def title(self) -> str:
        """How messages name the kind: ``Argo CD Application``."""

    @property
    def flag(self) -> str:
        """The CLI flag that names one object of this kind (``--argocd-app``); "" when none does."""

    @property
    def config_key(self) -> str:
        """The config target's key that names one object of this kind (``argocd_application``); "" when none."""

    @property
    def help(self) -> str:
        """The flag's help text."""

    @property
    def auto_sync_path(self) -> tuple[str, ...]:
        """The field that holds auto-sync (break-glass changes only this field)."""

    @property
    def suspendable(self) -> bool:
        """Whether a person may break-glass an object of this kind by itself (else only as a parent)."""

    @property
    def parent_suspendable(self) -> bool:
        """Whether break-glass suspends it as the parent of a held object (``--include-parents``)."""

    @property
    def field_managers(self) -> tuple[str, ...]:
        """The managedFields managers this controller applies with (its writes are never a person's)."""

    @property
    def tracking_labels(self) -> tuple[str, ...]:
        """Labels by which the objects it applies name it, in order (change sets are grouped by application)."""

    def app_name(self, body: Mapping[str, Any]) -> str | None:
        """The name of the object of this kind that deploys ``body``, as its tracking metadata records it."""

    def at(self, *, namespace: str, name: str) -> ObjectRef:
        """The ref of the object of this kind called ``namespace/name``."""

    def ref(self, text: str, *, what: str = "") -> ObjectRef:
        """``NAMESPACE/NAME`` -> the object's ref; an InputError naming ``what`` (default: the flag) otherwise."""

    def matches(self, ref: ObjectRef) -> bool:
        """Whether ``ref`` is an object of this kind (any version)."""

    def where(self, ref: ObjectRef) -> str:
        """``Argo CD Application argocd/web``: how messages name one object."""

    def state(self, body: Mapping[str, Any], *, ref: ObjectRef) -> ControllerState:
        """The applied revision, the target namespace and the ignore rules of this object."""

    def fetched(self, body: Mapping[str, Any], *, ref: ObjectRef, get: Getter) -> Fetched:
        """The commit the controller of this object has fetched (``get`` reads its source object, if any)."""

    def applied_by(self, body: Mapping[str, Any], *, namespace: str) -> ObjectRef | None:
        """The object of this kind that applies ``body`` (a live object in ``namespace``), if it says so."""

    def fetch_request(
        self, body: Mapping[str, Any], *, ref: ObjectRef, get: Getter, token: str
    ) -> tuple[ObjectRef, list[Op]] | None:
        """How to ask the controller of this object to fetch from Git now, as ``argocd app get --refresh`` and
        ``flux reconcile source git`` do: the object to patch and the operations (``token``: a value that changes
        when a new fetch is wanted); None when it cannot be asked."""

    def suspend_ops(self, body: Mapping[str, Any], *, held_for: ObjectRef | None) -> list[Op]:
        """The JSON patch operations that switch auto-sync off (``held_for``: the child a parent is held for)."""

    def auto_sync_on(self, body: Mapping[str, Any], *, application: str | None = None) -> bool:
        """Whether the controller syncs this object by itself (a parent: re-applies ``application``'s sync)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Followed:
    """The controller object a target follows: its kind, ``NAMESPACE/NAME`` as given, and what gave it."""

    controller: GitOpsController
    text: str
    what: str = ""  # the flag or config key that named it (errors name it; default: the kind's flag)

    def ref(self) -> ObjectRef:
        return self.controller.ref(self.text, what=self.what)


@dataclass(frozen=True, slots=True, kw_only=True)
class KindFacts:
    """The identity shared by every controller kind: how to name, parse and match its objects."""

    name: str
    api_version: str
    kind: str
    title: str
    flag: str = ""
    config_key: str = ""
    help: str = ""
    auto_sync_path: tuple[str, ...] = ()
    suspendable: bool = False
    parent_suspendable: bool = False
    field_managers: tuple[str, ...] = ()
    tracking_labels: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return group_of(self.api_version)

    def at(self, *, namespace: str, name: str) -> ObjectRef:
        return ObjectRef(api_version=self.api_version, kind=self.kind, namespace=namespace, name=name)

    def ref(self, text: str, *, what: str = "") -> ObjectRef:
        """``NAMESPACE/NAME`` -> the object's ref; an InputError naming ``what`` (default: the flag) otherwise."""
        ns, name = split_ns_name(text, what=what or self.flag or self.kind)
        return self.at(namespace=ns, name=name)

    def matches(self, ref: ObjectRef) -> bool:
        return (self.group, self.kind) == (ref.group, ref.kind)

    def app_name(self, body: Mapping[str, Any]) -> str | None:
        labels = (body.get("metadata") or {}).get("labels") or {}
        for label in self.tracking_labels:
            value = labels.get(label)
            if isinstance(value, str) and value:
                return value
        return None

    def where(self, ref: ObjectRef) -> str:
        """``Argo CD Application argocd/web``: how messages name one object."""
        return ref.named(self.title)
