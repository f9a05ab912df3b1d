"""Break-glass: suspend a GitOps controller's auto-sync during an incident, and backport before it resumes.

start     record (annotation) + auto-sync off, in one conditional JSON patch; refused while one is running
held      the records on the controller objects, with their remaining time
end       backport the live state by PR (``run_cycle``), and only once the PR is ensured: restore the previous
          auto-sync value exactly and remove the record. A failed backport leaves auto-sync suspended.
expire_due  ``end`` for every record whose TTL passed (lists the three controller kinds).
expire_for_target  the service's per-target step: GET only the objects the target names, end the due records.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from writeback import config
from writeback.core import breakglass as bg
from writeback.errors import ClusterError, ConfigError, InputError, WritebackError
from writeback.model import EnsureResult, ObjectRef, Outcome
from writeback.pipeline.cycling import TargetRun

log = logging.getLogger(__name__)

# outcomes after which the live state is safe in Git (or there was nothing to keep)
ENSURED = frozenset({Outcome.CREATED, Outcome.UPDATED, Outcome.UNCHANGED, Outcome.CLOSED})
_ATTEMPTS = 3


class Objects(Protocol):
    """What break-glass needs from the cluster (``writeback.adapters.controllers.ControllerObjects``)."""

    def get(self, *, ref: ObjectRef) -> dict[str, Any] | None: ...

    def list_kind(
        self, *, api_version: str, kind: str, namespace: str | None
    ) -> list[tuple[ObjectRef, dict[str, Any]]]: ...

    def json_patch(self, *, ref: ObjectRef, ops: Sequence[Mapping[str, Any]], field_manager: str) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Held:
    """A controller object in break-glass."""

    ref: ObjectRef
    kind: bg.ControllerKind
    record: bg.Record

    @property
    def name(self) -> str:
        return f"{self.ref.namespace}/{self.ref.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Started:
    held: Held
    extended: bool = False
    auto_sync_was_on: bool = True
    ops: tuple[Mapping[str, Any], ...] = ()
    dry_run: bool = False
    parent: str | None = None  # a GitOps parent whose sync may put auto-sync back


@dataclass(frozen=True, slots=True, kw_only=True)
class Ended:
    """What ``end`` did: ``restored`` only after the backport PR was ensured (or no backport was asked for)."""

    held: Held
    restored: bool
    detail: str
    results: tuple[EnsureResult, ...] = ()
    failed: bool = False


Backport = Callable[[Held], list[EnsureResult]]
BackportFor = Callable[[Held], Backport | None]


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def now_utc() -> datetime:
    return datetime.now(UTC)


def _read(objects: Objects, ref: ObjectRef) -> dict[str, Any]:
    body = objects.get(ref=ref)
    if body is None:
        raise InputError(f"{ref.kind} {ref.namespace}/{ref.name}: not found")
    return body


def get_held(*, objects: Objects, ref: ObjectRef) -> Held | None:
    """The break-glass record of one object (None when it is not in break-glass)."""
    body = _read(objects, ref)
    record = bg.record_of(body, where=f"{ref.kind} {ref.namespace}/{ref.name}")
    return None if record is None else Held(ref=ref, kind=bg.kind_of(ref), record=record)


def held(*, objects: Objects, namespace: str | None) -> list[Held]:
    """Every object in break-glass, in ``namespace`` or in all namespaces (None)."""
    out: list[Held] = []
    for kind in bg.KINDS:
        for ref, body in objects.list_kind(api_version=kind.api_version, kind=kind.kind, namespace=namespace):
            where = f"{ref.kind} {ref.namespace}/{ref.name}"
            try:
                record = bg.record_of(body, where=where)
            except InputError as e:
                log.warning("%s", e)
                continue
            if record is not None:
                out.append(Held(ref=ref, kind=kind, record=record))
    return sorted(out, key=lambda h: (h.record.expires, h.kind.name, h.name))


def _patch(objects: Objects, ref: ObjectRef, compute: Callable[[dict[str, Any]], list[dict[str, Any]]]) -> None:
    """Read, compute a JSON patch testing the resourceVersion, apply; re-read and retry when someone else wrote."""
    for attempt in range(1, _ATTEMPTS + 1):
        ops = compute(_read(objects, ref))
        try:
            objects.json_patch(ref=ref, ops=ops, field_manager=bg.FIELD_MANAGER)
            return
        except ClusterError as e:
            if attempt == _ATTEMPTS:
                raise
            log.info("break-glass patch of %s failed (%s), reading it again", ref, e)


def start(
    *, objects: Objects, ref: ObjectRef, reason: str, ttl: timedelta, by: str, now: datetime,
    incident: str | None = None, kube_user: str | None = None, extend: bool = False, dry_run: bool = False,
) -> Started:  # fmt: skip
    """Suspend auto-sync and record why; refuse while a break-glass is running unless ``extend``."""
    kind = bg.kind_of(ref)
    where = f"{ref.kind} {ref.namespace}/{ref.name}"
    body = _read(objects, ref)
    current = bg.record_of(body, where=where)
    if current is not None and not extend:
        state = "expired at" if current.expired(now=now) else "runs until"
        raise InputError(
            f"{where} is already in break-glass (by {current.by}: {current.reason}); it {state} "
            f"{bg.format_time(current.expires)}. Use --extend to extend it, or `writeback break-glass end`."
        )
    if current is not None:
        record = current.extended(by=by, reason=reason, ttl=ttl, now=now)
    else:
        record = bg.new_record(
            kind=kind, body=body, by=by, reason=reason, ttl=ttl, now=now, incident=incident, kube_user=kube_user
        )
    was_on = bg.auto_sync_on(kind=kind, body=body) if current is None else True
    ops = bg.suspend_patch(kind=kind, body=body, record=record)
    result = Started(
        held=Held(ref=ref, kind=kind, record=record), extended=current is not None, auto_sync_was_on=was_on,
        ops=tuple(ops), dry_run=dry_run, parent=bg.parent_of(body),
    )  # fmt: skip
    if dry_run:
        return result

    def compute(fresh: dict[str, Any]) -> list[dict[str, Any]]:
        again = bg.record_of(fresh, where=where)
        if (again is None) != (current is None) or (again and current and again.start != current.start):
            raise InputError(f"{where}: someone else started or ended a break-glass meanwhile; run it again")
        return bg.suspend_patch(kind=kind, body=fresh, record=record)

    _patch(objects, ref, compute)
    log.warning("break-glass %s on %s by %s until %s: %s", "extended" if current else "started", where, by,
                bg.format_time(record.expires), record.reason)  # fmt: skip
    return result


def restore(*, objects: Objects, item: Held) -> None:
    """Put the previous auto-sync value back exactly and remove the record (only this record: same start)."""
    where = f"{item.ref.kind} {item.name}"

    def compute(fresh: dict[str, Any]) -> list[dict[str, Any]]:
        again = bg.record_of(fresh, where=where)
        if again is None or again.start != item.record.start:
            raise InputError(f"{where}: its break-glass record changed meanwhile (ended or restarted); left alone")
        return bg.resume_patch(kind=item.kind, body=fresh, record=again)

    _patch(objects, item.ref, compute)


def end(*, objects: Objects, item: Held, backport: Backport | None, dry_run: bool = False) -> Ended:
    """Backport (unless ``backport`` is None), then restore auto-sync; never restore after a failed backport."""
    results: tuple[EnsureResult, ...] = ()
    if backport is not None:
        try:
            results = tuple(backport(item))
        except WritebackError as e:
            log.error("break-glass %s: backport failed: %s", item.name, e)
            return Ended(held=item, restored=False, failed=True,
                         detail=f"backport failed ({_short(str(e))}); auto-sync stays suspended")  # fmt: skip
        bad = [r for r in results if r.outcome not in ENSURED]
        if bad:
            why = "; ".join(f"{r.outcome}: {_short(r.detail)}" for r in bad[:3])
            return Ended(held=item, restored=False, failed=True, results=results,
                         detail=f"backport not ensured ({why}); auto-sync stays suspended")  # fmt: skip
    if dry_run:
        return Ended(held=item, restored=False, results=results, detail="dry run: auto-sync would be restored")
    restore(objects=objects, item=item)
    log.warning("break-glass ended on %s %s: auto-sync restored", item.ref.kind, item.name)
    what = "backport ensured, " if backport is not None else "no backport, "
    return Ended(held=item, restored=True, results=results, detail=what + "auto-sync restored")


def expire_due(
    *, objects: Objects, backport_for: BackportFor | None, now: datetime | None = None,
    namespace: str | None = None, dry_run: bool = False,
) -> list[Ended]:  # fmt: skip
    """``end`` every break-glass whose TTL passed. ``backport_for`` returns the backport of a record's target, or
    None when none is known: that record stays suspended and is reported as failed (``backport_for=None``: no
    backport at all, auto-sync is restored directly). One failure never stops the others. Lists the three
    controller kinds: the service uses ``expire_for_target`` instead."""
    moment = now or now_utc()
    out: list[Ended] = []
    for item in held(objects=objects, namespace=namespace):
        if not item.record.expired(now=moment):
            continue
        backport = backport_for(item) if backport_for is not None else None
        if backport_for is not None and backport is None:
            out.append(Ended(held=item, restored=False, failed=True,
                             detail="no target to backport it with; auto-sync stays suspended"))  # fmt: skip
            continue
        try:
            out.append(end(objects=objects, item=item, backport=backport, dry_run=dry_run))
        except WritebackError as e:
            out.append(Ended(held=item, restored=False, failed=True, detail=f"{e}; auto-sync stays suspended"))
    return out


def cycle_backport(run: TargetRun) -> Backport:
    """A backport that runs the ``run --once`` cycle of a target with the record in the incident field."""

    def backport(item: Held) -> list[EnsureResult]:
        return run.with_incident(bg.incident_text(item.record, ref=item.ref)).run()

    return backport


def matching_target(item: Held, targets: Sequence[config.Target]) -> config.Target | None:
    """The target whose Argo CD Application or Flux Kustomization is the object in break-glass."""
    for t in targets:
        if item.kind.name == bg.ARGOCD.name and t.argocd_application == item.name:
            return t
        if item.kind.name == bg.FLUX_KUSTOMIZATION.name and t.flux_kustomization == item.name:
            return t
    return None


def expire_for_targets(
    *, objects: Objects, targets: Sequence[config.Target], run_for: Callable[[config.Target], TargetRun],
    now: datetime | None = None, namespace: str | None = None,
) -> list[Ended]:  # fmt: skip
    """``expire_due`` over a set of targets: each due record is backported with the target that names its object
    (``argocd_application``/``flux_kustomization``) and that target's cycle. (The service runs
    ``expire_for_target`` per target instead, under that target's Lease.)"""

    def backport_for(item: Held) -> Backport | None:
        target = matching_target(item, targets)
        return None if target is None else cycle_backport(run_for(target))

    return expire_due(objects=objects, backport_for=backport_for, now=now, namespace=namespace)


