"""The dry-run stage of ``detect``: what the API server makes of each Git manifest whose object exists and whose raw
diff is not empty, and (one-shot runs) each object decided as soon as its evidence is there."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from writeback.adapters.kube.cluster import Cluster
from writeback.drift.engine import (
    EngineOptions,
    Judge,
    ObjectOutcome,
    PreparedObject,
    Settle,
    needs_dry_run,
    prepare_object,
)
from writeback.drift.evidence.twins import has_twin, twin_manifest
from writeback.errors import ClusterError, ClusterUnreachable
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import DesiredObject, DryRun, DryRunKind, LiveObject
from writeback.pipeline.warming import Warm, ask

__all__ = ["Evidence", "dry_runs"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """What the dry-run stage hands ``compute_drift``: answers and preparations, or (``decide``) the outcomes."""

    dry_run: dict[Identity, DryRun]
    prepared: dict[Identity, PreparedObject]
    known: dict[Identity, ObjectOutcome]
    notes: list[str]


def dry_runs(
    *, cluster: Cluster, live: Sequence[LiveObject], desired: Sequence[DesiredObject], options: EngineOptions,
    kept: Warm | None = None, settle: Settle | None = None, settled: Mapping[Identity, PreparedObject] | None = None,
    decide: Judge | None = None,
) -> Evidence:  # fmt: skip
    """What the API server makes of the Git manifest, only for objects that exist and whose raw diff is not empty.

    A dry-run create of the manifest under a twin name (``core.twins``) is the evidence: it shows the server's
    defaults and spellings for Git's manifest alone. Where no twin can be made (its kind's name is fixed by its
    content, a webhook or quota refuses it), the server-side-apply dry-run onto the live object stands in: it proves
    spellings only. Also returns each compared object's engine preparation, so that ``compute_drift`` does not redo
    it. Where both fail (an invalid manifest, a webhook that refuses), that object falls back to the built-in
    defaults table, as offline, with a note.

    ``kept`` (service cycles): an object whose outcome was kept from the last cycle, for the same inputs, is neither
    prepared nor dry-run; a dry-run answer kept for the same manifest, live resourceVersion and server version is
    not asked again. ``settled``: the preparations of objects settled as their list pages arrived (compact copies:
    never prepared again), by identity. ``decide`` (one-shot runs): each object is decided as soon as its evidence is
    there, and only its outcome is kept (its normalized bodies, ownership and dry-run answer are let go).
    """
    index = kept.index if kept is not None else None
    by_id: Mapping[Identity, LiveObject]
    heads: Mapping[Identity, DesiredObject]
    if index is not None and index.changed is not None:  # only the objects that changed: the index has the others
        by_id = index.have
        assert index.positions is not None  # a kept index is followed
        desired = [index.want[i] for i in sorted((i for i in index.changed if i in index.want),
                                                 key=index.positions.__getitem__)]  # fmt: skip
        heads = index.ahead or {}
    else:
        first: dict[Identity, LiveObject] = {}
        for o in live:
            first.setdefault(o.ref.identity, o)  # the first of two copies, as compute_drift takes it
        by_id = first
        heads = {h.ref.identity: h for h in kept.head} if kept is not None and kept.head is not None else {}
    out = Evidence(dry_run={}, prepared={}, known={}, notes=[])
    refused: list[str] = []
    for d in desired:
        ident = d.ref.identity
        lv = by_id.get(ident)
        if lv is None:
            continue
        if kept is not None and kept.reusable(lv, d, heads):
            continue
        early = settled.get(ident) if settled else None
        dry: DryRun | None = None
        if early is not None and early.live is lv:
            prep = early  # settled by its managers: no dry-run
        else:
            prep = prepare_object(live=lv, desired=d, options=options, settle=settle)
            if needs_dry_run(live=lv, desired=d, options=options, prepared=prep):
                dry = _ask(cluster=cluster, lv=lv, d=d, kept=kept, notes=out.notes, refused=refused)
        if decide is not None:
            out.known[ident] = decide(prep, dry)
            continue
        out.prepared[ident] = prep
        if dry is not None:
            out.dry_run[ident] = dry
    if kept is not None:
        kept.memo.dry_runs_done()
    if refused:
        out.notes.append(
            f"{len(refused)} object(s) could not be dry-run created under a twin name, first {refused[0]}: "
            "their defaults were judged by the server-side-apply dry-run and the defaults table "
            "(writeback needs the `create` verb on the kinds it compares; see docs/deploy.md)"
        )
    return out


def _ask(
    *, cluster: Cluster, lv: LiveObject, d: DesiredObject, kept: Warm | None, notes: list[str], refused: list[str]
) -> DryRun | None:
    """One object's dry-run (a twin's create, else an apply); None when both fail (a note says so)."""
    if has_twin(d.ref):
        try:
            twin = twin_manifest(d.body, d.ref)
            create = partial(cluster.dry_run_create, body=twin, twin_of=d.ref)
            return ask(kept, DryRunKind.CREATE, twin, lv, create)
        except ClusterUnreachable:
            raise
        except ClusterError as e:
            refused.append(f"{d.ref} ({e})")
            if kept is not None:
                kept.round.unkept(d.ref.identity)
    try:
        applied = _with_identity(d.body, d.ref)
        return ask(kept, DryRunKind.APPLY, applied, lv, partial(cluster.dry_run_apply, body=applied))
    except ClusterUnreachable:
        raise
    except ClusterError as e:
        notes.append(f"{d.file}: {e}; built-in defaults used for {d.ref}")
        if kept is not None:
            kept.round.unkept(d.ref.identity)
    return None


def _with_identity(body: Mapping[str, Any], ref: ObjectRef) -> dict[str, Any]:
    out = copy.deepcopy(dict(body))
    meta = dict(out.get("metadata") or {})
    if ref.namespace:
        meta["namespace"] = ref.namespace
    out["metadata"] = meta
    return out
