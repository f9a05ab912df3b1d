"""Find the source of each drifted field in the repo texts: plain manifests, Kustomize overlays, markers. Pure.

A marker (see ``markers``) wins wherever it is; otherwise the target's source kind decides. Anything that cannot be
found for certain is Unresolved with a reason: it is listed for reviewers, never guessed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from typing import Literal

from writeback.errors import PatchError
from writeback.kube.paths import format_path
from writeback.kube.pathtypes import FieldPath
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import Decision, Drift, Op, PlanProblem, ProblemKind, Unresolved
from writeback.sources.kustomize.model import KustomizeSourceError, Origin, Tree, load_tree
from writeback.sources.kustomize.overlay import locate_in_overlay

from .documents import Manifest, is_yaml, manifests_in, under
from .locations import Located, Location, Transform
from .markers import Marker, MarkerError, scan_markers

SourceKind = Literal["plain", "kustomize", "markers"]
REPORT_ONLY_KINDS = frozenset({"Secret", "SealedSecret"})
LOCATED_DECISIONS = frozenset({Decision.WRITEBACK, Decision.FLAG})

__all__ = ["Located", "Location", "locate"]


def _identity(ref: ObjectRef) -> Identity:
    return ref.identity


def _marker_ref(identity: Identity, live: Mapping[Identity, ObjectRef]) -> ObjectRef:
    if identity in live:
        return live[identity]
    group, kind, namespace, name = identity
    return ObjectRef(api_version=f"{group}/*" if group else "v1", kind=kind, namespace=namespace or None, name=name)


class _Plain:
    """Index of the manifests under the target's path."""

    def __init__(self, files: Mapping[str, str], root: str) -> None:
        self.by_identity: dict[tuple[str, str, str], list[Manifest]] = defaultdict(list)
        self.bad: list[str] = []
        for file in sorted(files):
            if not is_yaml(file) or not under(file, root):
                continue
            try:
                for m in manifests_in(files[file], file=file):
                    group, kind, _, name = m.identity
                    self.by_identity[(group, kind, name)].append(m)
            except PatchError as e:
                self.bad.append(str(e))

    def find(self, ref: ObjectRef, *, default_namespace: str | None) -> Manifest | str:
        group, kind, namespace, name = ref.identity
        cands = self.by_identity.get((group, kind, name), [])
        exact = [m for m in cands if (m.identity[2] or "") == namespace]
        unset = [m for m in cands if m.identity[2] is None and (default_namespace in (None, namespace))]
        found = exact or unset
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            where = ", ".join(f"{m.file} (document {m.document + 1})" for m in found)
            return f"declared more than once: {where}; edit one of them by hand"
        reason = "no manifest declares this resource"
        if self.bad:
            reason += "; unreadable files: " + "; ".join(self.bad)
        return reason


def _sops(m: Manifest, files: Mapping[str, str]) -> bool:
    return "sops" in m.data or ("\nsops:" in files.get(m.file, "") and "ENC[" in files.get(m.file, ""))


def _marker_locations(drift: Drift, markers: Iterable[Marker]) -> list[Location]:
    transforms = {None: Transform.VALUE, "tag": Transform.IMAGE_TAG, "name": Transform.IMAGE_NAME}
    transforms["digest"] = Transform.IMAGE_DIGEST
    return [
        Location(
            drift=drift,
            file=m.file,
            document=m.document,
            path=m.path,
            transform=transforms[m.part],
            via=f"marker at {m.where}",
        )
        for m in markers
    ]