# ---------------------------------------------------------------- one target (the service loop)


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetExpiry:
    """The break-glass records on one target's controller objects, and what ending the due ones did."""

    held: tuple[Held, ...] = ()  # the records found, before any was ended
    ended: tuple[Ended, ...] = ()  # the due ones: restored, or failed (auto-sync stays suspended)

    @property
    def active(self) -> tuple[Held, ...]:
        """The records still in place: not ended, or ended without restoring auto-sync."""
        restored = {e.held.ref for e in self.ended if e.restored}
        return tuple(h for h in self.held if h.ref not in restored)

    @property
    def failed(self) -> tuple[Ended, ...]:
        return tuple(e for e in self.ended if e.failed)


def target_refs(target: config.Target) -> tuple[ObjectRef, ...]:
    """The controller objects a target names: ``argocd_application`` and ``flux_kustomization`` (NAMESPACE/NAME)."""
    out: list[ObjectRef] = []
    for key, kind, value in (
        ("argocd_application", bg.ARGOCD, target.argocd_application),
        ("flux_kustomization", bg.FLUX_KUSTOMIZATION, target.flux_kustomization),
    ):
        if not value:
            continue
        namespace, sep, name = value.partition("/")
        if not (sep and namespace and name) or "/" in name:
            raise ConfigError(f"targets[{target.name}].{key}: {value!r}: expected NAMESPACE/NAME")
        out.append(ObjectRef(api_version=kind.api_version, kind=kind.kind, namespace=namespace, name=name))
    return tuple(out)


