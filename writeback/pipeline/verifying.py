"""The verification line of a PR body: a server-side dry-run apply of the patched manifests against live.

Expected: the API server would store the written-back fields exactly as they are live (no change).
Sensitive fields are not compared, and no value is ever put in the line (it goes into the PR body).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from writeback.adapters import kustomize as kustomize_cli
from writeback.adapters.cluster import Cluster
from writeback.core.verifying import find_rendered, mismatches
from writeback.errors import WritebackError
from writeback.model import ChangeSet, Decision
from writeback.yamlreading import load_all

log = logging.getLogger(__name__)

PREFIX = "Server-side dry-run apply of the patched manifests against the live cluster"


def _objects(cs: ChangeSet, *, repo: Path, path: str, source: str) -> list[Mapping[str, Any]]:
    if source == "kustomize":
        text = kustomize_cli.build_patched(repo, path=path, changes={f.path: f.after for f in cs.files})
        docs = load_all(text, source=f"kustomize build {path}")
    else:
        docs = [d for f in cs.files for d in load_all(f.after, source=f.path)]
    out: list[Mapping[str, Any]] = []
    for d in docs:
        if isinstance(d, dict) and d.get("kind") == "List":
            out.extend(i for i in d.get("items") or [] if isinstance(i, dict))
        elif isinstance(d, dict):
            out.append(d)
    return out


def dry_run_verifier(
    *, cluster: Cluster, repo: Path, path: str, source: str, default_namespace: str | None = None
) -> Callable[[ChangeSet], str]:
    """A function giving the verification line of a change set (it never raises: failures are the line)."""

    def verify(cs: ChangeSet) -> str:
        if source == "markers":
            return f"{PREFIX}: not run (the change edits chart values, not manifests)."
        drifts = [
            d for d in cs.drifts if d.decision in (Decision.WRITEBACK, Decision.FLAG) and not d.sensitive
        ]  # fmt: skip
        if not drifts:
            return f"{PREFIX}: nothing to compare."
        try:
            objects = _objects(cs, repo=repo, path=path, source=source)
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
            fields = "; ".join(w.split(" renders as ")[0].split(": not in")[0] for w in wrong[:5])
            return f"{PREFIX}: {len(wrong)} of {len(drifts)} written-back fields would differ from live ({fields})."
        n = len(drifts)
        return f"{PREFIX}: no change to the {n} written-back field{'s' if n != 1 else ''} (they match live)."

    return verify
