"""What ``writeback break-glass`` prints: text lines and ``-o json`` documents, and the warnings that name a risk."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from writeback.breakglass import flow
from writeback.breakglass import record as bg
from writeback.breakglass import start as starting
from writeback.cli.exits import Tally
from writeback.durations import format_duration
from writeback.gitops.registry import describe


def print_json(doc: Any) -> None:
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _ref_text(ref: Any) -> str:
    return describe(ref)


def item_json(item: flow.Held, *, now: datetime) -> dict[str, Any]:
    r = item.record
    ending = r.ending
    return {
        "controller": item.kind.name, "namespace": item.ref.namespace, "name": item.ref.name, "by": r.by,
        "kubeUser": r.kube_user, "reason": r.reason, "incident": r.incident, "start": bg.format_time(r.start),
        "expires": bg.format_time(r.expires), "remainingSeconds": int(r.remaining(now=now).total_seconds()),
        "expired": r.expired(now=now), "previous": {"present": r.previous.present, "value": r.previous.value},
        "waiting": None if ending is None else {
            "text": ending.waiting_text(), "by": ending.by, "since": bg.format_time(ending.at),
            "target": ending.target, "pullRequests": [{"number": p.number, "url": p.url, "merged": p.merged}
                                                   for p in ending.pulls],
        },
        "parents": [p.as_json() for p in r.parents],
        "heldFor": r.held_for.as_json() if r.held_for else None,
    }  # fmt: skip


def item_line(item: flow.Held, *, now: datetime) -> str:
    r = item.record
    left = "expired" if r.expired(now=now) else f"{format_duration(r.remaining(now=now))} left"
    line = f"{item.kind.name}  {item.name}  by {r.by}  until {bg.format_time(r.expires)} ({left})"
    if r.ending is not None:
        line += f"  {'expired and ' if r.expired(now=now) else ''}{r.ending.waiting_text()}"
    if r.held_for is not None:
        line += f"  parent of {_ref_text(r.held_for)}"
    if r.parents:
        line += "  with parents " + ", ".join(_ref_text(p) for p in r.parents)
    line += f"  reason: {r.reason}"
    return line + (f"  incident: {r.incident}" if r.incident else "")


def started(result: starting.Started, *, ttl: timedelta, now: datetime, json_output: bool) -> int:
    item = result.held
    for p in result.ignored:
        print(f"warning: --ignore-parent: {item.ref.named()} is applied by {_ref_text(p)}, whose next sync "
              "may put auto-sync back", file=sys.stderr)  # fmt: skip
    if json_output:
        print_json({**item_json(item, now=now), "extended": result.extended, "dryRun": result.dry_run,
                    "parentsSuspended": [p.as_json() for p in result.parents],
                    "parentsIgnored": [p.as_json() for p in result.ignored],
                    "patch": list(result.ops) if result.dry_run else None})  # fmt: skip
        return Tally().exit_code()
    verb = "would " + ("extend" if result.extended else "start") if result.dry_run else (
        "extended" if result.extended else "started")  # fmt: skip
    print(f"break-glass {verb}: {item.ref.named()} until {bg.format_time(item.record.expires)} "
          f"({format_duration(ttl)}), by {item.record.by}: {item.record.reason}")  # fmt: skip
    for p in result.parents:
        print(f"{'would also suspend' if result.dry_run else 'also suspended'} the parent {_ref_text(p)}")
    if not result.auto_sync_was_on:
        print("note: auto-sync was already off; the record still keeps it off and restores it as it was")
    if result.dry_run:
        print("JSON patch:\n" + json.dumps(list(result.ops), indent=2))
    else:
        print("end it with `writeback break-glass end` (it backports the live state by PR first; auto-sync "
              "resumes once that PR is merged)")  # fmt: skip
    return Tally().exit_code()


def warn_resumed(ended: flow.Ended, *, backport: bool, policy: flow.EndPolicy) -> None:
    """Say plainly when auto-sync came back before the fix was in Git: the controller now reverts it."""
    if not ended.restored:
        return
    if not backport:
        print("warning: no backport: the controller now reverts live changes that are not in Git", file=sys.stderr)
    elif ended.unmerged:
        numbers = ", ".join(f"#{p.number}" for p in ended.unmerged)
        why = "--force" if policy.force else "resume_after: opened"
        print(f"warning: {why}: auto-sync resumed before PR {numbers} is merged: the controller re-applies Git as "
              "it is now and reverts the live fix until the PR is merged and applied", file=sys.stderr)  # fmt: skip


def report(ended: Sequence[flow.Ended], *, json_output: bool) -> int:
    if json_output:
        print_json([
            {"controller": e.held.kind.name, "namespace": e.held.ref.namespace, "name": e.held.ref.name,
             "state": str(e.state), "restored": e.restored, "failed": e.failed, "waiting": e.waiting,
             "expiredWaiting": e.expired_waiting, "detail": e.detail,
             "pullRequests": [{"outcome": str(r.outcome), "url": r.url, "detail": r.detail} for r in e.results]}
            for e in ended
        ])  # fmt: skip
    else:
        for e in ended:
            for r in e.results:
                print(f"  {r.target}  {r.outcome}  {r.url or '-'}" + (f"  ({r.detail})" if r.detail else ""))
            state = "FAILED: " if e.failed else ""
            print(f"{e.held.kind.name}  {e.held.name}  {state}{e.detail}")
    return Tally(failed=any(e.failed for e in ended)).exit_code()