def held_for_target(*, objects: Objects, target: config.Target) -> list[Held]:
    """The records on the objects ``target`` names: one GET each, no list. A missing object has none; an
    unreadable record is logged and skipped (like ``held``)."""
    out: list[Held] = []
    for ref in target_refs(target):
        body = objects.get(ref=ref)
        if body is None:
            log.debug("%s %s/%s not found: no break-glass to check", ref.kind, ref.namespace, ref.name)
            continue
        try:
            record = bg.record_of(body, where=f"{ref.kind} {ref.namespace}/{ref.name}")
        except InputError as e:
            log.warning("%s", e)
            continue
        if record is not None:
            out.append(Held(ref=ref, kind=bg.kind_of(ref), record=record))
    return out


def expire_for_target(
    *, objects: Objects, run: TargetRun, now: datetime | None = None, keep_going: Callable[[], bool] | None = None,
) -> TargetExpiry:  # fmt: skip
    """``end`` the records past their TTL on the objects ``target`` names, each backported by the target's cycle
    (``cycle_backport``) and restored only once its PR is ensured. Stops before the next record once
    ``keep_going`` says so (shutdown, lost Lease). No list call: only a GET per named object."""
    moment = now or now_utc()
    assert run.spec.target is not None
    found = held_for_target(objects=objects, target=run.spec.target)
    ended: list[Ended] = []
    for item in found:
        if not item.record.expired(now=moment):
            continue
        if keep_going is not None and not keep_going():
            break
        try:
            ended.append(end(objects=objects, item=item, backport=cycle_backport(run)))
        except WritebackError as e:
            ended.append(Ended(held=item, restored=False, failed=True, detail=f"{e}; auto-sync stays suspended"))
    return TargetExpiry(held=tuple(found), ended=tuple(ended))
