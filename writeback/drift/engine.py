"""The drift engine: live and desired objects in, decided drifts out. Pure.

normalize -> attribute owners (managedFields) -> diff (keyed lists) -> decide. The cluster
adapter supplies the live objects and, per object, the server-side-apply dry-run result of
the Git manifest; without it (offline) the built-in defaults table stands in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from writeback.drift import indexing
from writeback.drift.indexing import Index, Part, build
from writeback.drift.judging import EngineOptions, Run, object_drifts, prepare_run
from writeback.drift.preparing import ObjectOutcome, PreparedObject, prepare, reuse, settled_first
from writeback.drift.report import REDACTED, DriftReport, drift_to_json, report_to_json
from writeback.drift.settling import GitChanges, Settle, oldest_write
from writeback.drift.whole_objects import created_live, missing
from writeback.kube.paths import format_path
from writeback.kube.refs import Identity
from writeback.model import (
    Decision,
    DesiredObject,
    Drift,
    Dropped,
    DryRun,
    LiveObject,
)

UNATTRIBUTED_NOTE = (
    "{n} live object(s) carry no managedFields, so their drift is unattributed (not written back): dump them "
    "with `kubectl get -o yaml --show-managed-fields`, or set policy.write_unattributed"
)

__all__ = [
    "REDACTED",
    "UNATTRIBUTED_NOTE",
    "DriftReport",
    "EngineOptions",
    "GitChanges",
    "Judge",
    "ObjectOutcome",
    "PreparedObject",
    "Settle",
    "autoscalers",
    "compute_drift",
    "drift_to_json",
    "judge",
    "needs_dry_run",
    "oldest_write",
    "prepare_object",
    "report_to_json",
    "settle_context",
    "settle_first",
]


def prepare_object(
    *, live: LiveObject, desired: DesiredObject, options: EngineOptions, settle: Settle | None = None
) -> PreparedObject:
    """The per-object preparation both :func:`needs_dry_run` and :func:`compute_drift` accept (``settle``: the
    first stage's context, :func:`settle_context`; without it no object is settled by its managers)."""
    return prepare(live, desired, offline=options.offline, policy=options.policy, context=settle,
                   explain=options.explain)  # fmt: skip


def settle_first(
    *, live: LiveObject, desired: DesiredObject, options: EngineOptions, settle: Settle
) -> PreparedObject | None:
    """The first stage alone, for an object whose list page just arrived: its preparation when its managers settle
    it, holding only a compact copy of ``live`` (``settling.compacted``; the object without managedFields and status,
    ``preparing.trimmed``, when a controller's /scale write leaves it one replicas line to decide, or whole if an Argo
    CD or Flux ignore rule may read it); None when it takes the normal path. The
    preparation is what :func:`prepare_object` makes of ``live`` (``compute_drift`` takes it through ``prepared``)."""
    # an Argo CD or Flux ignore rule reads the bodies normalized: such a /scale write is prepared again (whole)
    trim = not (options.argocd_ignore or options.flux_ignore)
    return settled_first(live, desired, offline=options.offline, policy=options.policy, context=settle,
                         explain=options.explain, compact=True, trim=trim)  # fmt: skip


def settle_context(changes: GitChanges | None, *, head: Sequence[DesiredObject] | None = None) -> Settle | None:
    """The first stage's context: when Git changed each object (None: unknown, so nothing is settled by its managers)
    and the head's objects when the head is ahead of the compared revision."""
    if changes is None:
        return None
    if head is None:
        return Settle(changes=changes)
    return Settle(changes=changes, head={d.ref.identity: d for d in head}, head_given=True)


def compute_drift(
    *,
    live: Sequence[LiveObject],
    desired: Sequence[DesiredObject],
    options: EngineOptions,
    dry_run: Mapping[Identity, DryRun] | None = None,
    head: Sequence[DesiredObject] | None = None,
    revision: str | None = None,
    prepared: Mapping[Identity, PreparedObject] | None = None,
    known: Mapping[Identity, ObjectOutcome] | None = None,
    record: Callable[[Identity, ObjectOutcome], None] | None = None,
    scalers: Mapping[Identity, str] | None = None,
    settle: Settle | None = None,
    index: Index | None = None,
    keep: Callable[[Index], None] | None = None,
) -> DriftReport:
    """Decide every drift between ``live`` and ``desired`` (the Git revision that was applied).

    ``dry_run``: per identity, what the API server made of the Git manifest (a dry-run create of a twin, or a
    server-side-apply dry-run onto the live object).
    ``head``: the desired objects at the branch head when it differs from ``revision``;
    fields the head changed since are ``pending``, not drift.
    ``prepared``: per identity, :func:`prepare_object` results already made (e.g. for ``needs_dry_run``).
    ``known``: per identity, the outcome of an earlier run whose inputs for that object (live, desired, head,
    dry-run, revision, options, autoscaler) the caller proved unchanged: used as is. ``record`` is told every
    outcome computed here (not the known ones). ``scalers``: :func:`autoscalers` of these objects, when the caller
    has it already.
    ``settle``: the first stage's context (:func:`settle_context`): objects whose managers alone settle them are
    not compared (``settling``); without it every object is.
    ``index``: these very objects' index (``drift.indexing``: the last cycle's, advanced to these objects, for the
    same options, revision and server), whose kept parts stand for the identities not in its ``changed``; ``keep``
    is handed this cycle's index with its parts.
    """
    run = prepare_run(options)
    if index is None or index.changed is None:
        index = build(live=live, desired=desired, head=head, include_secrets=options.policy.include_secrets,
                      scalers=scalers, followed=keep is not None)  # fmt: skip
        todo: Iterable[Identity] = index.want
        parts: dict[Identity, Part] = {}
    else:
        assert index.positions is not None  # a kept index is followed
        todo = sorted((i for i in index.changed if i in index.want), key=index.positions.__getitem__)
        parts = dict(index.parts)
    run = replace(run, autoscaled=index.scalers)
    notes: list[str] = list(run.ignores.notes)
    if options.offline:
        notes.append("offline mode: no server-side dry-run; defaults come from the built-in table")
    skipped = index.live_secrets | index.git_secrets
    if skipped:
        notes.append(f"{len(skipped)} Secret(s) not compared: Secrets are excluded unless policy.include_secrets")
    want, have, ahead = index.want, index.have, index.ahead
    for ident in todo:
        d = want[ident]
        current = have.get(ident)
        at_head = ahead.get(ident) if ahead is not None else None
        if current is None:
            part = Part(drifts=(missing(d, gone_at_head=ahead is not None and at_head is None, revision=revision),),
                        dropped=(), notes=())  # fmt: skip
        else:
            outcome = (known or {}).get(ident)
            if outcome is None:
                outcome = _outcome(run, current, d, prepared=(prepared or {}).get(ident),
                                   dry=(dry_run or {}).get(ident), at_head=at_head, head_given=ahead is not None,
                                   revision=revision, settle=settle)  # fmt: skip
                if record is not None:
                    record(ident, outcome)
            part = Part(drifts=outcome.drifts, dropped=outcome.dropped, notes=outcome.notes)
        if part.drifts or part.dropped or part.notes:
            parts[ident] = part
        else:
            parts.pop(ident, None)
    if keep is not None:
        keep(replace(index, parts=parts, changed=None, arrived=()))
    drifts: list[Drift] = []
    dropped: list[Dropped] = []
    # without positions, ``parts`` was made in ``want``'s order (every identity decided here, in that order)
    for ident in sorted(parts, key=index.positions.__getitem__) if index.positions is not None else list(parts):
        part = parts[ident]
        drifts.extend(part.drifts)
        dropped.extend(part.dropped)
        notes.extend(part.notes)
    scope = index.kinds if options.new_kinds is None else options.new_kinds
    for ident in _in_live_order(index):
        obj = have[ident]
        if (obj.ref.group, obj.ref.kind) not in scope:
            continue
        at = ahead is not None and ident in ahead
        created = created_live(obj, policy=run.options.policy, sensitive=run.sensitive_patterns, at_head=at,
                               revision=revision, notes=notes)  # fmt: skip
        if created is not None:
            drifts.append(created)
    drifts.sort(key=lambda d: (d.resource.identity, format_path(d.path)))
    unattributed = {d.resource for d in drifts if d.decision is Decision.UNATTRIBUTED}
    warnings = (UNATTRIBUTED_NOTE.format(n=len(unattributed)),) if unattributed else ()
    return DriftReport(
        mode="offline" if options.offline else "cluster",
        revision=revision,
        drifts=tuple(drifts),
        dropped=tuple(dropped),
        notes=tuple(dict.fromkeys(notes)),
        warnings=warnings,
    )


def _in_live_order(index: Index) -> list[Identity]:
    """The live objects Git does not declare, in the order of the live objects (as the whole path meets them)."""
    extra = index.extra
    if len(extra) <= 1:
        return list(extra)
    if len(extra) <= 16:  # a few: found among the live objects' ids at C speed
        ids = list(map(id, index.live))
        return sorted(extra, key=lambda i: ids.index(id(index.have[i])))
    place = {id(o): n for n, o in enumerate(index.live)}
    return sorted(extra, key=lambda i: place[id(index.have[i])])


def _outcome(
    run: Run, current: LiveObject, d: DesiredObject, *, prepared: PreparedObject | None, dry: DryRun | None,
    at_head: DesiredObject | None, head_given: bool, revision: str | None, settle: Settle | None,
) -> ObjectOutcome:  # fmt: skip
    options = run.options
    said: list[str] = []
    prep = reuse(prepared, current, d, offline=options.offline, policy=options.policy, context=settle,
                 explain=options.explain)  # fmt: skip
    if prep.settled:
        return _settled(prep, explain=options.explain)
    found, lost = object_drifts(run, prep, dry=dry, head=at_head, head_given=head_given, revision=revision,
                                notes=said)  # fmt: skip
    kept = tuple(lost) if options.explain else ()  # Dropped records only for --explain
    if not (found or kept or said):
        return _NOTHING  # most objects: one shared outcome (a one-shot run keeps one per object until the report)
    return ObjectOutcome(drifts=tuple(found), dropped=kept, notes=tuple(said))


_NOTHING = ObjectOutcome(drifts=(), dropped=(), notes=())


def _settled(prep: PreparedObject, *, explain: bool) -> ObjectOutcome:
    """What :func:`object_drifts` makes of a settled object (most objects of a cycle), without asking it: no drift,
    no note, and for ``--explain`` the differences its preparation dropped."""
    return ObjectOutcome(drifts=(), dropped=prep.dropped, notes=()) if explain and prep.dropped else _NOTHING


@dataclass(frozen=True, slots=True)
class Judge:
    """:func:`compute_drift`'s decision of one object, for a caller that decides each object as soon as its
    dry-run is back and lets its preparation go (a one-shot run): hand the outcomes to ``compute_drift`` as
    ``known``, and its report is the one it would make from the preparations and dry-runs."""

    _run: Run
    head: Mapping[Identity, DesiredObject] | None  # the head's objects when the head is ahead (Secrets aside)
    revision: str | None

    def __call__(self, prep: PreparedObject, dry: DryRun | None) -> ObjectOutcome:
        if prep.settled:
            return _settled(prep, explain=self._run.options.explain)
        ident = prep.desired.ref.identity
        at_head = self.head.get(ident) if self.head is not None else None
        return _outcome(self._run, prep.live, prep.desired, prepared=prep, dry=dry, at_head=at_head,
                        head_given=self.head is not None, revision=self.revision, settle=None)  # fmt: skip


def judge(
    *, options: EngineOptions, live: Sequence[LiveObject], desired: Sequence[DesiredObject],
    head: Sequence[DesiredObject] | None, revision: str | None,
) -> Judge:  # fmt: skip
    """A :class:`Judge` for these objects (``live`` and ``desired``: every one compared, for their autoscalers)."""
    run = replace(prepare_run(options), autoscaled=autoscalers(live=live, desired=desired))
    heads: dict[Identity, DesiredObject] | None = None
    if head is not None:
        heads = {}
        for h in head:
            if options.policy.include_secrets or not h.ref.is_secret:
                heads.setdefault(h.ref.identity, h)  # (a head declaring one twice fails in compute_drift)
    return Judge(run, heads, revision)


def autoscalers(*, live: Sequence[LiveObject], desired: Sequence[DesiredObject]) -> dict[Identity, str]:
    """The objects an HPA or a ScaledObject (live or in Git) scales, by identity, each with that autoscaler's name."""
    return indexing.autoscalers(live=live, desired=desired)


def needs_dry_run(
    *, live: LiveObject, desired: DesiredObject, options: EngineOptions, prepared: PreparedObject | None = None
) -> bool:
    """Does this object need a server-side dry-run? Only when, without one, some difference
    would be written back or flagged (an ignored or empty diff needs no dry-run).
    ``prepared``: the :func:`prepare_object` result for these objects, to reuse."""
    prep = reuse(prepared, live, desired, offline=options.offline)
    if prep.settled or prep.by_managers:  # a /scale write's replicas: owned by a controller, never written back
        return False
    found, _ = object_drifts(prepare_run(options), prep, dry=None, head=None, notes=[])
    return any(d.decision.written for d in found)
