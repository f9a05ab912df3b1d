"""Break-glass, the pure part: the record kept on the controller object, TTLs, and what to say (no I/O).

A break-glass suspends a GitOps controller's auto-sync for one Argo CD Application (``spec.syncPolicy.automated``
removed) or one Flux Kustomization/HelmRelease (``spec.suspend: true``). The record (who, why, until when, the
exact previous value, the parents suspended with it, and once ``end`` ran: the backport PRs it waits for) is
stored as JSON in the annotation ``writeback.io/break-glass`` of the object itself. The JSON patches are in
``breakglass/patches.py``; what suspending means per controller, and the GitOps parents, in ``writeback.gitops``.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from writeback.durations import DurationError, DurationTooLong, format_duration, parse_duration
from writeback.errors import InputError
from writeback.gitops.base import GitOpsController
from writeback.kube.jsonpatch import get_at
from writeback.kube.refs import ObjectRef
from writeback.kube.wellknown import BREAK_GLASS_ANNOTATION

RECORD_VERSION = 1
DEFAULT_MAX_TTL = timedelta(hours=24)


class ResumeAfter(enum.StrEnum):
    """When ``end`` may give auto-sync back to the controller."""

    MERGED = "merged"  # the backport PRs are merged and the controller's source revision has their merge commits
    OPENED = "opened"  # the backport PRs exist (the controller re-applies Git as it is: the hotfix is reverted)


# ---------------------------------------------------------------- durations and times


def parse_ttl(text: str, *, flag: str = "--ttl", maximum: timedelta = DEFAULT_MAX_TTL) -> timedelta:
    """``2h``, ``30m``, ``1h30m``, ``1d``, ``90s`` -> a timedelta, positive and at most ``maximum``
    (``break_glass.max_ttl``, 24h by default); an InputError naming ``flag`` otherwise."""
    try:
        return parse_duration(text, maximum=maximum)
    except DurationTooLong as e:
        raise InputError(f"{flag} {text!r}: {e} (break_glass.max_ttl; extend a running break-glass with "
                         "--extend instead)") from e  # fmt: skip
    except DurationError as e:
        raise InputError(f"{flag} {text!r}: {e}") from e


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
class PullRef:
    """A backport pull/merge request that must be merged before auto-sync resumes."""

    number: int
    url: str | None = None
    merged: bool = False  # seen merged: auto-sync then waits for the controller's source to have the merge commit


@dataclass(frozen=True, slots=True, kw_only=True)
class Ending:
    """``end`` ran with ``resume_after: merged``: the PRs ensured, and auto-sync left suspended until they merge."""

    by: str
    at: datetime
    target: str
    pulls: tuple[PullRef, ...]

    def waiting_text(self) -> str:
        unmerged = [p for p in self.pulls if not p.merged]
        if self.pulls and not unmerged:
            numbers = ", ".join(f"#{p.number}" for p in self.pulls)
            return (f"PR{'s' if len(self.pulls) > 1 else ''} {numbers} merged; waiting for the controller's source "
                    "to have the merge commit")  # fmt: skip
        numbers = ", ".join(f"#{p.number}" for p in unmerged)
        return f"waiting for PR {numbers} to merge" if len(unmerged) == 1 else f"waiting for PRs {numbers} to merge"


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
    kube_user: str | None = None  # who the API server says we are (SelfSubjectReview)
    extensions: tuple[Mapping[str, str], ...] = field(default=())
    parents: tuple[ObjectRef, ...] = ()  # the GitOps parents suspended with it (--include-parents), nearest first
    held_for: ObjectRef | None = None  # on a parent's record: the object whose break-glass suspended it
    ending: Ending | None = None

    def remaining(self, *, now: datetime) -> timedelta:
        return self.expires - now

    def expired(self, *, now: datetime) -> bool:
        return now >= self.expires

    def extended(self, *, by: str, reason: str, ttl: timedelta, now: datetime) -> Record:
        """The same break-glass (same previous value) running ``ttl`` from now."""
        ext = {"by": by, "at": format_time(now), "reason": reason, "expires": format_time(now + ttl)}
        return replace(self, expires=now + ttl, extensions=(*self.extensions, ext))

    def with_merged(self, numbers: Collection[int]) -> Record:
        """The same record, its PRs ``numbers`` noted as merged (``status`` then says what it waits for)."""
        if self.ending is None:
            return self
        pulls = tuple(replace(p, merged=True) if p.number in numbers else p for p in self.ending.pulls)
        return replace(self, ending=replace(self.ending, pulls=pulls))

    def ended(self, *, by: str, now: datetime, target: str, pulls: tuple[PullRef, ...]) -> Record:
        """The same break-glass, now waiting for ``pulls`` to merge (auto-sync still suspended)."""
        ordered = tuple(sorted(pulls, key=lambda p: p.number))
        return replace(self, ending=Ending(by=by, at=now, target=target, pulls=ordered))


def new_record(
    *, kind: GitOpsController, body: Mapping[str, Any], by: str, reason: str, ttl: timedelta, now: datetime,
    incident: str | None = None, kube_user: str | None = None, parents: tuple[ObjectRef, ...] = (),
    held_for: ObjectRef | None = None,
) -> Record:  # fmt: skip
    """A record for ``body`` as it is now (its auto-sync field is the previous value to restore)."""
    if not reason.strip():
        raise InputError("--reason: give the reason for the break-glass (it is shown to everyone and in the PR)")
    present, value = get_at(body, kind.auto_sync_path)
    return Record(
        controller=kind.name, by=by, reason=reason.strip(), start=now, expires=now + ttl,
        previous=Previous(present=present, value=value), incident=incident, kube_user=kube_user, parents=parents,
        held_for=held_for,
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
    if record.parents:
        doc["parents"] = [p.as_json() for p in record.parents]
    if record.held_for is not None:
        doc["heldFor"] = record.held_for.as_json()
    if record.ending is not None:
        e = record.ending
        doc["ending"] = {"by": e.by, "at": format_time(e.at), "target": e.target,
                         "pulls": [{"number": p.number, "url": p.url, **({"merged": True} if p.merged else {})}
                                   for p in e.pulls]}  # fmt: skip
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def _ending_of(doc: Mapping[str, Any] | None) -> Ending | None:
    if doc is None:
        return None
    pulls = tuple(PullRef(number=int(p["number"]), url=p.get("url"), merged=p.get("merged") is True)
                  for p in doc.get("pulls") or ())  # fmt: skip
    return Ending(by=str(doc["by"]), at=parse_time(doc["at"]), target=str(doc.get("target") or ""), pulls=pulls)


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
            parents=tuple(ObjectRef.from_json(p) for p in doc.get("parents") or ()),
            held_for=ObjectRef.from_json(doc["heldFor"]) if doc.get("heldFor") else None,
            ending=_ending_of(doc.get("ending")),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{where}: annotation {BREAK_GLASS_ANNOTATION} is not a valid break-glass record: {e}") from e


def record_of(body: Mapping[str, Any], *, where: str) -> Record | None:
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(BREAK_GLASS_ANNOTATION)
    return None if text is None else load_record(str(text), where=where)


# ---------------------------------------------------------------- what to say (PR bodies, Events)


def incident_text(record: Record, *, ref: ObjectRef) -> str:
    """The PR body's incident/rationale field for a backport made when break-glass ends."""
    who = record.by + (f" (Kubernetes user {record.kube_user})" if record.kube_user not in (None, record.by) else "")
    text = (
        f"Break-glass on {ref.named()} by {who}, started {format_time(record.start)}, "
        f"expiring {format_time(record.expires)}: {record.reason}"
    )
    return text + (f" (incident: {record.incident})" if record.incident else "")


