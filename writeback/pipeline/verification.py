"""Verification of a change set, from ONE rendering of its patched manifests.

The source kind renders what merging the change set would apply (``Source.render_patched``: ``kustomize build`` of
the patched overlay, or the documents of the patched files). ``plan`` renders each change set once
(``PlanOutcome.rendered``) and uses that rendering twice:

- ``check_rendered``: a change set whose rendering does not hold the live values of its drifts is aborted;
- ``verification_line``: the PR body's line, a server-side dry-run apply of the rendered objects against live.
  Expected: the API server would store the written-back fields exactly as they are live (no change). Sensitive
  fields are not compared, and no value is ever put in the line (it goes into the PR body).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from writeback.adapters.kube.cluster import Cluster
from writeback.drift.diffing import diff
from writeback.drift.listkeys import resolver
from writeback.drift.normalizing import normalize
from writeback.errors import PatchError, ToolMissing, WritebackError
from writeback.kube.paths import format_path
from writeback.kube.refs import ObjectRef
from writeback.model import ChangeSet, Side
from writeback.sources.base import Patched, Source
from writeback.sources.changesets import Plan, aborted
from writeback.sources.live_values import find_rendered, mismatches

log = logging.getLogger(__name__)

PREFIX = "Server-side dry-run apply of the patched manifests against the live cluster"


def check_rendered(
    plan: Plan, *, render: Callable[[ChangeSet], Patched], source: Source
) -> tuple[Plan, dict[str, Patched]]:
    """Render each change set that changes files once (``render(cs)``), and abort the ones whose rendering does not
    hold the live values of their located drifts. Returns the plan and the renderings by change set id."""
    out: list[ChangeSet] = []
    errors = list(plan.errors)
    rendered: dict[str, Patched] = {}
    for cs in plan.changesets:
        if not cs.files:
            out.append(cs)
            continue
        try:
            patched = render(cs)
        except ToolMissing:
            raise
        except PatchError as e:
            errors.append(aborted(cs.id, f"{source.render_failure}: {e}"))
            out.append(replace(cs, files=()))
            continue
        unresolved = {(u.resource.identity, u.path) for u in cs.unresolved}
        checked = [d for d in cs.drifts if (d.resource.identity, d.path) not in unresolved]
        wrong = mismatches(patched.objects, checked)
        if wrong:
            why = f"{source.render_name} of the patch disagrees: " + "; ".join(str(w) for w in wrong)
            errors.append(aborted(cs.id, why))
            out.append(replace(cs, files=()))
            continue
        rendered[cs.id] = patched
        out.append(cs)
    return Plan(changesets=tuple(out), errors=tuple(errors)), rendered


@dataclass(frozen=True, slots=True, kw_only=True)
class Verified:
    """A verification line, and whether the API server answered (a failed one is never kept across cycles)."""

    line: str
    answered: bool = True


def verification_line(
    *, cluster: Cluster, cs: ChangeSet, objects: Sequence[Mapping[str, Any]], default_namespace: str | None = None
) -> str:
    """The PR body's verification line for ``cs`` rendered as ``objects`` (it never raises: failures are the line).

    A server-side dry-run apply of each patched object against live must store the written-back fields exactly as
    they are live, and change nothing else live either: merging must add nothing the person did not do.
    """
    return verify_live(cluster=cluster, cs=cs, objects=objects, default_namespace=default_namespace).line


def verify_live(
    *, cluster: Cluster, cs: ChangeSet, objects: Sequence[Mapping[str, Any]], default_namespace: str | None = None
) -> Verified:
    """:func:`verification_line`, saying whether the API server answered."""
    drifts = [d for d in cs.drifts if d.decision.written and not d.sensitive]
    if not drifts:
        return Verified(line=f"{PREFIX}: nothing to compare.")
    try:
        applied: list[tuple[ObjectRef, dict[str, Any]]] = []
        for ref in sorted({d.resource for d in drifts}, key=lambda r: r.identity):
            obj = find_rendered(objects, ref)
            if obj is None:
                continue
            body = dict(obj)
            meta = dict(body.get("metadata") or {})
            if not meta.get("namespace") and (ref.namespace or default_namespace):
                meta["namespace"] = ref.namespace or default_namespace
            body["metadata"] = meta
            applied.append((ref, cluster.dry_run_apply(body=body)))
        wrong = mismatches([result for _, result in applied], drifts)
        changed = [] if wrong else _changes_live(cluster, applied)
    except WritebackError as e:
        log.warning("change set %s: dry-run verification failed: %s", cs.id, e)
        return Verified(line=f"{PREFIX}: failed ({type(e).__name__}); check the manifests by hand.", answered=False)
    if wrong:
        fields = "; ".join(w.field for w in wrong[:5])
        return Verified(
            line=f"{PREFIX}: {len(wrong)} of {len(drifts)} written-back fields would differ from live ({fields})."
        )
    n = len(drifts)
    if changed:
        shown = "; ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        return Verified(
            line=f"{PREFIX}: the {n} written-back field{'s' if n != 1 else ''} match live, but merging would also "
            f"change {len(changed)} other field{'s' if len(changed) != 1 else ''} live ({shown}): review them."
        )
    return Verified(
        line=f"{PREFIX}: no change to the {n} written-back field{'s' if n != 1 else ''} (they match live), and "
        "nothing else."
    )


def _changes_live(cluster: Cluster, applied: Sequence[tuple[ObjectRef, Mapping[str, Any]]]) -> list[str]:
    """The fields (paths, never values) that the dry-run results would store differently from live."""
    out: list[str] = []
    for ref, result in applied:
        live = cluster.get_object(ref=ref)
        if live is None:
            out.append(f"{ref}: not live")
            continue
        keys = resolver(kind=ref.kind, learned={})
        stored = normalize(result, ref=ref, side=Side.LIVE).body
        now = normalize(live, ref=ref, side=Side.LIVE).body
        out.extend(f"{ref}: {format_path(leaf.path)}" for leaf in diff(live=stored, git=now, keys=keys))
    return out


NOT_VERIFIED_LINE = f"{PREFIX}: not run (the change edits chart values, not manifests)."