def locate(
    *,
    files: Mapping[str, str],
    root: str,
    source: SourceKind,
    drifts: Iterable[Drift],
    edit_base: bool = False,
    default_namespace: str | None = None,
    live_refs: Collection[ObjectRef] | None = None,
) -> Located:
    """Where each writeback/flag drift should be written in ``files`` (repo-relative path -> text)."""
    drifts = [d for d in drifts if d.decision in LOCATED_DECISIONS]
    scan = scan_markers(files)
    live = {_identity(r): r for r in live_refs or ()}
    unresolved: list[Unresolved] = []
    errors: list[PlanProblem] = []
    by_field: dict[tuple[Identity, FieldPath], list[Marker]] = defaultdict(list)
    for marker in scan.markers:
        if live_refs is not None and marker.identity not in live:
            ref = _marker_ref(marker.identity, live)
            reason = f"{marker.where}: the $writeback marker points to {ref}, which does not exist live"
            unresolved.append(Unresolved(resource=ref, path=marker.field, reason=reason))
            continue
        by_field[(marker.identity, marker.field)].append(marker)
    bad_markers: dict[Identity, list[MarkerError]] = defaultdict(list)
    for err in scan.errors:
        if err.identity is not None:
            bad_markers[err.identity].append(err)
        errors.append(PlanProblem(kind=ProblemKind.UNUSABLE_SOURCE, message=str(err)))

    plain = _Plain(files, root) if source == "plain" else None
    tree: Tree | str | None = None
    if source == "kustomize":
        try:
            tree = load_tree(files, root)
        except PatchError as e:
            tree = str(e)

    locations: list[Location] = []
    for drift in drifts:
        ident = _identity(drift.resource)
        if drift.sensitive or drift.resource.kind in REPORT_ONLY_KINDS:
            reason = f"{drift.resource.kind}: report-only, values are never written to git"
            if drift.sensitive and drift.resource.kind not in REPORT_ONLY_KINDS:
                reason = "sensitive field: report-only, its value is never written to git"
            unresolved.append(Unresolved(resource=drift.resource, path=drift.path, reason=reason))
            continue
        marked = by_field.get((ident, drift.path))
        if marked and drift.op is Op.REMOVE:
            where = ", ".join(m.where for m in marked)
            reason = f"removed live; the value bound by the marker at {where} cannot express a removal"
            unresolved.append(Unresolved(resource=drift.resource, path=drift.path, reason=reason))
            continue
        if marked:
            locations += _marker_locations(drift, marked)
            continue
        found = _locate_one(
            drift,
            files=files,
            root=root,
            source=source,
            plain=plain,
            tree=tree,
            edit_base=edit_base,
            default_namespace=default_namespace,
        )
        found = found if not isinstance(found, str) else _unresolved(drift, found, bad_markers.get(ident, []))
        if isinstance(found, Location):
            locations.append(found)
        else:
            unresolved.append(found)
    return Located(locations=tuple(locations), unresolved=tuple(unresolved), errors=tuple(errors))


def _unresolved(drift: Drift, reason: str, bad: list[MarkerError]) -> Unresolved:
    if bad:
        reason += "; see the malformed marker at " + ", ".join(f"{e.file}:{e.line}" for e in bad)
    return Unresolved(resource=drift.resource, path=drift.path, reason=reason)


def _locate_one(
    drift: Drift,
    *,
    files: Mapping[str, str],
    root: str,
    source: SourceKind,
    plain: _Plain | None,
    tree: Tree | str | None,
    edit_base: bool,
    default_namespace: str | None = None,
) -> Location | Unresolved | str:
    if source == "markers":
        return (
            f"no $writeback marker binds {format_path(drift.path)} of this resource: it is rendered "
            "(for example by Helm), so its source cannot be found"
        )
    if plain is not None:
        found = plain.find(drift.resource, default_namespace=default_namespace)
        if isinstance(found, str):
            return found
        if _sops(found, files):
            return f"{found.file} is SOPS-encrypted: report-only"
        return Location(
            drift=drift, file=found.file, document=found.document, path=found.prefix + drift.path, via="manifest"
        )
    if isinstance(tree, str) or tree is None:
        return f"the kustomization cannot be resolved: {tree}"
    origins = [o for o in tree.origins if o.matches(drift.resource.identity, default_namespace=default_namespace)]
    if not origins:
        return f"the kustomization in {root or '.'} does not produce this resource"
    if len(origins) > 1:
        where = ", ".join(_origin_where(o) for o in origins)
        return f"produced more than once by the kustomization: {where}"
    origin = origins[0]
    if origin.manifest is not None and _sops(origin.manifest, files):
        return f"{origin.manifest.file} is SOPS-encrypted: report-only"
    try:
        return locate_in_overlay(drift=drift, origin=origin, root=root, edit_base=edit_base, files=files)
    except KustomizeSourceError as e:
        return str(e)


def _origin_where(origin: Origin) -> str:
    if origin.manifest is not None:
        return origin.manifest.file
    return " ".join(f"{layer.file} {g.list_key}[{g.index}]" for layer, g in origin.generators)
