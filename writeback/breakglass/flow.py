"""Break-glass: suspend a GitOps controller's auto-sync during an incident, backport, and resume merged-first.

start   guards first (GitOps parents that would undo it, an access review, who acts), then per object one
        conditional JSON patch: the record (annotation) + auto-sync off; parents first with --include-parents
held    the records on the controller objects, with their remaining time
end     backport the live state by PR (the target's ``run_cycle``); once the PR is ensured, ``resume_after:
        opened`` (or ``force``) restores auto-sync at once, while ``merged`` (the default) writes the PRs into the
        record and leaves auto-sync suspended until they are merged and the controller's source has them
        (``breakglass_resume``). A failed backport always leaves auto-sync suspended.
sweep   THE expiry loop, for ``break-glass expire`` and the service alike: every record found that is past its
        TTL or waiting for its PRs is ended (``end``); one failure never stops the others.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from writeback.breakglass import guards, patches
from writeback.breakglass import record as bg
from writeback.breakglass.guards import Objects
from writeback.breakglass.resume import Check, Readiness
from writeback.durations import format_duration
from writeback.errors import ClusterConflict, InputError, WritebackError
from writeback.gitops.base import GitOpsController
from writeback.gitops.registry import RECORDED, kind_of
from writeback.kube.refs import ObjectRef
from writeback.kube.wellknown import BREAK_GLASS_MANAGER
from writeback.model import EnsureResult, Outcome

log = logging.getLogger(__name__)

# outcomes after which the live state is safe in Git (or there was nothing to keep)
ENSURED = frozenset({Outcome.CREATED, Outcome.UPDATED, Outcome.UNCHANGED, Outcome.CLOSED})
_OPEN = frozenset({Outcome.CREATED, Outcome.UPDATED, Outcome.UNCHANGED})  # the PR is there, to be merged
_ATTEMPTS = 3

__all__ = ["Objects"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Held:
    """A controller object in break-glass."""

    ref: ObjectRef
    kind: GitOpsController
    record: bg.Record

    @property
    def name(self) -> str:
        return self.ref.ns_name


class EndState(enum.StrEnum):
    RESTORED = "restored"  # auto-sync is back, the record is gone
    WAITING = "waiting"  # merged-first: suspended until the backport PRs are merged and the controller has them
    FAILED = "failed"  # the backport (or the resume) failed: auto-sync stays suspended
    DRY_RUN = "dry-run"  # nothing written


@dataclass(frozen=True, slots=True, kw_only=True)
class Ended:
    """What ``end`` did to one record."""

    held: Held
    state: EndState
    detail: str
    results: tuple[EnsureResult, ...] = ()
    backported: bool = False  # a backport cycle ran (in the service: that was the target's cycle)
    unmerged: tuple[bg.PullRef, ...] = ()  # restored before these PRs merged (resume_after: opened, or --force)
    expired_waiting: bool = False  # past its TTL and still suspended, its backport PR not merged

    @property
    def restored(self) -> bool:
        return self.state is EndState.RESTORED

    @property
    def failed(self) -> bool:
        return self.state is EndState.FAILED

    @property
    def waiting(self) -> bool:
        return self.state is EndState.WAITING


@dataclass(frozen=True, slots=True, kw_only=True)
class EndPolicy:
    resume_after: bg.ResumeAfter = bg.ResumeAfter.MERGED
    force: bool = False  # resume at once, even before the PR is merged (the controller reverts the hotfix)
    by: str | None = None  # who ends it (None: who the API server says we are)


DEFAULT_POLICY = EndPolicy()
Backport = Callable[[Held], list[EnsureResult]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Backing:
    """How one record is backported (the target's cycle) and how its merge is checked (the target's forge/git)."""

    target: str
    backport: Backport
    check: Callable[[Objects, Held], Check]


BackingFor = Callable[[Held], Backing | None]


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def now_utc() -> datetime:
    return datetime.now(UTC)


def read_object(objects: Objects, ref: ObjectRef) -> dict[str, Any]:
    body = objects.get(ref=ref)
    if body is None:
        raise InputError(f"{ref.named()}: not found")
    return body


def get_held(*, objects: Objects, ref: ObjectRef) -> Held | None:
    """The break-glass record of one object (None when it is not in break-glass)."""
    record = bg.record_of(read_object(objects, ref), where=ref.named())
    return None if record is None else Held(ref=ref, kind=kind_of(ref), record=record)


def held(*, objects: Objects, namespace: str | None) -> list[Held]:
    """Every object in break-glass, in ``namespace`` or in all namespaces (None). A kind the cluster does not serve
    is skipped; any other error (unreachable, denied) is raised: it is never "no break-glass"."""
    out: list[Held] = []
    for kind in RECORDED:
        for ref, body in objects.list_kind(api_version=kind.api_version, kind=kind.kind, namespace=namespace):
            item = held_in(ref, body)
            if item is not None:
                out.append(item)
    return sorted(out, key=lambda h: (h.record.expires, h.kind.name, h.name))


def held_in(ref: ObjectRef, body: dict[str, Any]) -> Held | None:
    """The record on an object read while listing or sweeping; an unreadable record is logged and skipped."""
    try:
        record = bg.record_of(body, where=ref.named())
    except InputError as e:
        log.warning("%s", e)
        return None
    return None if record is None else Held(ref=ref, kind=kind_of(ref), record=record)


def _version(body: dict[str, Any]) -> str:
    return str((body.get("metadata") or {}).get("resourceVersion") or "")


def patch(objects: Objects, ref: ObjectRef, compute: Callable[[dict[str, Any]], list[dict[str, Any]]]) -> None:
    """Read, compute a JSON patch testing the resourceVersion, apply. Only a conflict caused by another writer
    (the object's resourceVersion moved) is retried, from the fresh read; any other error (a denial, an
    unreachable cluster, a conflict with nothing changed) is raised at once."""
    body = read_object(objects, ref)
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            objects.json_patch(ref=ref, ops=compute(body), field_manager=BREAK_GLASS_MANAGER)
            return
        except ClusterConflict as e:
            fresh = read_object(objects, ref)
            if _version(fresh) == _version(body) or attempt == _ATTEMPTS:
                raise
            log.info("break-glass patch of %s: someone else wrote it meanwhile (%s); computing it again", ref, e)
            body = fresh


def check_same(fresh: dict[str, Any], ref: ObjectRef, start: datetime | None) -> bg.Record | None:
    again = bg.record_of(fresh, where=ref.named())
    if (again is None) != (start is None) or (again is not None and again.start != start):
        raise InputError(f"{ref.named()}: its break-glass record changed meanwhile (ended or restarted); left alone")
    return again


def resume_one(objects: Objects, ref: ObjectRef, *, start: datetime) -> None:
    kind = kind_of(ref)

    def compute(fresh: dict[str, Any]) -> list[dict[str, Any]]:
        again = check_same(fresh, ref, start)
        assert again is not None
        return patches.resume_patch(kind=kind, body=fresh, record=again)

    patch(objects, ref, compute)


def restore(*, objects: Objects, item: Held, now: datetime | None = None, detail: str = "auto-sync restored") -> None:
    """Put the previous auto-sync value back exactly and remove the record (only this record: same start), then
    the parents suspended with it, nearest first (each record names the one below it and shares the start)."""
    parents = []
    chain = {item.ref, *item.record.parents}
    for p in item.record.parents:
        body = objects.get(ref=p)
        rec = bg.record_of(body, where=p.named()) if body is not None else None
        if rec is not None and rec.held_for in chain and rec.start == item.record.start:
            parents.append(p)
    guards.require(objects, [item.ref, *parents])
    resume_one(objects, item.ref, start=item.record.start)
    for p in parents:
        resume_one(objects, p, start=item.record.start)
    guards.emit(objects, ref=item.ref, body=objects.get(ref=item.ref), record=item.record,
                reason=bg.EventReason.ENDED, now=now or now_utc(), detail=detail, key="restored")  # fmt: skip


def _pulls(results: Sequence[EnsureResult]) -> tuple[bg.PullRef, ...]:
    out = {}
    for r in results:
        number = r.pr
        if r.outcome in _OPEN and number is not None:
            out[number] = bg.PullRef(number=number, url=r.url)
    return tuple(out[n] for n in sorted(out))


def _wait(objects: Objects, item: Held, *, by: str, now: datetime, target: str,
          pulls: tuple[bg.PullRef, ...]) -> bg.Record:  # fmt: skip
    """Write the PRs to wait for into the record; auto-sync stays suspended."""
    out: list[bg.Record] = []

    def compute(fresh: dict[str, Any]) -> list[dict[str, Any]]:
        again = check_same(fresh, item.ref, item.record.start)
        assert again is not None
        out[:] = [again.ended(by=by, now=now, target=target, pulls=pulls)]
        return patches.record_patch(body=fresh, record=out[0])

    guards.require(objects, [item.ref])
    patch(objects, item.ref, compute)
    return out[0]


def _note_merged(objects: Objects, item: Held, *, merged: Sequence[bg.PullRef]) -> Held:
    """Note in the record the PRs seen merged, once (``status`` then says it waits for the controller's source)."""
    numbers = {p.number for p in merged}
    if item.record.with_merged(numbers) == item.record:
        return item
    out: list[bg.Record] = []

    def compute(fresh: dict[str, Any]) -> list[dict[str, Any]]:
        again = check_same(fresh, item.ref, item.record.start)
        assert again is not None
        out[:] = [again.with_merged(numbers)]
        return patches.record_patch(body=fresh, record=out[0])

    guards.require(objects, [item.ref])
    patch(objects, item.ref, compute)
    return Held(ref=item.ref, kind=item.kind, record=out[0])


def end(
    *, objects: Objects, item: Held, backing: Backing | None, policy: EndPolicy = DEFAULT_POLICY,
    now: datetime | None = None, dry_run: bool = False,
) -> Ended:  # fmt: skip
    """Backport (unless ``backing`` is None), then resume per ``policy``; never resume after a failed backport.
    A record already waiting is checked first: resumed when ready, left waiting while merged but not fetched yet,
    backported again while its PR is open (a later hotfix joins the PR) or was closed unmerged."""
    moment = now or now_utc()
    merged: tuple[bg.PullRef, ...] = ()
    if backing is not None and item.record.ending is not None and not policy.force:
        checked = backing.check(objects, item)
        if checked.readiness is Readiness.READY:
            return _restored(objects, item, moment, dry_run, f"{checked.detail}: auto-sync restored")
        if checked.merged_all:
            held = item if dry_run else _note_merged(objects, item, merged=checked.merged)
            return Ended(held=held, state=EndState.WAITING, detail=f"{checked.detail}; auto-sync stays suspended")
        merged = checked.merged
    results: tuple[EnsureResult, ...] = ()
    if backing is not None:
        try:
            results = tuple(backing.backport(item))
        except WritebackError as e:
            log.error("break-glass %s: backport failed: %s", item.name, e)
            return Ended(held=item, state=EndState.FAILED, backported=True,
                         detail=f"backport failed ({_short(str(e))}); auto-sync stays suspended")  # fmt: skip
        bad = [r for r in results if r.outcome not in ENSURED]
        if bad:
            why = "; ".join(f"{r.outcome}: {_short(r.detail)}" for r in bad[:3])
            return Ended(held=item, state=EndState.FAILED, results=results, backported=True,
                         detail=f"backport not ensured ({why}); auto-sync stays suspended")  # fmt: skip
    pulls = _pulls(results)
    wait_for = tuple({p.number: p for p in (*merged, *pulls)}.values())
    now_ok = backing is None or policy.force or policy.resume_after is bg.ResumeAfter.OPENED or not wait_for
    if now_ok:
        what = "backport ensured, " if backing is not None else "no backport, "
        out = _restored(objects, item, moment, dry_run, what + "auto-sync restored")
        return Ended(held=item, state=out.state, detail=out.detail, results=results, backported=backing is not None,
                     unmerged=pulls)  # fmt: skip
    assert backing is not None
    if dry_run:
        return Ended(held=item, state=EndState.DRY_RUN, results=results, backported=True,
                     detail="dry run: auto-sync would stay suspended until the backport PR is merged")  # fmt: skip
    ordered = tuple(sorted(wait_for, key=lambda p: p.number))
    if item.record.ending is not None and item.record.ending.pulls == ordered:  # the same PRs: nothing to write
        text = item.record.ending.waiting_text()
        return Ended(held=item, state=EndState.WAITING, results=results, backported=True,
                     detail=f"backport ensured; auto-sync stays suspended, {text}")  # fmt: skip
    by = policy.by or objects.whoami() or "writeback"
    record = _wait(objects, item, by=by, now=moment, target=backing.target, pulls=ordered)
    assert record.ending is not None
    text = record.ending.waiting_text()
    guards.emit(objects, ref=item.ref, body=objects.get(ref=item.ref), record=record, reason=bg.EventReason.ENDED,
                now=moment, detail=f"{text}; auto-sync stays suspended",
                key=",".join(str(p.number) for p in wait_for))  # fmt: skip
    log.warning("break-glass on %s: backport ensured; auto-sync stays suspended, %s", item.ref.named(), text)
    return Ended(held=Held(ref=item.ref, kind=item.kind, record=record), state=EndState.WAITING, results=results,
                 backported=True, detail=f"backport ensured; auto-sync stays suspended, {text}")  # fmt: skip


def _restored(objects: Objects, item: Held, now: datetime, dry_run: bool, detail: str) -> Ended:
    if dry_run:
        return Ended(held=item, state=EndState.DRY_RUN, detail="dry run: auto-sync would be restored")
    restore(objects=objects, item=item, now=now, detail=detail)
    log.warning("break-glass ended on %s: %s", item.ref.named(), detail)
    return Ended(held=item, state=EndState.RESTORED, detail=detail)


def _orphaned(objects: Objects, item: Held) -> bool:
    """A parent's record whose break-glass is gone: down the chain (``held_for``), the object it was suspended for
    no longer holds it (that break-glass ended or restarted)."""
    below: ObjectRef | None = item.record.held_for
    for _ in range(guards.DEPTH + 1):  # a loop of records is an orphan too
        if below is None:
            return True
        body = objects.get(ref=below)
        rec = bg.record_of(body, where=below.named()) if body is not None else None
        if rec is None or rec.start != item.record.start:
            return True
        if rec.held_for is None:
            return item.ref not in rec.parents
        below = rec.held_for
    return True


def sweep(
    *, objects: Objects, found: Sequence[Held], backing_for: BackingFor | None, now: datetime | None = None,
    policy: EndPolicy = DEFAULT_POLICY, dry_run: bool = False, keep_going: Callable[[], bool] | None = None,
) -> list[Ended]:  # fmt: skip
    """THE expiry loop (``break-glass expire``, the service): ``end`` every record of ``found`` past its TTL or
    waiting for its PRs. ``backing_for`` gives a record's target (None: no target, the record stays and fails;
    ``backing_for=None``: no backport at all, auto-sync is restored directly). A parent's record resumes with its
    child (alone only once orphaned and past its TTL). Stops before the next record once ``keep_going`` says so."""
    moment = now or now_utc()
    out: list[Ended] = []
    for item in found:
        due = item.record.expired(now=moment)
        if item.record.held_for is not None:
            if due and _orphaned(objects, item):
                gone = "its child's break-glass is gone: auto-sync restored"
                out.append(_restored(objects, item, moment, dry_run, gone))
            continue
        if not due and item.record.ending is None:
            continue
        if keep_going is not None and not keep_going():
            break
        backing = backing_for(item) if backing_for is not None else None
        if backing_for is not None and backing is None:
            out.append(Ended(held=item, state=EndState.FAILED,
                             detail="no target to backport it with; auto-sync stays suspended"))  # fmt: skip
            continue
        try:
            ended = end(objects=objects, item=item, backing=backing, policy=policy, now=moment, dry_run=dry_run)
        except WritebackError as e:
            ended = Ended(held=item, state=EndState.FAILED, detail=f"{e}; auto-sync stays suspended")
        if due and not ended.restored and (ended.waiting or item.record.ending is not None):
            ended = _expired_waiting(objects, ended, now=moment, dry_run=dry_run)
        out.append(ended)
    return out


def _expired_waiting(objects: Objects, ended: Ended, *, now: datetime, dry_run: bool) -> Ended:
    item = ended.held
    late = format_duration(now - item.record.expires)
    if not dry_run:
        guards.emit(objects, ref=item.ref, body=None, record=item.record, reason=bg.EventReason.EXPIRED_WAITING,
                    now=now, detail=ended.detail, key=bg.format_time(item.record.expires))  # fmt: skip
    log.error("break-glass on %s expired %s ago and stays suspended: %s", item.ref.named(), late, ended.detail)
    return Ended(held=item, state=ended.state, detail=f"expired {late} ago; {ended.detail}", results=ended.results,
                 backported=ended.backported, unmerged=ended.unmerged, expired_waiting=True)  # fmt: skip