class EventReason(enum.StrEnum):
    """The Kubernetes Events break-glass emits on the controller object."""

    STARTED = "BreakGlassStarted"
    EXTENDED = "BreakGlassExtended"
    ENDED = "BreakGlassEnded"  # auto-sync restored, or (merged-first) left suspended until the PRs merge
    EXPIRED_WAITING = "BreakGlassExpiredWaiting"  # past its TTL, still suspended: the backport PR is not merged


def event_name(ref: ObjectRef, record: Record, reason: EventReason, *, key: str = "") -> str:
    """A deterministic Event name: the same fact (object, break-glass, reason, key) is emitted once."""
    digest = hashlib.sha256(
        "\0".join((ref.kind, ref.namespace or "", ref.name, format_time(record.start), reason, key)).encode()
    ).hexdigest()[:16]
    return f"{ref.name[:200]}.{reason.lower()[10:]}.{digest}"


def event_message(record: Record, reason: EventReason, *, now: datetime, detail: str = "") -> str:
    who = record.by
    if reason is EventReason.STARTED:
        text = f"auto-sync suspended by {who} until {format_time(record.expires)}: {record.reason}"
    elif reason is EventReason.EXTENDED:
        last = record.extensions[-1] if record.extensions else {}
        text = f"break-glass extended by {last.get('by', who)} until {format_time(record.expires)}: " + str(
            last.get("reason", record.reason)
        )
    elif reason is EventReason.ENDED:
        text = f"break-glass ended by {record.ending.by if record.ending else who}: {detail}"
    else:
        late = format_duration(now - record.expires)
        text = f"break-glass expired {late} ago and auto-sync stays suspended: {detail}"
    return text + (f" (incident: {record.incident})" if record.incident else "")
