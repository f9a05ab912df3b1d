"""Verification of a change set, from ONE rendering of its patched manifests.

``render_change_set`` renders what merging the change set would apply: ``kustomize build`` of the patched overlay,
or the documents of the patched files. ``plan`` renders each change set once (``PlanOutcome.rendered``) and uses
that rendering twice:

- ``check_rendered``: a change set whose rendering does not hold the live values of its drifts is aborted;
- ``verification_line``: the PR body's line, a server-side dry-run apply of the rendered objects against live.
  Expected: the API server would store the written-back fields exactly as they are live (no change). Sensitive
  fields are not compared, and no value is ever put in the line (it goes into the PR body).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from writeback.adapters import kustomize as kustomize_cli
from writeback.adapters.cluster import Cluster
from writeback.core.planning import Plan, aborted
from writeback.core.verifying import find_rendered, mismatches
from writeback.errors import PatchError, ToolMissing, WritebackError
from writeback.manifests import expand_lists
from writeback.model import ChangeSet, Decision
from writeback.yamlreading import load_all

log = logging.getLogger(__name__)

PREFIX = "Server-side dry-run apply of the patched manifests against the live cluster"

Rendered = tuple[Mapping[str, Any], ...]


def render_change_set(cs: ChangeSet, *, repo: Path, path: str, source: str, binary: Path | None = None) -> Rendered:
    """The objects merging ``cs`` would apply (raises PatchError when the patched overlay does not build)."""
    if source == "kustomize":
        text = kustomize_cli.build_patched(repo, path=path, changes={f.path: f.after for f in cs.files}, binary=binary)
        docs = load_all(text, source=f"kustomize build of {path} (patched)")
    else:
        docs = [d for f in cs.files for d in load_all(f.after, source=f.path)]
    return tuple(expand_lists(docs))


def check_rendered(plan: Plan, *, render: Any) -> tuple[Plan, dict[str, Rendered]]:
    """Render each change set that changes files once (``render(cs)``), and abort the ones whose rendering does not
    hold the live values of their located drifts. Returns the plan and the renderings by change set id."""
    out: list[ChangeSet] = []
    errors = list(plan.errors)
    rendered: dict[str, Rendered] = {}
    for cs in plan.changesets:
        if not cs.files:
            out.append(cs)
            continue
        try:
            objects = render(cs)
        except ToolMissing:
            raise
        except PatchError as e:
            errors.append(aborted(cs.id, f"the patched overlay does not build: {e}"))
            out.append(replace(cs, files=()))
            continue
        unresolved = {(u.resource.identity, u.path) for u in cs.unresolved}
        checked = [d for d in cs.drifts if (d.resource.identity, d.path) not in unresolved]
        wrong = mismatches(objects, checked)
        if wrong:
            why = "kustomize build of the patch disagrees: " + "; ".join(str(w) for w in wrong)
            errors.append(aborted(cs.id, why))
            out.append(replace(cs, files=()))
            continue
        rendered[cs.id] = objects
        out.append(cs)
    return Plan(changesets=tuple(out), errors=tuple(errors)), rendered


def verification_line(
    *, cluster: Cluster, cs: ChangeSet, objects: Sequence[Mapping[str, Any]], default_namespace: str | None = None
) -> str:
    """The PR body's verification line for ``cs`` rendered as ``objects`` (it never raises: failures are the line)."""
    drifts = [d for d in cs.drifts if d.decision in (Decision.WRITEBACK, Decision.FLAG) and not d.sensitive]
    if not drifts:
        return f"{PREFIX}: nothing to compare."
    try:
        applied = []
        for ref in {d.resource for d in drifts}:
            obj = find_rendered(objects, ref)
            if obj is None:
                continue
            body = dict(obj)
            meta = dict(body.get("metadata") or {})
            if not meta.get("namespace") and (ref.namespace or default_namespace):
                meta["namespace"] = ref.namespace or default_namespace
            body["metadata"] = meta
            applied.append(cluster.dry_run_apply(body=body))
        wrong = mismatches(applied, drifts)
    except WritebackError as e:
        log.warning("change set %s: dry-run verification failed: %s", cs.id, e)
        return f"{PREFIX}: failed ({type(e).__name__}); check the manifests by hand."
    if wrong:
        fields = "; ".join(w.field for w in wrong[:5])
        return f"{PREFIX}: {len(wrong)} of {len(drifts)} written-back fields would differ from live ({fields})."
    n = len(drifts)
    return f"{PREFIX}: no change to the {n} written-back field{'s' if n != 1 else ''} (they match live)."


MARKERS_LINE = f"{PREFIX}: not run (the change edits chart values, not manifests)."
