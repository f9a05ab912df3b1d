"""Flux: the Kustomization and the HelmRelease (auto-sync off is ``spec.suspend: true``), and the GitRepository,
the source whose artifact revision says which commit the controllers have fetched. Pure.

- Applied revision: ``Kustomization.status.lastAppliedRevision`` (``main@sha1:<sha>``; a HelmRelease's is its
  chart's version, no commit); namespace: ``spec.targetNamespace``; ignore rules: a Kustomization's
  ``spec.ignore``, a HelmRelease's ``spec.driftDetection.ignore`` (the same ``IgnoreRule``: ``paths`` and an optional
  ``target`` selector), read by one function, ``ignore_rules``.
- Suspended: ``spec.suspend: true``, restored to its previous value (or removed).
- Parents: a Kustomization or HelmRelease applied by a Kustomization or HelmRelease (the
  ``kustomize.toolkit.fluxcd.io/name``/``namespace`` labels, the ``helm.toolkit.fluxcd.io`` ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from writeback.gitops.base import (
    ControllerState,
    Fetched,
    Getter,
    KindFacts,
    PathIgnore,
    commit_of,
    is_chart_version,
)
from writeback.kube.jsonpatch import Op, get_at, set_op
from writeback.kube.refs import ObjectRef

KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
HELM_GROUP = "helm.toolkit.fluxcd.io"
REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"  # a new value asks the controller to reconcile now


@dataclass(frozen=True, slots=True, kw_only=True)
class _Source(KindFacts):
    """A GitRepository: the source object; its artifact revision is the commit the controllers fetched."""

    def state(self, body: Mapping[str, Any], *, ref: ObjectRef) -> ControllerState:
        return ControllerState(source=self.where(ref))

    def fetched(self, body: Mapping[str, Any], *, ref: ObjectRef, get: Getter) -> Fetched:
        present, value = get_at(body, ("status", "artifact", "revision"))
        commit = commit_of(str(value)) if present and value else None
        return Fetched(where=f"{self.where(ref)} status.artifact.revision", commit=commit)

    def applied_by(self, body: Mapping[str, Any], *, namespace: str) -> ObjectRef | None:
        return None

    def fetch_request(
        self, body: Mapping[str, Any], *, ref: ObjectRef, get: Getter, token: str
    ) -> tuple[ObjectRef, list[Op]] | None:
        return ref, [set_op(body, ("metadata", "annotations", REQUESTED_AT), token)]

    def suspend_ops(self, body: Mapping[str, Any], *, held_for: ObjectRef | None) -> list[Op]:
        return [set_op(body, self.auto_sync_path, True)]

    def auto_sync_on(self, body: Mapping[str, Any], *, application: str | None = None) -> bool:
        present, value = get_at(body, self.auto_sync_path)
        return not (present and value is True)


GIT_REPOSITORY = _Source(
    name="flux-gitrepository", api_version="source.toolkit.fluxcd.io/v1", kind="GitRepository",
    title="Flux GitRepository", auto_sync_path=("spec", "suspend"),
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class _Applier(_Source):
    """A Kustomization or HelmRelease: it applies objects, which carry its ``<group>/name`` labels."""

    label_group: str = ""
    source_path: tuple[str, ...] = ()  # where its GitRepository is referenced
    ignore_path: tuple[str, ...] = ()  # where its list of IgnoreRules is

    def state(self, body: Mapping[str, Any], *, ref: ObjectRef) -> ControllerState:
        spec, status = body.get("spec") or {}, body.get("status") or {}
        revision, target = status.get("lastAppliedRevision"), spec.get("targetNamespace")
        if revision and is_chart_version(str(revision)):  # a HelmRelease's chart version: no Git commit
            revision = None
        return ControllerState(
            source=f"{self.where(ref)} status.lastAppliedRevision",
            revision=str(revision) if revision else None,
            namespace=str(target) if target else None,
            path_ignores=ignore_rules(body, at=self.ignore_path, where=self.where(ref)),
        )

    def _source(self, body: Mapping[str, Any], *, ref: ObjectRef) -> ObjectRef | None:
        """Its GitRepository, if that is its source."""
        present, source = get_at(body, self.source_path)
        if not (present and isinstance(source, Mapping)) or source.get("kind") != GIT_REPOSITORY.kind:
            return None
        if not source.get("name"):
            return None
        return GIT_REPOSITORY.at(namespace=str(source.get("namespace") or ref.namespace), name=str(source["name"]))

    def fetched(self, body: Mapping[str, Any], *, ref: ObjectRef, get: Getter) -> Fetched:
        repo = self._source(body, ref=ref)
        if repo is None:
            return Fetched(where="its source (not a GitRepository)", commit=None)
        return GIT_REPOSITORY.fetched(get(repo) or {}, ref=repo, get=get)

    def fetch_request(
        self, body: Mapping[str, Any], *, ref: ObjectRef, get: Getter, token: str
    ) -> tuple[ObjectRef, list[Op]] | None:
        repo = self._source(body, ref=ref)
        found = get(repo) if repo is not None else None
        return (
            None
            if repo is None or found is None
            else GIT_REPOSITORY.fetch_request(found, ref=repo, get=get, token=token)
        )

    def applied_by(self, body: Mapping[str, Any], *, namespace: str) -> ObjectRef | None:
        labels = (body.get("metadata") or {}).get("labels") or {}
        name = labels.get(f"{self.label_group}/name")
        if not name:
            return None
        return self.at(namespace=str(labels.get(f"{self.label_group}/namespace") or namespace), name=str(name))


_TARGET_FIELDS = (
    ("group", "group"), ("version", "version"), ("kind", "kind"), ("name", "name"), ("namespace", "namespace"),
    ("label_selector", "labelSelector"), ("annotation_selector", "annotationSelector"),
)  # fmt: skip


def ignore_rules(body: Mapping[str, Any], *, at: tuple[str, ...], where: str) -> tuple[PathIgnore, ...]:
    """The ``IgnoreRule`` list at ``at`` (a Kustomization's ``spec.ignore``, a HelmRelease's
    ``spec.driftDetection.ignore``): each rule's ``paths`` (JSON pointers) for the objects its ``target`` selects
    (kustomize's selector: every field optional; no target, every object). Entries without paths ignore nothing and
    are left out; a selector is checked where it is used (``writeback.drift.ignores.flux``)."""
    present, rules = get_at(body, at)
    out: list[PathIgnore] = []
    for i, rule in enumerate(rules if present and isinstance(rules, list) else ()):
        paths = rule.get("paths") if isinstance(rule, Mapping) else None
        if not isinstance(paths, list) or not paths:
            continue
        target = rule.get("target")
        fields = target if isinstance(target, Mapping) else {}
        selector = {ours: str(fields[theirs]) for ours, theirs in _TARGET_FIELDS if fields.get(theirs)}
        out.append(PathIgnore(where=f"{where} {'.'.join(at)}[{i}]", paths=tuple(str(p) for p in paths), **selector))
    return tuple(out)


KUSTOMIZATION = _Applier(
    name="flux-kustomization", api_version=f"{KUSTOMIZE_GROUP}/v1", kind="Kustomization", title="Flux Kustomization",
    flag="--flux-kustomization", config_key="flux_kustomization",
    help="Flux Kustomization: its last applied revision, target namespace and ignore rules",
    auto_sync_path=("spec", "suspend"), suspendable=True, field_managers=("kustomize-controller",),
    tracking_labels=(f"{KUSTOMIZE_GROUP}/name",), label_group=KUSTOMIZE_GROUP, source_path=("spec", "sourceRef"),
    ignore_path=("spec", "ignore"),
)  # fmt: skip
HELM_RELEASE = _Applier(
    name="flux-helmrelease", api_version=f"{HELM_GROUP}/v2", kind="HelmRelease", title="Flux HelmRelease",
    flag="--flux-helmrelease", config_key="flux_helmrelease",
    help="Flux HelmRelease: its chart, values and release",
    auto_sync_path=("spec", "suspend"), suspendable=True, field_managers=("helm-controller",),
    tracking_labels=(f"{HELM_GROUP}/name",), label_group=HELM_GROUP, source_path=("spec", "chart", "spec", "sourceRef"),
    ignore_path=("spec", "driftDetection", "ignore"),
)  # fmt: skip

KINDS = (KUSTOMIZATION, HELM_RELEASE, GIT_REPOSITORY)
