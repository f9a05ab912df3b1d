"""The drift engine: live and desired objects in, decided drifts out. Pure.

normalize -> attribute owners (managedFields) -> diff (keyed lists) -> decide. The cluster
adapter supplies the live objects and, per object, the server-side-apply dry-run result of
the Git manifest; without it (offline) the built-in defaults table stands in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from writeback.drift import indexing
from writeback.drift.deciding import ObjectContext, decide
from writeback.drift.diffing import Leaf, diff
from writeback.drift.evidence.brought_defaults import DroppedDefault, separate
from writeback.drift.ignores.flux import flux_skip
from writeback.drift.ignores.rules import Ignores, build_ignores
from writeback.drift.indexing import Index, Part, build
from writeback.drift.listkeys import KeyResolver, resolver
from writeback.drift.normalizing import is_empty, normalize
from writeback.drift.ownership import Ownership
from writeback.drift.preparing import ObjectOutcome, PreparedObject, is_trimmed, prepare, reuse, settled_first
from writeback.drift.report import REDACTED, DriftReport, drift_to_json, report_to_json
from writeback.drift.settling import GitChanges, Settle, oldest_write
from writeback.drift.subtree_matching import matches_within
from writeback.drift.whole_objects import created_live, missing
from writeback.gitops.base import PathIgnore
from writeback.kube.paths import format_path, lookup_as_served, parse_pattern
from writeback.kube.pathtypes import ABSENT, FieldPath
from writeback.kube.refs import Identity
from writeback.kube.wellknown import last_applied
from writeback.model import (
    Decision,
    DesiredObject,
    Drift,
    Dropped,
    DryRun,
    DryRunKind,
    LiveObject,
    Op,
    Side,
    keyed_digest,
)
from writeback.settings import IgnoreRule, Policy

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


@dataclass(frozen=True, kw_only=True)
class EngineOptions:
    policy: Policy = field(default_factory=Policy)
    ignore: tuple[IgnoreRule, ...] = ()
    offline: bool = False  # no dry-run available: the built-in defaults table stands in
    argocd_ignore: tuple[Mapping[str, Any], ...] = ()  # the Application's spec.ignoreDifferences entries
    flux_ignore: tuple[PathIgnore, ...] = ()  # the Kustomization's spec.ignore, the HelmRelease's driftDetection.ignore
    # (group, kind) pairs whose live objects Git does not declare are reported as ``new``;
    # None: the kinds Git declares. An empty set turns ``new`` off.
    new_kinds: frozenset[tuple[str, str]] | None = None
    # HMAC key for sensitive values: their drift carries only a keyed digest of the live value, so a change of a
    # secret value still changes the change set's fingerprint without the value (or an unkeyed hash) leaving.
    fingerprint_key: bytes | None = None
    # keep the dropped fields and their rules (``diff --explain``; an object settled by its managers is one line);
    # without it no ``Dropped`` record is kept (nothing else reads them)
    explain: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class _Run:
    options: EngineOptions
    ignores: Ignores
    flag_patterns: tuple[tuple[Any, ...], ...]
    sensitive_patterns: tuple[tuple[Any, ...], ...]
    autoscaled: Mapping[Identity, str] = field(default_factory=dict)  # objects an HPA/ScaledObject scales


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


def _prepare(options: EngineOptions) -> _Run:
    return _Run(
        options=options,
        ignores=build_ignores(
            rules=options.ignore, presets=options.policy.presets, argocd=options.argocd_ignore, flux=options.flux_ignore
        ),
        flag_patterns=tuple(parse_pattern(p) for p in options.policy.flag_paths),
        sensitive_patterns=tuple(parse_pattern(p) for p in options.policy.sensitive_paths),
    )


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
    run = _prepare(options)
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
    run: _Run, current: LiveObject, d: DesiredObject, *, prepared: PreparedObject | None, dry: DryRun | None,
    at_head: DesiredObject | None, head_given: bool, revision: str | None, settle: Settle | None,
) -> ObjectOutcome:  # fmt: skip
    options = run.options
    said: list[str] = []
    prep = reuse(prepared, current, d, offline=options.offline, policy=options.policy, context=settle,
                 explain=options.explain)  # fmt: skip
    found, lost = _object_drifts(run, prep, dry=dry, head=at_head, head_given=head_given, revision=revision,
                                 notes=said)  # fmt: skip
    kept = tuple(lost) if options.explain else ()  # Dropped records only for --explain
    if not (found or kept or said):
        return _NOTHING  # most objects: one shared outcome (a one-shot run keeps one per object until the report)
    return ObjectOutcome(drifts=tuple(found), dropped=kept, notes=tuple(said))


_NOTHING = ObjectOutcome(drifts=(), dropped=(), notes=())


@dataclass(frozen=True, slots=True)
class Judge:
    """:func:`compute_drift`'s decision of one object, for a caller that decides each object as soon as its
    dry-run is back and lets its preparation go (a one-shot run): hand the outcomes to ``compute_drift`` as
    ``known``, and its report is the one it would make from the preparations and dry-runs."""

    _run: _Run
    head: Mapping[Identity, DesiredObject] | None  # the head's objects when the head is ahead (Secrets aside)
    revision: str | None

    def __call__(self, prep: PreparedObject, dry: DryRun | None) -> ObjectOutcome:
        ident = prep.desired.ref.identity
        at_head = self.head.get(ident) if self.head is not None else None
        return _outcome(self._run, prep.live, prep.desired, prepared=prep, dry=dry, at_head=at_head,
                        head_given=self.head is not None, revision=self.revision, settle=None)  # fmt: skip


def judge(
    *, options: EngineOptions, live: Sequence[LiveObject], desired: Sequence[DesiredObject],
    head: Sequence[DesiredObject] | None, revision: str | None,
) -> Judge:  # fmt: skip
    """A :class:`Judge` for these objects (``live`` and ``desired``: every one compared, for their autoscalers)."""
    run = replace(_prepare(options), autoscaled=autoscalers(live=live, desired=desired))
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
    found, _ = _object_drifts(_prepare(options), prep, dry=None, head=None, notes=[])
    return any(d.decision.written for d in found)


def _object_drifts(
    run: _Run,
    prep: PreparedObject,
    *,
    dry: DryRun | None,
    head: DesiredObject | None,
    head_given: bool = False,
    revision: str | None = None,
    notes: list[str],
) -> tuple[list[Drift], list[Dropped]]:
    if prep.by_managers and not prep.settled and (dry is not None or run.ignores.argo or run.ignores.flux_rules):
        # settled but for a /scale write's spec.replicas: rules that read the normalized bodies, or a dry-run, could
        # decide that difference otherwise, so it takes the normal path
        if is_trimmed(prep):  # settle_first keeps managedFields whenever such a rule is set; dry-runs skip these
            raise RuntimeError(f"{prep.desired.ref.named()}: its managedFields were let go when it was settled")
        prep = prepare(prep.live, prep.desired, offline=prep.offline, explain=run.options.explain)
    obj, d, ref = prep.live, prep.desired, prep.desired.ref
    dropped = list(prep.dropped)
    if prep.settled:
        return [], dropped
    assert prep.ownership is not None
    own: Ownership = prep.ownership
    if prep.by_managers:  # settling.SCALED: the one leaf, spec.replicas, is owned by a controller
        keys = resolver(kind=ref.kind, learned=own.list_keys)
        live_body, git_body = obj.body, d.body  # no rule reads them before the controller's ownership decides
    else:
        assert prep.keys is not None and prep.live_body is not None and prep.git_body is not None
        keys, live_body, git_body = prep.keys, prep.live_body, prep.git_body
    leaves = list(prep.leaves)
    nd = normalize(dry.body, ref=ref, side=Side.LIVE, declared=d.body).body if dry is not None else None
    if nd is not None:
        kept = []
        for leaf in leaves:
            if leaf.op is not Op.ADD and _canonical(leaf, nd, keys):
                dropped.append(Dropped(resource=ref, path=leaf.path, rule="the API server stores it as live has it"))
            else:
                kept.append(leaf)
        leaves = kept
    if not leaves:
        return [], dropped
    pending: tuple[FieldPath, ...] = ()
    if head is not None:
        nh = normalize(head.body, ref=ref, side=Side.GIT)
        pending = tuple(leaf.path for leaf in diff(live=nh.body, git=git_body, keys=keys))
    elif head_given:
        pending = ((),)  # removed from Git at the head: the whole object is pending
    if not own.present:
        notes.append(
            f"{ref}: no managedFields: owners are unknown, so controller-owned fields and webhook "
            "injections cannot be told from a person's change"
        )
    ctx = ObjectContext(
        ref=ref,
        policy=run.options.policy,
        ignores=run.ignores,
        ownership=own,
        keys=keys,
        live=live_body,
        git=git_body,
        dry=nd,
        dry_kind=dry.kind if dry is not None else None,
        last_applied=last_applied(obj.body),
        pending=pending,
        revision=revision,
        flux=flux_skip(d.body, obj.body),
        flag_patterns=run.flag_patterns,
        offline=run.options.offline,
        autoscaler=run.autoscaled.get(ref.identity),
        raw_live=obj.body,
    )
    secret = ref.is_secret
    out: list[Drift] = []
    defaults: list[DroppedDefault] = []
    for leaf in leaves:
        v = decide(ctx, leaf)
        if v.default:
            defaults.append(DroppedDefault(leaf=leaf, rule=v.reason))
            continue
        sensitive = secret or matches_within(run.sensitive_patterns, path=leaf.path, values=(leaf.live, leaf.git))
        reason = v.reason + ("; report-only: the value is sensitive and is never written back" if sensitive else "")
        out.append(
            Drift(
                resource=ref,
                path=leaf.path,
                op=leaf.op,
                live=REDACTED if sensitive and leaf.live is not ABSENT else leaf.live,
                git=REDACTED if sensitive and leaf.git is not ABSENT else leaf.git,
                manager=v.owner.manager if v.owner else None,
                operation=v.owner.operation if v.owner else None,
                time=v.owner.time if v.owner else None,
                decision=v.decision,
                reason=reason,
                rule=v.rule,
                sensitive=sensitive,
                digest=keyed_digest(run.options.fingerprint_key, leaf.live) if sensitive else None,
            )
        )
    git_alone = nd if dry is not None and dry.kind is DryRunKind.CREATE else None
    out, brought = separate(ref=ref, drifts=out, defaults=defaults, git=git_body, git_alone=git_alone)
    return out, [*dropped, *brought]


def _canonical(leaf: Leaf, dry: Mapping[str, Any], keys: KeyResolver) -> bool:
    """The dry-run of Git's value equals live: the difference is only a spelling (or a dropped field)."""
    target = lookup_as_served(dry, leaf.path)
    if leaf.op is Op.REMOVE:
        return is_empty(target)
    return not diff(live=leaf.live, git=target, keys=keys, at=leaf.path)
