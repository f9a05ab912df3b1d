"""One decision per difference, with a reason a person can read: an ordered tuple of named rules. Pure.

As gitops-engine's list of normalizers, :data:`RULES` is tried in order and the first rule that decides wins;
each takes the object's context and the difference, and returns a :class:`Verdict` (whose ``why`` names the
``Rule`` that decided, and says it in words) or None:

1. a default the API server filled in, by the built-in table, then by evidence (not drift at all: the engine
   drops it);
2. pending sync: Git changed the field after the applied revision;
3. Flux does not enforce the object; a configured ignore rule; Argo CD ``ignoreDifferences``; Flux's ignore rules;
4. another manager owns the field: a controller, or the GitOps controller itself (a pending or failed sync);
5. an autoscaler scales the object's replicas; a controller or an admission plugin filled the field;
6. no manager owns the field while managedFields are recorded (Git's value not synced yet, a default, a scale):
   unattributed, never a person's change;
7. a webhook injected an added field (a preset, or no manager recorded);
8. else a person's change: flag when it needs security review, unattributed without managedFields, else writeback.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from writeback.drift.diffing import Leaf, diff, is_prefix
from writeback.drift.evidence.controller_filled import filled_by
from writeback.drift.evidence.defaults import is_default_in, is_default_item
from writeback.drift.ignores.rules import Ignores
from writeback.drift.listkeys import KeyResolver
from writeback.drift.ownership import Ownership
from writeback.drift.security import any_glob, security_flag
from writeback.kube.paths import lookup_as_served
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, PatternSegment
from writeback.kube.refs import ObjectRef
from writeback.kube.wellknown import LAST_APPLIED_PATH
from writeback.model import Decision, DryRunKind, Explanation, FieldOwner, Op, Rule
from writeback.settings import Policy

__all__ = [
    "RULES",
    "Difference",
    "ObjectContext",
    "Role",
    "Verdict",
    "decide",
    "manager_role",
    "table_default",
]


class Role(enum.Enum):
    CONTROLLER = "controller"
    GITOPS = "gitops"
    PERSON = "person"


def manager_role(policy: Policy, manager: str) -> Role:
    """Controller, the GitOps tool itself, or a person (any other manager, unknown ones included)."""
    if any_glob(policy.gitops_managers, manager):
        return Role.GITOPS
    if any_glob((*policy.controller_managers, *policy.extra_controller_managers), manager):
        return Role.CONTROLLER
    return Role.PERSON


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectContext:
    """Everything the decision needs about one object (built by the engine)."""

    ref: ObjectRef
    policy: Policy
    ignores: Ignores
    ownership: Ownership
    keys: KeyResolver
    live: Mapping[str, Any]  # normalized
    git: Mapping[str, Any]  # normalized
    dry: Mapping[str, Any] | None = None  # normalized dry-run result
    dry_kind: DryRunKind | None = None  # how ``dry`` was made (only a dry-run create proves defaults)
    last_applied: Mapping[str, Any] | None = None
    pending: tuple[FieldPath, ...] = ()
    revision: str | None = None
    flux: Explanation | None = None  # Flux does not enforce the object
    flag_patterns: tuple[tuple[PatternSegment, ...], ...] = ()
    offline: bool = False
    autoscaler: str | None = None  # the HPA or ScaledObject that scales this object ("HorizontalPodAutoscaler ns/x")
    raw_live: Mapping[str, Any] = field(default_factory=dict)  # the live object as read (annotations are evidence)


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    decision: Decision
    why: Explanation
    owner: FieldOwner | None = None
    default: bool = False  # a default the API server filled in: not drift at all (the engine drops it)

    @property
    def reason(self) -> str:
        return self.why.text

    @property
    def rule(self) -> Rule:
        return self.why.rule


_UNSET: Any = object()


class Difference:
    """The difference being decided: its leaf, and who owns its field (looked up once, by the first rule that
    asks: most differences are decided before anyone does)."""

    __slots__ = ("_ctx", "_owner", "leaf")

    def __init__(self, ctx: ObjectContext, leaf: Leaf) -> None:
        self._ctx = ctx
        self.leaf = leaf
        self._owner: FieldOwner | None = _UNSET

    @property
    def owner(self) -> FieldOwner | None:
        if self._owner is _UNSET:
            leaf = self.leaf
            if leaf.op is Op.REMOVE:
                self._owner = None
            else:
                whole = leaf.item or isinstance(leaf.live, Mapping | list)
                self._owner = self._ctx.ownership.owner_of(leaf.path, subtree=whole)
        return self._owner


DecisionRule = Callable[[ObjectContext, Difference], Verdict | None]


def decide(ctx: ObjectContext, leaf: Leaf) -> Verdict:
    """The decision for one difference of one object: the first of :data:`RULES` that decides."""
    d = Difference(ctx, leaf)
    for rule in RULES:
        verdict = rule(ctx, d)
        if verdict is not None:
            return verdict
    raise AssertionError("the last rule always decides")  # pragma: no cover


def _ignore(why: Explanation | None, d: Difference) -> Verdict | None:
    return None if why is None else Verdict(decision=Decision.IGNORE, why=why, owner=d.owner)


# ---------------------------------------------------------------- the rules, in order


def _table_default(ctx: ObjectContext, d: Difference) -> Verdict | None:
    why = table_default(kind=ctx.ref.kind, leaf=d.leaf, live=ctx.live, offline=ctx.offline)
    return None if why is None else Verdict(decision=Decision.IGNORE, why=why, default=True)


def _server_default(ctx: ObjectContext, d: Difference) -> Verdict | None:
    if d.leaf.op is not Op.ADD:
        return None
    why = _defaulted(ctx, d.leaf, d.owner)
    return None if why is None else Verdict(decision=Decision.IGNORE, why=why, owner=d.owner, default=True)


def _pending_sync(ctx: ObjectContext, d: Difference) -> Verdict | None:
    path = d.leaf.path
    if not any(is_prefix(p, path) or is_prefix(path, p) for p in ctx.pending):
        return None
    at = f" {ctx.revision}" if ctx.revision else ""
    why = Explanation(Rule.PENDING_SYNC, f"pending sync: Git changed this field after the applied revision{at}")
    return Verdict(decision=Decision.PENDING, why=why, owner=d.owner)


def _flux_annotation(ctx: ObjectContext, d: Difference) -> Verdict | None:
    return _ignore(ctx.flux, d)


def _ignore_rule(ctx: ObjectContext, d: Difference) -> Verdict | None:
    return _ignore(ctx.ignores.configured(ref=ctx.ref, path=d.leaf.path, owner=d.owner), d)


def _argocd_ignore_differences(ctx: ObjectContext, d: Difference) -> Verdict | None:
    why = ctx.ignores.argocd(ref=ctx.ref, path=d.leaf.path, owner=d.owner, live=ctx.live, git=ctx.git, keys=ctx.keys)
    return _ignore(why, d)


def _flux_ignore(ctx: ObjectContext, d: Difference) -> Verdict | None:
    why = ctx.ignores.flux(ref=ctx.ref, path=d.leaf.path, live=ctx.live, git=ctx.git, raw_live=ctx.raw_live,
                           keys=ctx.keys)  # fmt: skip
    return _ignore(why, d)


def _other_manager(ctx: ObjectContext, d: Difference) -> Verdict | None:
    owner = d.owner
    if owner is None:
        return None
    role = manager_role(ctx.policy, owner.manager)
    if role is Role.CONTROLLER:
        return _ignore(Explanation(Rule.CONTROLLER_OWNED, f"owned by {_owned(owner)}"), d)
    if role is Role.GITOPS:
        text = f"pending or failed sync: field managed by the GitOps controller {_owned(owner)}"
        return _ignore(Explanation(Rule.GITOPS_OWNED, text), d)
    return None


def _autoscaled(ctx: ObjectContext, d: Difference) -> Verdict | None:
    if ctx.autoscaler is None or d.leaf.path != _REPLICAS:
        return None
    text = f"scaled by the {ctx.autoscaler}: its replicas belong to the autoscaler"
    return _ignore(Explanation(Rule.AUTOSCALED, text), d)


def _controller_filled(ctx: ObjectContext, d: Difference) -> Verdict | None:
    return _ignore(filled_by(ref=ctx.ref, leaf=d.leaf, live=ctx.live, ownership=ctx.ownership, owner=d.owner,
                             raw_live=ctx.raw_live), d)  # fmt: skip


def _unowned(ctx: ObjectContext, d: Difference) -> Verdict | None:
    """A field that no manager owns, while managedFields are recorded: never a person's change.

    A person's write owns the fields it set (an Update, an Apply), so a field nobody owns is not one:
    - Git declares it and live differs (a change): Git's value not synced yet, or the server's default where Git's
      applier never sent it. Git having changed it after the applied revision is ``pending`` (rule 2); otherwise
      ``unattributed``, and never written back, ``policy.write_unattributed`` or not: the PR would undo Git's value;
    - live has ``spec.replicas`` that Git does not declare: the real kube-apiserver records no manager for a write
      through the ``scale`` subresource (``kubectl scale``, an HPA) to replicas that nobody owned, so there is no
      evidence of a default, nor of who scaled: ``unattributed``, written only with ``policy.write_unattributed``.
    Other added fields nobody owns are defaults (rule 1) or webhook injections (rule 7).
    """
    leaf = d.leaf
    if not ctx.ownership.present or d.owner is not None:
        return None
    if leaf.op is Op.CHANGE:
        at = f" at the applied revision {ctx.revision}" if ctx.revision else ""
        text = (f"live differs from a field Git declares{at}, and no manager owns it: a person's write would own it, "
                "so this is Git's value not synced yet or the API server's default; not written back (that would "
                "undo Git's value)")  # fmt: skip
        return Verdict(decision=Decision.UNATTRIBUTED, why=Explanation(Rule.UNOWNED, text))
    if leaf.path != _REPLICAS or leaf.op is not Op.ADD:
        return None
    scaled = (
        "live has replicas Git does not declare, with no manager recorded: a write through the scale subresource "
        "(kubectl scale, an autoscaler) to replicas nobody owned records none, so who changed it is unknown"
    )
    if ctx.policy.write_unattributed:
        why = Explanation(Rule.UNOWNED, f"{scaled} (policy.write_unattributed)")
        return Verdict(decision=Decision.WRITEBACK, why=why)
    why = Explanation(Rule.UNOWNED, f"{scaled}; not written back without evidence of who made it "
                      "(policy.write_unattributed writes it)")  # fmt: skip
    return Verdict(decision=Decision.UNATTRIBUTED, why=why)


def _webhook_injected(ctx: ObjectContext, d: Difference) -> Verdict | None:
    if d.leaf.op is not Op.ADD:
        return None
    why = ctx.ignores.preset(path=d.leaf.path, op=d.leaf.op)
    if why is None and d.owner is None and ctx.ownership.present:
        why = Explanation(Rule.WEBHOOK_INJECTED,
                          "injected by a mutating webhook: no manager is recorded for it in managedFields")  # fmt: skip
    return _ignore(why, d)


def _persons_change(ctx: ObjectContext, d: Difference) -> Verdict:
    leaf, owner = d.leaf, d.owner
    flag = security_flag(ref=ctx.ref, leaf=leaf, policy=ctx.policy, flag_patterns=ctx.flag_patterns)
    reason = _who(ctx, leaf, owner) + (f"; {flag.text}" if flag else "")
    if not ctx.ownership.present and not ctx.policy.write_unattributed:
        text = (f"{reason}; not written back without evidence of who made it (dump with --show-managed-fields, "
                "or set policy.write_unattributed)")  # fmt: skip
        return Verdict(decision=Decision.UNATTRIBUTED, why=Explanation(Rule.NO_MANAGED_FIELDS, text))
    if flag is not None:
        return Verdict(decision=Decision.FLAG, why=Explanation(flag.rule, reason), owner=owner)
    return Verdict(decision=Decision.WRITEBACK, why=Explanation(Rule.PERSON, reason), owner=owner)


RULES: tuple[DecisionRule, ...] = (
    _table_default,
    _server_default,
    _pending_sync,
    _flux_annotation,
    _ignore_rule,
    _argocd_ignore_differences,
    _flux_ignore,
    _other_manager,
    _autoscaled,
    _controller_filled,
    _unowned,
    _webhook_injected,
    _persons_change,
)


# ---------------------------------------------------------------- evidence of a server default


def table_default(*, kind: str, leaf: Leaf, live: Mapping[str, Any], offline: bool) -> Explanation | None:
    """The rule when an added field holds a well-known default (the built-in table), else None."""
    if leaf.op is not Op.ADD or leaf.item or _origin(leaf) != "defaulted":
        return None
    value = leaf.live

    def parent() -> Any:  # looked up only for a rule that reads it
        return lookup_as_served(live, leaf.path[:-1])

    if not is_default_in(kind=kind, path=leaf.path, value=value, parent=parent) and not (
        # an atomic list whose every item the server adds (a Pod's default tolerations)
        isinstance(value, list)
        and value
        and all(is_default_item(kind=kind, path=(*leaf.path, Index(i)), item=v) for i, v in enumerate(value))
    ):
        return None
    text = "defaulted by the API server (built-in defaults table)" if offline else "defaulted by the API server"
    return Explanation(Rule.TABLE_DEFAULT, text)


def _defaulted(ctx: ObjectContext, leaf: Leaf, owner: FieldOwner | None) -> Explanation | None:
    """A field live has and Git does not, filled in by the API server's defaulting: the rule, or None.

    The evidence, strongest first:
    - a dry-run create of the Git manifest alone (a twin, no live object): it holds the field with live's value,
      or it proves the server does not fill it in for Git, whoever owns it live;
    - nobody owns the field while managedFields are recorded: no request set it;
    - its owner wrote the last-applied configuration too (a client-side apply) and that configuration lacks it.
    A person's Update owns exactly the fields it changed, so ownership alone never proves a default.
    """
    if leaf.item or _origin(leaf) != "defaulted":
        return None
    if ctx.dry_kind is DryRunKind.CREATE and ctx.dry is not None:
        if not diff(live=leaf.live, git=lookup_as_served(ctx.dry, leaf.path), keys=ctx.keys, at=leaf.path):
            text = "defaulted by the API server (a dry-run create of the Git manifest alone fills it in)"
            return Explanation(Rule.DRY_RUN_DEFAULT, text)
        return None
    if owner is None:
        if ctx.ownership.present and leaf.path != _REPLICAS:  # a scale records no manager: see _unowned
            text = "defaulted by the API server: no manager is recorded for it in managedFields"
            return Explanation(Rule.UNRECORDED_DEFAULT, text)
        return None
    if (
        ctx.last_applied is not None
        and lookup_as_served(ctx.last_applied, leaf.path) is ABSENT
        and any(o.manager == owner.manager for o in ctx.ownership.owners_of(LAST_APPLIED_PATH))
    ):
        text = (f"defaulted by the API server when {owner.manager} applied the object "
                "(not in the last-applied configuration it wrote)")  # fmt: skip
        return Explanation(Rule.LAST_APPLIED_DEFAULT, text)
    return None


_META_NAMES = frozenset({"annotations", "labels"})
_REPLICAS: FieldPath = (Key("spec"), Key("replicas"))


def _origin(leaf: Leaf) -> str:
    """Whole list items, annotations and labels come from webhooks; other fields from defaulting."""
    path = leaf.path
    parent = path[-2] if len(path) >= 2 else None
    meta = type(parent) is Key and parent.name in _META_NAMES
    live = leaf.live
    return "injected" if leaf.item or meta or type(live) is dict or isinstance(live, Mapping) else "defaulted"


# ---------------------------------------------------------------- who made a change, in words


def _owned(owner: FieldOwner) -> str:
    how = f"{owner.subresource} subresource" if owner.subresource else owner.operation or "unknown operation"
    return f"{owner.manager} ({how})"


def _who(ctx: ObjectContext, leaf: Leaf, owner: FieldOwner | None) -> str:
    if leaf.op is Op.REMOVE:
        return (
            "live lacks a field Git declares; a removal leaves no managedFields entry, "
            "so nobody is recorded as the remover"
        )
    verb = "added a field Git does not declare" if leaf.op is Op.ADD else "changed a field Git declares"
    if owner is not None:
        when = f" at {owner.time}" if owner.time else ""
        return f"{_owned(owner)} {verb}{when}"
    what = "live has a field Git does not declare" if leaf.op is Op.ADD else "live differs from a field Git declares"
    if not ctx.ownership.present:
        return f"{what} (no managedFields: the manager is unknown)"
    return f"{what}; no manager is recorded for it"
