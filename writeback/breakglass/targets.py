"""Break-glass and config targets: which target backports a record, and the service's per-target step.

    backing = cycle_backing(TargetRun(spec=..., edges=..., options=...))   # the target's cycle + merge check
    expiry = expire_for_target(objects=..., run=..., policy=...)   # GETs, then ``sweep``

A target names its controller objects with the registered controllers' config keys (``argocd_application``,
``flux_kustomization``, ...: NAMESPACE/NAME); the service reads only those (one GET each, never a list) and ends
them with the one loop, ``sweep``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from writeback import config
from writeback.breakglass import record as bg
from writeback.breakglass import resume
from writeback.breakglass.flow import DEFAULT_POLICY, Backing, Ended, EndPolicy, Held, held_in, sweep
from writeback.breakglass.guards import Objects
from writeback.errors import ConfigError, InputError
from writeback.kube.refs import ObjectRef
from writeback.model import EnsureResult
from writeback.pipeline.cycling import TargetRun, target_forge

log = logging.getLogger(__name__)


def cycle_backing(run: TargetRun) -> Backing:
    """The ``run --once`` cycle of a target as the backport (the record in the incident field), and the
    merged-first check with the target's forge (PR states) and clone (does the controller's commit contain
    the merge commit)."""
    target = run.spec.target
    if target is None:
        raise ConfigError(f"target {run.spec.name}: a backport needs a repository and a forge (repo_url, forge)")

    def backport(item: Held) -> list[EnsureResult]:
        return run.with_incident(bg.incident_text(item.record, ref=item.ref)).run()

    def check(objects: Objects, item: Held) -> resume.Check:
        assert item.record.ending is not None
        forge = target_forge(run.spec, edges=run.edges)
        return resume.check(objects=objects, ref=item.ref, ending=item.record.ending,
                            pulls=lambda number: forge.get_pr(number=number),
                            history=resume.TargetHistory(run=run))  # fmt: skip

    return Backing(target=target.name, backport=backport, check=check)


def matching_target(item: Held, targets: Sequence[config.Target]) -> config.Target | None:
    """The target that names the controller object in break-glass."""
    for t in targets:
        if any(c.name == item.kind.name and text == item.name for c, text in t.controller_objects()):
            return t
    return None


def target_refs(target: config.Target) -> tuple[ObjectRef, ...]:
    """The controller objects a target names by their config keys (NAMESPACE/NAME)."""
    out: list[ObjectRef] = []
    for controller, text in target.controller_objects():
        try:
            out.append(controller.ref(text, what=""))
        except InputError:
            key = f"targets[{target.name}].{controller.config_key}"
            raise ConfigError(f"{key}: {text!r}: expected NAMESPACE/NAME") from None
    return tuple(out)


def held_for_target(*, objects: Objects, target: config.Target) -> list[Held]:
    """The records on the objects ``target`` names: one GET each, no list. A missing object has none; an
    unreadable record is logged and skipped (like ``held``)."""
    out: list[Held] = []
    for ref in target_refs(target):
        body = objects.get(ref=ref)
        if body is None:
            log.debug("%s not found: no break-glass to check", ref.named())
            continue
        item = held_in(ref, body)
        if item is not None:
            out.append(item)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetExpiry:
    """The break-glass records on one target's controller objects, and what the sweep did with them."""

    held: tuple[Held, ...] = ()  # the records found, before any was ended
    ended: tuple[Ended, ...] = ()  # the ones past their TTL or waiting: restored, waiting, or failed

    @property
    def active(self) -> tuple[Held, ...]:
        """The records still in place: not ended, or ended without restoring auto-sync."""
        restored = {e.held.ref for e in self.ended if e.restored}
        return tuple(h for h in self.held if h.ref not in restored)

    @property
    def failed(self) -> tuple[Ended, ...]:
        return tuple(e for e in self.ended if e.failed)

    @property
    def backported(self) -> bool:
        """A backport cycle ran: it was this target's cycle."""
        return any(e.backported for e in self.ended)

    @property
    def expired_waiting(self) -> int:
        """Records past their TTL, still suspended because their backport PR is not merged (alerting pages)."""
        return sum(1 for e in self.ended if e.expired_waiting)


def expire_for_target(
    *, objects: Objects, run: TargetRun, now: datetime | None = None,
    keep_going: Callable[[], bool] | None = None, policy: EndPolicy = DEFAULT_POLICY,
) -> TargetExpiry:  # fmt: skip
    """``sweep`` the records on the objects the target of ``run`` names, each backported by its cycle and resumed
    per ``policy`` (merged-first by default). No list call: only a GET per named object."""
    assert run.spec.target is not None
    found = held_for_target(objects=objects, target=run.spec.target)
    backing = cycle_backing(run)
    ended = sweep(objects=objects, found=found, backing_for=lambda item: backing, now=now, policy=policy,
                  keep_going=keep_going)  # fmt: skip
    return TargetExpiry(held=tuple(found), ended=tuple(ended))
