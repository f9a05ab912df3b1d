"""A Helm release as a source kind sees it: read from the GitOps controller object the target follows (an Argo CD
Application with a Helm source, a Flux HelmRelease), found in the repo, and the values edits as locations. Pure.

- The release is read from the object as read live (its chart, values files, release name); the values it holds
  inline are read from its manifest in the repo, which is the layer edited where it holds the values.
- Without a controller object, the target's path must declare exactly one such object: that manifest is read.
- Flux's ``valuesFrom`` ConfigMaps and chart sources are found in the repo (a source object also live).
- Every other Application or HelmRelease of the repo is a release too: a values file it reads is shared, so this
  release's own layer is edited instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from writeback.charts import Artifact
from writeback.errors import PatchError, WritebackError
from writeback.gitops import argocd, flux
from writeback.gitops.base import GitOpsController
from writeback.kube.pathtypes import Index
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import DesiredObject, Drift
from writeback.sources.documents import Manifest, is_yaml, manifests_in, under
from writeback.sources.helm.argocd import releases_from_application
from writeback.sources.helm.capabilities import ClusterFacts
from writeback.sources.helm.choosing import ValuesEdit
from writeback.sources.helm.claiming import claims
from writeback.sources.helm.editing import scalar_value
from writeback.sources.helm.flux import artifact_of, chart_object, release_from_helmrelease
from writeback.sources.helm.model import Form, Release, Where
from writeback.sources.helm.values import field_path
from writeback.sources.locations import Location, Transform, Value

__all__ = ["Followed", "RepoObjects", "claims", "from_repo", "locations", "releases"]

SOURCE_GROUP = "source.toolkit.fluxcd.io"
Get = Callable[[ObjectRef], Mapping[str, Any] | None]


def _nothing(ref: ObjectRef) -> Mapping[str, Any] | None:
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Followed:
    """The controller object a release is read from: its kind, ref and body (live, else its manifest), how to read
    other live objects, and whether they come from the cluster (then Flux's chart artifact may be fetched)."""

    controller: GitOpsController
    ref: ObjectRef
    body: Mapping[str, Any]
    get: Get = _nothing
    cluster: bool = False


@dataclass
class RepoObjects:
    """The Kubernetes objects the repo's YAML files declare, found by identity (a List's items too)."""

    files: Mapping[str, str]
    manifests: list[Manifest] = field(default_factory=list)

    def __post_init__(self) -> None:
        for file in sorted(self.files):
            if not is_yaml(file) or "kind" not in self.files[file]:
                continue
            try:
                self.manifests.extend(manifests_in(self.files[file], file=file))
            except PatchError:
                continue  # a file that does not read declares nothing here (the load names it where it matters)

    def find(self, identity: Identity, *, namespace: str = "") -> Manifest | None:
        """The manifest of ``identity``; one that names no namespace counts as ``namespace`` (or any, if unique)."""
        group, kind, ns, name = identity
        same = [m for m in self.manifests if m.identity[:2] == (group, kind) and m.identity[3] == name]
        exact = [m for m in same if m.identity[2] == ns]
        loose = [m for m in same if m.identity[2] is None and (not namespace or namespace == ns)]
        found = exact or loose
        return found[0] if len(found) == 1 else None

    def desired(self, identity: Identity) -> DesiredObject | None:
        m = self.find(identity, namespace=identity[2] or "")
        if m is None:
            return None
        ref = ObjectRef(api_version=str(m.data.get("apiVersion") or ""), kind=identity[1],
                        namespace=identity[2], name=identity[3])  # fmt: skip
        item = m.prefix[1].index if len(m.prefix) == 2 and isinstance(m.prefix[1], Index) else None
        return DesiredObject(ref=ref, body=m.data, file=m.file, document=m.document, item=item)

    def where(self, ref: ObjectRef) -> Where | None:
        """The document that declares the controller object ``ref`` (a List item does not count: not edited)."""
        m = self.find(ref.identity, namespace=ref.namespace or "")
        return Where(file=m.file, document=m.document) if m is not None and not m.prefix else None


def from_repo(files: Mapping[str, str], path: str) -> tuple[Followed | None, str]:
    """The one Application with a Helm source or HelmRelease that the target's ``path`` declares; else None and
    why (none, or several: the target must name the one it follows)."""
    repo = RepoObjects(files)
    found: list[Followed] = []
    for m in repo.manifests:
        if m.prefix or not under(m.file, path):
            continue
        for controller in (argocd.APPLICATION, flux.HELM_RELEASE):
            group, kind, ns, name = m.identity
            if (group, kind) != (controller.group, controller.kind):
                continue
            ref = controller.at(namespace=ns or "", name=name)
            if claims(controller, m.data, lambda rel: rel in files):
                found.append(Followed(controller=controller, ref=ref, body=m.data))
    if len(found) == 1:
        return found[0], ""
    if not found:
        return None, f"{path or '.'} declares no Argo CD Application with a Helm source and no Flux HelmRelease"
    names = ", ".join(f.controller.where(f.ref) for f in found)
    return None, f"{path or '.'} declares {len(found)} Helm releases ({names}): name the one the target follows"


def _artifact(followed: Followed) -> Artifact | None:
    """In cluster mode, the chart artifact Flux's source-controller serves for a HelmRelease."""
    if not followed.cluster:
        return None
    kind, ns, name = chart_object(followed.body, namespace=followed.ref.namespace or "")
    if not (kind and name):
        return None
    for version in ("v1", "v1beta2"):  # HelmChart and OCIRepository are v1 since Flux 2.3 and 2.6
        try:
            obj = followed.get(ObjectRef(api_version=f"{SOURCE_GROUP}/{version}", kind=kind, namespace=ns, name=name))
        except WritebackError:  # this version is not served: the older one
            continue
        return artifact_of(obj) if obj is not None else None
    return None


def _reader(
    followed: Followed, repo: RepoObjects, facts: ClusterFacts
) -> Callable[[Mapping[str, Any], Where | None, str], tuple[Release, ...]]:
    files = repo.files

    def find(identity: Identity) -> DesiredObject | None:
        found = repo.desired(identity)
        if found is None and identity[0] == SOURCE_GROUP:  # a chart source not in the repo: as read live
            group, kind, ns, name = identity
            body = followed.get(ObjectRef(api_version=f"{group}/v1", kind=kind, namespace=ns, name=name))
            if body is not None:
                ref = ObjectRef(api_version=str(body.get("apiVersion") or ""), kind=kind, namespace=ns, name=name)
                found = DesiredObject(ref=ref, body=body, file="")
        return found

    if followed.controller is flux.HELM_RELEASE:
        artifact = _artifact(followed)
        caps = facts.flux()

        def read_flux(body: Mapping[str, Any], where: Where | None, namespace: str) -> tuple[Release, ...]:
            return (release_from_helmrelease(body, files=files, where=where, namespace=namespace, find=find,
                                             artifact=artifact, kube_version=caps.kube_version,
                                             api_versions=caps.api_versions),)  # fmt: skip

        return read_flux

    caps = facts.argocd()

    def read_argocd(body: Mapping[str, Any], where: Where | None, namespace: str) -> tuple[Release, ...]:
        return releases_from_application(body, files=files, where=where, kube_version=caps.kube_version,
                                         api_versions=caps.api_versions)  # fmt: skip

    return read_argocd


def releases(
    followed: Followed, files: Mapping[str, str], facts: ClusterFacts | None = None
) -> tuple[tuple[Release, ...], tuple[Release, ...]]:
    """The releases of the followed object, and those of every other Helm release the repo declares, rendered
    with the capabilities ``facts`` give (None: helm's defaults)."""
    facts = facts or ClusterFacts()
    repo = RepoObjects(files)
    where = repo.where(followed.ref)
    mine = _reader(followed, repo, facts)(followed.body, where, followed.ref.namespace or "")
    others: list[Release] = []
    for m in repo.manifests:
        group, kind, ns, name = m.identity
        if m.prefix or (where is not None and (m.file, m.document) == (where.file, where.document)):
            continue
        for controller in (argocd.APPLICATION, flux.HELM_RELEASE):
            if (group, kind) != (controller.group, controller.kind) or not claims(
                controller, m.data, files.__contains__
            ):
                continue
            other = Followed(controller=controller, ref=controller.at(namespace=ns or "", name=name), body=m.data)
            try:
                others.extend(_reader(other, repo, facts)(m.data, Where(file=m.file, document=m.document), ns or ""))
            except (ValueError, TypeError, KeyError):
                continue  # another release that does not read: it shares nothing we can tell
    return mine, tuple(others)


def _location(e: ValuesEdit) -> Location:
    """One values edit as a location: at the key of a values file or inline mapping, inside a values text held in
    a string, a parameter's string, or a whole file (``--set-file``)."""
    where, document = e.where, e.where.document or 0
    if where.form is Form.FILE:
        return Location(drift=e.drift, file=where.file, document=0, path=(), transform=Transform.FILE_CONTENT,
                        value=Value(scalar_value(e.value)), via=e.via)  # fmt: skip
    if where.form is Form.SCALAR:
        return Location(drift=e.drift, file=where.file, document=document, path=where.path,
                        value=Value(scalar_value(e.value)), via=e.via)  # fmt: skip
    if where.form is Form.TEXT:
        return Location(drift=e.drift, file=where.file, document=document, path=field_path(e.key), inline=where.path,
                        value=Value(e.value), via=e.via)  # fmt: skip
    return Location(drift=e.drift, file=where.file, document=document, path=(*where.path, *field_path(e.key)),
                    value=Value(e.value), via=e.via)  # fmt: skip


def locations(edits: Sequence[ValuesEdit], drifts: Sequence[Drift]) -> dict[int, tuple[Location, ...]]:
    """The locations of each drift (by ``id``) that ``edits`` write, one per distinct place."""
    out: dict[int, list[Location]] = {}
    for e in edits:
        if any(d is e.drift for d in drifts):
            loc = _location(e)
            mine = out.setdefault(id(e.drift), [])
            if all(
                (x.file, x.document, x.inline, x.path) != (loc.file, loc.document, loc.inline, loc.path) for x in mine
            ):
                mine.append(loc)
    return {k: tuple(v) for k, v in out.items()}
