"""How the drift engine judges one object: its options compiled once per run (:class:`Run`), and the drifts of one
object from its preparation, its dry-run and the Git head (:func:`object_drifts`). Pure.

``engine.compute_drift``, ``engine.Judge`` and ``engine.needs_dry_run`` decide every object through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from writeback.drift.deciding import ObjectContext, decide
from writeback.drift.diffing import Leaf, diff
from writeback.drift.evidence.brought_defaults import DroppedDefault, separate
from writeback.drift.ignores.flux import flux_skip
from writeback.drift.ignores.rules import Ignores, build_ignores
from writeback.drift.listkeys import KeyResolver, resolver
from writeback.drift.normalizing import is_empty, normalize
from writeback.drift.ownership import Ownership
from writeback.drift.preparing import PreparedObject, is_trimmed, prepare
from writeback.drift.report import REDACTED
from writeback.drift.subtree_matching import matches_within
from writeback.gitops.base import PathIgnore
from writeback.kube.paths import lookup_as_served, parse_pattern
from writeback.kube.pathtypes import ABSENT, FieldPath
from writeback.kube.refs import Identity
from writeback.kube.wellknown import last_applied
from writeback.model import DesiredObject, Drift, Dropped, DryRun, DryRunKind, Op, Side, keyed_digest
from writeback.settings import IgnoreRule, Policy

__all__ = ["EngineOptions", "Run", "object_drifts", "prepare_run"]


@dataclass(frozen=True, kw_only=True)
class EngineOptions:
    """What a drift run is asked: the policy, the ignore rules (writeback's, Argo CD's, Flux's), whether a dry-run is
    at hand, which kinds count as ``new``, the fingerprint key, and whether ``--explain`` keeps the dropped fields."""

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
class Run:
    """What one run of the engine works out once from its options: the ignore rules and the path patterns."""

    options: EngineOptions
    ignores: Ignores
    flag_patterns: tuple[tuple[Any, ...], ...]
    sensitive_patterns: tuple[tuple[Any, ...], ...]
    autoscaled: Mapping[Identity, str] = field(default_factory=dict)  # objects an HPA/ScaledObject scales


def prepare_run(options: EngineOptions) -> Run:
    """The ignore rules and path patterns of ``options``, built once for all the objects of a run."""
    return Run(
        options=options,
        ignores=build_ignores(
            rules=options.ignore, presets=options.policy.presets, argocd=options.argocd_ignore, flux=options.flux_ignore
        ),
        flag_patterns=tuple(parse_pattern(p) for p in options.policy.flag_paths),
        sensitive_patterns=tuple(parse_pattern(p) for p in options.policy.sensitive_paths),
    )


def object_drifts(
    run: Run,
    prep: PreparedObject,
    *,
    dry: DryRun | None,
    head: DesiredObject | None,
    head_given: bool = False,
    revision: str | None = None,
    notes: list[str],
) -> tuple[list[Drift], list[Dropped]]:
    """The drifts of one prepared object and the differences dropped on the way (its preparation's, the dry-run's
    and the defaults Git brought along); ``notes`` is told what the report should say about the object. ``dry``: the
    API server's answer for Git's manifest; ``head``: the object at the Git head when the head is ahead of
    ``revision`` (``head_given``: the head was read, so an object it lacks is pending)."""
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
