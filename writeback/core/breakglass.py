"""Break-glass, the pure part: the record kept on the controller object, TTLs, and the JSON patches (no I/O).

A break-glass suspends a GitOps controller's auto-sync for one Argo CD Application (``spec.syncPolicy.automated``
removed) or one Flux Kustomization/HelmRelease (``spec.suspend: true``). The record (who, why, until when, and the
exact previous value) is stored as JSON in the annotation ``writeback.io/break-glass`` of the object itself.
Every patch is a JSON patch that starts with a ``test`` of ``metadata.resourceVersion`` (optimistic concurrency).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from writeback.errors import InputError
from writeback.model import ObjectRef

ANNOTATION = "writeback.io/break-glass"
FIELD_MANAGER = "writeback-break-glass"
RECORD_VERSION = 1
MAX_TTL = timedelta(days=30)


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerKind:
    """A kind of GitOps controller object break-glass can suspend."""

    name: str  # "argocd" | "flux-kustomization" | "flux-helmrelease"
    flag: str  # the CLI flag that names one
    api_version: str
    kind: str
    path: tuple[str, ...]  # the field that holds auto-sync: removed (Argo CD) or set to true (Flux)

    def ref(self, text: str) -> ObjectRef:
        """``NAMESPACE/NAME`` -> the object's ref; an InputError naming the flag otherwise."""
        ns, sep, name = text.partition("/")
        if not sep or not ns or not name or "/" in name:
            raise InputError(f"{self.flag} {text!r}: expected NAMESPACE/NAME")
        return ObjectRef(api_version=self.api_version, kind=self.kind, namespace=ns, name=name)


ARGOCD = ControllerKind(
    name="argocd", flag="--argocd-app", api_version="argoproj.io/v1alpha1", kind="Application",
    path=("spec", "syncPolicy", "automated"),
)  # fmt: skip
FLUX_KUSTOMIZATION = ControllerKind(
    name="flux-kustomization", flag="--flux-kustomization", api_version="kustomize.toolkit.fluxcd.io/v1",
    kind="Kustomization", path=("spec", "suspend"),
)  # fmt: skip
FLUX_HELMRELEASE = ControllerKind(
    name="flux-helmrelease", flag="--flux-helmrelease", api_version="helm.toolkit.fluxcd.io/v2", kind="HelmRelease",
    path=("spec", "suspend"),
)  # fmt: skip
KINDS: tuple[ControllerKind, ...] = (ARGOCD, FLUX_KUSTOMIZATION, FLUX_HELMRELEASE)


def kind_of(ref: ObjectRef) -> ControllerKind:
    for k in KINDS:
        if (k.api_version.split("/")[0], k.kind) == (ref.api_version.split("/")[0], ref.kind):
            return k
    raise InputError(f"{ref}: break-glass works on Argo CD Applications and Flux Kustomizations/HelmReleases")


# ---------------------------------------------------------------- durations and times

