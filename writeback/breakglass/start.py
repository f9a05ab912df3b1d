"""``break-glass start``: suspend one controller object (and, with --include-parents, the GitOps parents that would
undo it) with a reason and a TTL.

    start(objects=..., ref=..., reason=..., ttl=..., by=..., now=..., parents=Parents.REFUSE)

Guards come first: a running break-glass is refused (unless ``extend``), a parent whose next sync would put
auto-sync back is refused (exit 2, naming it) unless ``parents`` is INCLUDE or IGNORE, and the authorizer is
asked (SelfSubjectAccessReview) before any write. Parents are suspended from the root down, then the object;
a failure part-way resumes the parents already suspended. Each suspension emits a Kubernetes Event.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from writeback.breakglass import guards, patches
from writeback.breakglass import record as bg
from writeback.breakglass.flow import Held, check_same, patch, read_object, resume_one
from writeback.breakglass.guards import Objects
from writeback.errors import InputError, WritebackError
from writeback.gitops.registry import describe, kind_of
from writeback.kube.refs import ObjectRef

log = logging.getLogger(__name__)


class Parents(enum.StrEnum):
    """What ``start`` does when a GitOps parent would undo the suspension."""

    REFUSE = "refuse"  # exit 2, naming the parent
    INCLUDE = "include"  # --include-parents: suspend the chain too; ``end`` restores it
    IGNORE = "ignore"  # --ignore-parent: go ahead anyway


@dataclass(frozen=True, slots=True, kw_only=True)
class Started:
    held: Held
    extended: bool = False
    auto_sync_was_on: bool = True
    ops: tuple[dict[str, Any], ...] = ()
    dry_run: bool = False
    parents: tuple[ObjectRef, ...] = ()  # suspended with it (--include-parents)
    ignored: tuple[ObjectRef, ...] = ()  # would undo it, gone ahead anyway (--ignore-parent)


def _suspend(objects: Objects, ref: ObjectRef, record: bg.Record, *, current: datetime | None = None) -> None:
    kind = kind_of(ref)

    def compute(fresh: dict[str, Any]) -> list[dict[str, Any]]:
        check_same(fresh, ref, current)
        return patches.suspend_patch(kind=kind, body=fresh, record=record)

    patch(objects, ref, compute)


def start(
    *, objects: Objects, ref: ObjectRef, reason: str, ttl: timedelta, by: str, now: datetime,
    incident: str | None = None, kube_user: str | None = None, extend: bool = False, dry_run: bool = False,
    parents: Parents = Parents.REFUSE,
) -> Started:  # fmt: skip
    """Suspend auto-sync and record why; refuse while a break-glass is running unless ``extend``, and while a
    GitOps parent would undo it unless ``parents`` says otherwise. The access review comes before any write."""
    kind = kind_of(ref)
    at = ref.named()
    body = read_object(objects, ref)
    current = bg.record_of(body, where=at)
    if current is not None and not extend:
        state = "expired at" if current.expired(now=now) else "runs until"
        raise InputError(
            f"{at} is already in break-glass (by {current.by}: {current.reason}); it {state} "
            f"{bg.format_time(current.expires)}. Use --extend to extend it, or `writeback break-glass end`."
        )
    undoing = [] if current is not None else [link for link in guards.chain(objects, ref=ref, body=body) if link.undoes]
    if undoing and parents is Parents.REFUSE:
        raise guards.refusal(ref, undoing)
    chain = tuple(link.ref for link in undoing) if parents is Parents.INCLUDE else ()
    if current is not None:
        record = current.extended(by=by, reason=reason, ttl=ttl, now=now)
    else:
        record = bg.new_record(kind=kind, body=body, by=by, reason=reason, ttl=ttl, now=now, incident=incident,
                               kube_user=kube_user, parents=chain)  # fmt: skip
    ops = patches.suspend_patch(kind=kind, body=body, record=record)
    result = Started(
        held=Held(ref=ref, kind=kind, record=record), extended=current is not None,
        auto_sync_was_on=patches.auto_sync_on(kind=kind, body=body) if current is None else True, ops=tuple(ops),
        dry_run=dry_run, parents=chain, ignored=tuple(link.ref for link in undoing) if not chain else (),
    )  # fmt: skip
    guards.require(objects, [ref, *chain])
    if dry_run:
        return result
    done: list[ObjectRef] = []
    try:
        for link in reversed([link for link in undoing if link.ref in chain]):  # from the root down
            parent_record = bg.new_record(kind=link.kind, body=link.body, by=by, reason=reason, ttl=ttl, now=now,
                                          incident=incident, kube_user=kube_user, held_for=link.child)  # fmt: skip
            _suspend(objects, link.ref, parent_record)
            done.append(link.ref)
            guards.emit(objects, ref=link.ref, body=link.body, record=parent_record, reason=bg.EventReason.STARTED,
                        now=now)  # fmt: skip
        _suspend(objects, ref, record, current=current.start if current else None)
    except WritebackError:
        _undo_parents(objects, done, start=now)
        raise
    reason_ = bg.EventReason.EXTENDED if current else bg.EventReason.STARTED
    guards.emit(objects, ref=ref, body=body, record=record, reason=reason_, now=now, key=str(len(record.extensions)))
    log.warning("break-glass %s on %s by %s until %s: %s", "extended" if current else "started", at, by,
                bg.format_time(record.expires), record.reason)  # fmt: skip
    return result


def _undo_parents(objects: Objects, refs: Sequence[ObjectRef], *, start: datetime) -> None:
    for ref in refs:
        try:
            resume_one(objects, ref, start=start)
        except WritebackError as e:
            log.error("break-glass: could not resume the parent %s after a failed start: %s", describe(ref), e)
