"""Break-glass in the service loop: each target's cycle, under its Lease, first sweeps its break-glass.

    step = check(objects=..., target=..., options=..., keep_going=..., settings=config.break_glass)

Only the Argo CD Application / Flux Kustomization the target names is read (one GET each, no list). A record
past its TTL, or waiting for its backport PR, is ended exactly like ``writeback break-glass expire`` (the one
loop, ``pipeline.breakglass.sweep``): the target's cycle runs as the backport (the record in the PR's incident
field), and with ``resume_after: merged`` auto-sync resumes only once the PR is merged and the controller's
source has the merge commit. A record past its TTL still waiting is an Event and the gauge
``writeback_break_glass_expired_waiting{target}``. While a record is active, the regular cycle's PR carries its
incident text too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from writeback import config as cfg
from writeback.adapters.kube.controllers import AccessReview, ControllerObjects, EventSpec
from writeback.breakglass import flow, targets
from writeback.breakglass import record as bg
from writeback.errors import WritebackError
from writeback.kube.refs import ObjectRef
from writeback.pipeline.cycling import TargetRun

log = logging.getLogger(__name__)


class BreakGlassSuspended(WritebackError):
    """An expired break-glass could not be ended (its backport PR was not ensured): auto-sync stays suspended."""


class CountedObjects:
    """``ControllerObjects`` (the real ``KubeCluster``, not the watch cache), counting requests by verb."""

    def __init__(self, *, objects: ControllerObjects, count: Callable[[str], None]) -> None:
        self._objects = objects
        self._count = count

    def get(self, *, ref: ObjectRef) -> dict[str, Any] | None:
        self._count("get")
        return self._objects.get(ref=ref)

    def list_kind(
        self, *, api_version: str, kind: str, namespace: str | None
    ) -> list[tuple[ObjectRef, dict[str, Any]]]:
        self._count("list")
        return self._objects.list_kind(api_version=api_version, kind=kind, namespace=namespace)

    def json_patch(self, *, ref: ObjectRef, ops: Sequence[Mapping[str, Any]], field_manager: str) -> dict[str, Any]:
        self._count("patch")
        return self._objects.json_patch(ref=ref, ops=ops, field_manager=field_manager)

    def review(self, *, verb: str, ref: ObjectRef) -> AccessReview:
        self._count("create")
        return self._objects.review(verb=verb, ref=ref)

    def whoami(self) -> str | None:
        self._count("create")
        return self._objects.whoami()

    def emit_event(self, event: EventSpec, *, component: str, now: datetime) -> bool:
        self._count("create")
        return self._objects.emit_event(event, component=component, now=now)


def check(
    *, objects: flow.Objects, run: TargetRun, keep_going: Callable[[], bool], settings: cfg.BreakGlass | None = None
) -> targets.TargetExpiry:
    """Sweep the target's break-glass records (backport first, merged-first resume); log each outcome."""
    policy = flow.EndPolicy(resume_after=bg.ResumeAfter((settings or cfg.BreakGlass()).resume_after))
    expiry = targets.expire_for_target(objects=objects, run=run, keep_going=keep_going, policy=policy)
    target = run.spec
    for e in expiry.ended:
        where = f"{e.held.ref.named()}"
        if e.failed:
            log.error("break-glass on %s expired but stays: %s", where, e.detail, extra={"target": target.name})
        elif e.waiting:
            level = logging.ERROR if e.expired_waiting else logging.INFO
            log.log(level, "break-glass on %s: %s", where, e.detail, extra={"target": target.name})
        else:
            log.info("break-glass on %s expired: %s", where, e.detail, extra={"target": target.name})
    return expiry


def failure(expiry: targets.TargetExpiry) -> BreakGlassSuspended | None:
    """The error that fails the cycle (counted, logged, retried with backoff) when an expired record stays."""
    if not expiry.failed:
        return None
    what = "; ".join(f"{e.held.ref.named()}: {e.detail}" for e in expiry.failed)
    return BreakGlassSuspended(f"expired break-glass not ended: {what}")


def with_incident(run: TargetRun, *, active: Sequence[flow.Held]) -> TargetRun:
    """The regular cycle while break-glass is active: its record goes into the PR's incident field."""
    if not active:
        return run
    return run.with_incident("; ".join(bg.incident_text(h.record, ref=h.ref) for h in active))
