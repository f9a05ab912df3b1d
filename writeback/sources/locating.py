"""Find the source of each drifted field in the repo texts. Pure (a source kind that renders to locate, Helm, does so
through its own adapter).

A marker (see ``markers.scan``) wins wherever it is; otherwise the target's source kind decides
(``Source.locate``, given every drift no marker binds, at once). Anything that cannot be found for certain is
Unresolved with a reason: it is listed for reviewers, never guessed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace

from writeback.kube.pathtypes import FieldPath
from writeback.kube.refs import REPORT_ONLY_KINDS, Identity, ObjectRef
from writeback.model import Drift, Op, PlanProblem, ProblemKind, Unresolved
from writeback.sources.base import Found, LocateRequest, Source
from writeback.sources.locations import Located, Location, NotFound, Transform
from writeback.sources.markers import Marker, MarkerError, scan_markers

__all__ = ["Located", "Location", "locate"]


def _identity(ref: ObjectRef) -> Identity:
    return ref.identity


def _marker_ref(identity: Identity, live: Mapping[Identity, ObjectRef]) -> ObjectRef:
    if identity in live:
        return live[identity]
    group, kind, namespace, name = identity
    return ObjectRef(api_version=f"{group}/*" if group else "v1", kind=kind, namespace=namespace or None, name=name)


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
    source: Source,
    drifts: Iterable[Drift],
    edit_base: bool = False,
    default_namespace: str | None = None,
    live_refs: Collection[ObjectRef] | None = None,
    request: LocateRequest | None = None,
) -> Located:
    """Where each writeback/flag drift should be written in ``files`` (repo-relative path -> text). ``request``:
    what a rendering source also needs (the checkout, its programs, the controller object); its ``files``,
    ``root``, ``edit_base`` and ``default_namespace`` are those given here."""
    drifts = [d for d in drifts if d.decision.written]
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

    base = request or LocateRequest(files=files, root=root)
    request = replace(base, files=files, root=root, edit_base=edit_base, default_namespace=default_namespace)
    found: list[Found | None] = []  # per drift, in order; None: the source kind says (all of them at once)
    for drift in drifts:
        found.append(_before_source(drift, by_field.get((_identity(drift.resource), drift.path))))
    todo = [d for d, f in zip(drifts, found, strict=True) if f is None]
    results = iter(source.locate(request, todo) if todo else ())
    locations: list[Location] = []
    for drift, result in zip(drifts, found, strict=True):
        got = next(results, None) if result is None else result
        if got is None:
            raise ValueError(f"source {source.name}: fewer results than drifts")
        if isinstance(got, NotFound):
            got = _unresolved(drift, got.reason, bad_markers.get(_identity(drift.resource), []))
        if isinstance(got, Unresolved):
            unresolved.append(got)
        else:
            locations += got
    return Located(locations=tuple(locations), unresolved=tuple(unresolved), errors=tuple(errors))


def _before_source(drift: Drift, marked: list[Marker] | None) -> Found | None:
    """What is decided before the source kind is asked: report-only values, and the fields markers bind."""
    if drift.sensitive or drift.resource.kind in REPORT_ONLY_KINDS:
        reason = f"{drift.resource.kind}: report-only, values are never written to git"
        if drift.sensitive and drift.resource.kind not in REPORT_ONLY_KINDS:
            reason = "sensitive field: report-only, its value is never written to git"
        return Unresolved(resource=drift.resource, path=drift.path, reason=reason)
    if marked and drift.op is Op.REMOVE:
        where = ", ".join(m.where for m in marked)
        reason = f"removed live; the value bound by the marker at {where} cannot express a removal"
        return Unresolved(resource=drift.resource, path=drift.path, reason=reason)
    if marked:
        return tuple(_marker_locations(drift, marked))
    return None


def _unresolved(drift: Drift, reason: str, bad: list[MarkerError]) -> Unresolved:
    if bad:
        reason += "; see the malformed marker at " + ", ".join(f"{e.file}:{e.line}" for e in bad)
    return Unresolved(resource=drift.resource, path=drift.path, reason=reason)