_DURATION = re.compile(r"(\d+)([dhms])")
_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_ttl(text: str, *, flag: str = "--ttl") -> timedelta:
    """``2h``, ``30m``, ``1h30m``, ``1d``, ``90s`` -> a timedelta (positive, at most 30 days)."""
    s = text.strip().lower()
    pos, seconds = 0, 0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        seconds += int(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not s or pos != len(s):
        raise InputError(f"{flag} {text!r}: expected a duration such as 2h, 30m, 1h30m or 1d")
    if seconds <= 0:
        raise InputError(f"{flag} {text!r}: the duration must be longer than zero")
    if seconds > MAX_TTL.total_seconds():  # checked before timedelta(), which overflows on huge numbers
        raise InputError(f"{flag} {text!r}: at most 30d (extend a running break-glass with --extend instead)")
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """A short human duration: ``1h59m``, ``4m10s``, ``2d3h``; negative as ``-5m``."""
    total = int(delta.total_seconds())
    sign, total = ("-", -total) if total < 0 else ("", total)
    parts: list[str] = []
    for unit, size in _UNITS.items():
        if total >= size or (unit == "s" and not parts):
            parts.append(f"{total // size}{unit}")
            total %= size
        if len(parts) == 2:
            break
    return sign + "".join(parts)


def format_time(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


# ---------------------------------------------------------------- the record


@dataclass(frozen=True, slots=True, kw_only=True)
class Previous:
    """The auto-sync field as it was before break-glass: absent, or its exact value."""

    present: bool
    value: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """One break-glass, as stored in the annotation."""

    controller: str  # ControllerKind.name
    by: str
    reason: str
    start: datetime
    expires: datetime
    previous: Previous
    incident: str | None = None
    kube_user: str | None = None
    extensions: tuple[Mapping[str, str], ...] = field(default=())

    def remaining(self, *, now: datetime) -> timedelta:
        return self.expires - now

    def expired(self, *, now: datetime) -> bool:
        return now >= self.expires

    def extended(self, *, by: str, reason: str, ttl: timedelta, now: datetime) -> Record:
        """The same break-glass (same previous value) running ``ttl`` from now."""
        ext = {"by": by, "at": format_time(now), "reason": reason, "expires": format_time(now + ttl)}
        return replace(self, expires=now + ttl, extensions=(*self.extensions, ext))


def new_record(
    *, kind: ControllerKind, body: Mapping[str, Any], by: str, reason: str, ttl: timedelta, now: datetime,
    incident: str | None = None, kube_user: str | None = None,
) -> Record:  # fmt: skip
    """A record for ``body`` as it is now (its auto-sync field is the previous value to restore)."""
    if not reason.strip():
        raise InputError("--reason: give the reason for the break-glass (it is shown to everyone and in the PR)")
    present, value = _get(body, kind.path)
    return Record(
        controller=kind.name, by=by, reason=reason.strip(), start=now, expires=now + ttl,
        previous=Previous(present=present, value=value), incident=incident, kube_user=kube_user,
    )  # fmt: skip


def dump_record(record: Record) -> str:
    doc: dict[str, Any] = {
        "version": RECORD_VERSION,
        "controller": record.controller,
        "by": record.by,
        "kubeUser": record.kube_user,
        "reason": record.reason,
        "incident": record.incident,
        "start": format_time(record.start),
        "expires": format_time(record.expires),
        "previous": {"present": record.previous.present, "value": record.previous.value},
    }
    if record.extensions:
        doc["extensions"] = [dict(e) for e in record.extensions]
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def load_record(text: str, *, where: str) -> Record:
    """The annotation's JSON -> a Record; an InputError naming ``where`` when it is not one of ours."""
    try:
        doc = json.loads(text)
        prev = doc["previous"]
        return Record(
            controller=str(doc["controller"]),
            by=str(doc["by"]),
            kube_user=doc.get("kubeUser"),
            reason=str(doc["reason"]),
            incident=doc.get("incident"),
            start=parse_time(doc["start"]),
            expires=parse_time(doc["expires"]),
            previous=Previous(present=bool(prev["present"]), value=prev.get("value")),
            extensions=tuple(dict(e) for e in doc.get("extensions") or ()),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{where}: annotation {ANNOTATION} is not a valid break-glass record: {e}") from e


def record_of(body: Mapping[str, Any], *, where: str) -> Record | None:
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(ANNOTATION)
    return None if text is None else load_record(str(text), where=where)


def incident_text(record: Record, *, ref: ObjectRef) -> str:
    """The PR body's incident/rationale field for a backport made when break-glass ends."""
    who = record.by + (f" (kubeconfig user {record.kube_user})" if record.kube_user else "")
    text = (
        f"Break-glass on {ref.kind} {ref.namespace}/{ref.name} by {who}, started {format_time(record.start)}, "
        f"expiring {format_time(record.expires)}: {record.reason}"
    )
    return text + (f" (incident: {record.incident})" if record.incident else "")


# ---------------------------------------------------------------- JSON patches


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _pointer(path: tuple[str, ...]) -> str:
    return "".join("/" + _escape(p) for p in path)


def _get(body: Mapping[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    node: Any = body
    for p in path:
        if not isinstance(node, Mapping) or p not in node:
            return False, None
        node = node[p]
    return True, node


def _set_op(body: Mapping[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """An ``add`` that works when parents are missing: it adds the first missing parent with the rest nested."""
    for depth in range(1, len(path)):
        present, _ = _get(body, path[:depth])
        if not present:
            nested: Any = value
            for p in reversed(path[depth:]):
                nested = {p: nested}
            return {"op": "add", "path": _pointer(path[:depth]), "value": nested}
    return {"op": "add", "path": _pointer(path), "value": value}


def _test_version(body: Mapping[str, Any]) -> dict[str, Any]:
    version = (body.get("metadata") or {}).get("resourceVersion")
    if not version:
        raise InputError("the object has no metadata.resourceVersion (not read from the API server?)")
    return {"op": "test", "path": "/metadata/resourceVersion", "value": version}


def suspend_patch(*, kind: ControllerKind, body: Mapping[str, Any], record: Record) -> list[dict[str, Any]]:
    """Store the record and switch auto-sync off: remove ``automated`` (Argo CD) or set ``suspend: true`` (Flux)."""
    ops = [_test_version(body), _set_op(body, ("metadata", "annotations", ANNOTATION), dump_record(record))]
    present, _ = _get(body, kind.path)
    if kind.name == ARGOCD.name:
        if present:
            ops.append({"op": "remove", "path": _pointer(kind.path)})
    else:
        ops.append(_set_op(body, kind.path, True))
    return ops


def resume_patch(*, kind: ControllerKind, body: Mapping[str, Any], record: Record) -> list[dict[str, Any]]:
    """Restore the previous auto-sync value exactly (or its absence) and remove the record."""
    ops = [_test_version(body)]
    if _get(body, ("metadata", "annotations", ANNOTATION))[0]:
        ops.append({"op": "remove", "path": _pointer(("metadata", "annotations", ANNOTATION))})
    present, _ = _get(body, kind.path)
    if record.previous.present:
        ops.append(_set_op(body, kind.path, record.previous.value))
    elif present:
        ops.append({"op": "remove", "path": _pointer(kind.path)})
    return ops


def auto_sync_on(*, kind: ControllerKind, body: Mapping[str, Any]) -> bool:
    """Whether the controller syncs this object by itself (Argo CD >= 2.x also has ``automated.enabled``)."""
    present, value = _get(body, kind.path)
    if kind.name == ARGOCD.name:
        return present and value is not None and not (isinstance(value, Mapping) and value.get("enabled") is False)
    return not (present and value is True)


def parent_of(body: Mapping[str, Any]) -> str | None:
    """The GitOps parent that applies this object (app of apps, ApplicationSet, a Flux Kustomization), if any:
    its next sync may put auto-sync back, so it needs a break-glass too."""
    meta = body.get("metadata") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    for owner in meta.get("ownerReferences") or ():
        if isinstance(owner, Mapping) and owner.get("kind"):
            return f"{owner['kind']} {owner.get('name', '?')}"
    tracking = annotations.get("argocd.argoproj.io/tracking-id") or labels.get("argocd.argoproj.io/instance")
    if tracking:
        return f"Argo CD Application {str(tracking).split(':', 1)[0]}"
    for group, kind in (("kustomize.toolkit.fluxcd.io", "Kustomization"), ("helm.toolkit.fluxcd.io", "HelmRelease")):
        if labels.get(f"{group}/name"):
            return f"Flux {kind} {labels.get(f'{group}/namespace', '?')}/{labels[f'{group}/name']}"
    return None
