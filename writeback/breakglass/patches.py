"""Break-glass's JSON patches (no I/O): suspend, resume, and rewrite the record.

Every patch starts with a ``test`` of ``metadata.resourceVersion`` (optimistic concurrency): a write by anyone
else between our read and our patch makes it fail, and the caller reads again.

What "suspended" means per kind:
- Argo CD Application: ``spec.syncPolicy.automated`` removed (restored exactly, ``enabled: false`` included);
- Flux Kustomization/HelmRelease: ``spec.suspend: true`` (restored to its previous value, or removed);
- Argo CD ApplicationSet (a parent): an entry of ``spec.ignoreApplicationDifferences`` for the held
  Application's ``/spec/syncPolicy``, so the ApplicationSet no longer puts ``automated`` back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from writeback.breakglass.record import ANNOTATION, Record, dump_record, get_at
from writeback.errors import InputError
from writeback.gitops.kinds import ARGOCD, ARGOCD_APPLICATIONSET, ControllerKind
from writeback.kube.paths import json_pointer

SYNC_POLICY_POINTER = "/spec/syncPolicy"


def _pointer(path: tuple[str, ...]) -> str:
    return json_pointer(path)


def _set_op(body: Mapping[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """An ``add`` that works when parents are missing: it adds the first missing parent with the rest nested."""
    for depth in range(1, len(path)):
        present, _ = get_at(body, path[:depth])
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


def _ignores_sync_policy(entry: Any, *, application: str) -> bool:
    if not isinstance(entry, Mapping) or entry.get("name") not in (None, "", application):
        return False
    pointers = entry.get("jsonPointers") or ()
    return any(p in ("", "/spec", SYNC_POLICY_POINTER) for p in pointers if isinstance(p, str))


def suspend_patch(*, kind: ControllerKind, body: Mapping[str, Any], record: Record) -> list[dict[str, Any]]:
    """Store the record and switch auto-sync off (see the module docstring for what that means per kind)."""
    ops = [_test_version(body), _set_op(body, ("metadata", "annotations", ANNOTATION), dump_record(record))]
    present, value = get_at(body, kind.path)
    if kind.name == ARGOCD.name:
        if present:
            ops.append({"op": "remove", "path": _pointer(kind.path)})
    elif kind.name == ARGOCD_APPLICATIONSET.name:
        if record.held_for is None:
            raise InputError("an ApplicationSet is suspended only as the parent of an Application")
        entry = {"name": record.held_for.name, "jsonPointers": [SYNC_POLICY_POINTER]}
        current = list(value) if present and isinstance(value, list) else []
        ops.append(_set_op(body, kind.path, [*current, entry]))
    else:
        ops.append(_set_op(body, kind.path, True))
    return ops


def resume_patch(*, kind: ControllerKind, body: Mapping[str, Any], record: Record) -> list[dict[str, Any]]:
    """Restore the previous auto-sync value exactly (or its absence) and remove the record."""
    ops = [_test_version(body)]
    if get_at(body, ("metadata", "annotations", ANNOTATION))[0]:
        ops.append({"op": "remove", "path": _pointer(("metadata", "annotations", ANNOTATION))})
    present, _ = get_at(body, kind.path)
    if record.previous.present:
        ops.append(_set_op(body, kind.path, record.previous.value))
    elif present:
        ops.append({"op": "remove", "path": _pointer(kind.path)})
    return ops


def record_patch(*, body: Mapping[str, Any], record: Record) -> list[dict[str, Any]]:
    """Rewrite only the record (``end`` waiting for the merge); auto-sync stays as it is."""
    return [_test_version(body), _set_op(body, ("metadata", "annotations", ANNOTATION), dump_record(record))]


def auto_sync_on(*, kind: ControllerKind, body: Mapping[str, Any], application: str | None = None) -> bool:
    """Whether the controller syncs this object by itself (Argo CD >= 2.x also has ``automated.enabled``). For an
    ApplicationSet: whether it re-applies ``application``'s syncPolicy (no ignore entry covers it)."""
    present, value = get_at(body, kind.path)
    if kind.name == ARGOCD.name:
        return present and value is not None and not (isinstance(value, Mapping) and value.get("enabled") is False)
    if kind.name == ARGOCD_APPLICATIONSET.name:
        entries = value if present and isinstance(value, list) else []
        return not any(_ignores_sync_policy(e, application=application or "") for e in entries)
    return not (present and value is True)
