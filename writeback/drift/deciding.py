"""One decision per difference, with a reason a person can read. Pure.

Order (the first that applies wins): a default the API server filled in (not drift at all: the
engine drops it), pending sync (Git head changed it), Flux does not enforce the object, a
configured ignore rule, Argo CD ignoreDifferences, a controller owns the field, the GitOps
controller owns it (pending or failed sync), a webhook injected it (added fields only), a
security-sensitive path (flag), else writeback.
"""

from __future__ import annotations

import enum
import fnmatch
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from writeback.drift.diffing import Leaf, diff, is_prefix
from writeback.drift.evidence.controller_filled import filled_by
from writeback.drift.evidence.defaults import is_default_in, is_default_item
from writeback.drift.ignores.rules import Ignores
from writeback.drift.listkeys import KeyResolver
from writeback.drift.ownership import Ownership
from writeback.drift.subtree_matching import matches_within
from writeback.kube.paths import lookup_as_served
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, PatternSegment
from writeback.kube.refs import ObjectRef
from writeback.kube.wellknown import LAST_APPLIED_PATH
from writeback.model import Decision, DryRunKind, FieldOwner, Op
from writeback.settings import Policy

__all__ = [
    "ObjectContext",
    "Role",
    "Verdict",
    "decide",
    "image_registry",
    "manager_role",
    "security_reason",
    "table_default",
]


class Role(enum.Enum):
    CONTROLLER = "controller"
    GITOPS = "gitops"
    PERSON = "person"


def _any_glob(patterns: Collection[str], name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def manager_role(policy: Policy, manager: str) -> Role:
    """Controller, the GitOps tool itself, or a person (any other manager, unknown ones included)."""
    if _any_glob(policy.gitops_managers, manager):
        return Role.GITOPS
    if _any_glob((*policy.controller_managers, *policy.extra_controller_managers), manager):
        return Role.CONTROLLER
    return Role.PERSON


# Keys whose change is a security decision, wherever they appear in a pod spec.
SECURITY_KEYS = frozenset(
    {
        "securityContext",
        "privileged",
        "allowPrivilegeEscalation",
        "capabilities",
        "runAsUser",
        "runAsGroup",
        "runAsNonRoot",
        "readOnlyRootFilesystem",
        "seccompProfile",
        "appArmorProfile",
        "seLinuxOptions",
        "procMount",
        "hostNetwork",
        "hostPID",
        "hostIPC",
        "hostUsers",
        "hostPath",
        "hostPort",
        "shareProcessNamespace",
        "serviceAccountName",
        "serviceAccount",
        "automountServiceAccountToken",
        "sysctls",
    }
)
_RBAC = {
    "Role": ("rules",),
    "ClusterRole": ("rules", "aggregationRule"),
    "RoleBinding": ("subjects", "roleRef"),
    "ClusterRoleBinding": ("subjects", "roleRef"),
}


def image_registry(image: str) -> str:
    """The registry host of an image reference (``docker.io`` when none is named)."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def _security_keys_in(value: Any) -> str | None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if k in SECURITY_KEYS:
                return str(k)
            found = _security_keys_in(v)
            if found:
                return found
    elif isinstance(value, list):
        for v in value:
            found = _security_keys_in(v)
            if found:
                return found
    return None


def security_reason(
    *, ref: ObjectRef, leaf: Leaf, policy: Policy, flag_patterns: Sequence[tuple[PatternSegment, ...]] = ()
) -> str | None:
    """Why a difference needs security review, or None."""
    keys = [s.name for s in leaf.path if isinstance(s, Key)]
    hit = next((k for k in keys if k in SECURITY_KEYS), None)
    if hit:
        return f"security-sensitive field ({hit}): needs security review"
    top = keys[0] if keys else ""
    if top in _RBAC.get(ref.kind, ()):
        return f"RBAC {top} of a {ref.kind}: needs security review"
    inner = _security_keys_in(leaf.live if leaf.op is not Op.REMOVE else leaf.git)
    if inner:
        return f"security-sensitive field ({inner}) inside the {'added' if leaf.op is Op.ADD else 'changed'} value"
    if keys and keys[-1] == "image" and isinstance(leaf.live, str):
        live_reg = image_registry(leaf.live)
        if isinstance(leaf.git, str) and image_registry(leaf.git) != live_reg:
            return f"image moved to another registry ({image_registry(leaf.git)} -> {live_reg})"
        if policy.allowed_registries and not _any_glob(policy.allowed_registries, live_reg):
            return f"image from a registry that is not allowed ({live_reg})"
    if matches_within(flag_patterns, path=leaf.path, values=(leaf.live, leaf.git)):
        return "matches a configured flag path: needs security review"
    return None


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
    flux: str | None = None
    flag_patterns: tuple[tuple[PatternSegment, ...], ...] = ()
    offline: bool = False
    autoscaler: str | None = None  # the HPA or ScaledObject that scales this object ("HorizontalPodAutoscaler ns/x")
    raw_live: Mapping[str, Any] = field(default_factory=dict)  # the live object as read (annotations are evidence)


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    decision: Decision
    reason: str
    owner: FieldOwner | None = None
    default: bool = False  # a default the API server filled in: not drift at all (the engine drops it)


def _owned(owner: FieldOwner) -> str:
    how = f"{owner.subresource} subresource" if owner.subresource else owner.operation or "unknown operation"
    return f"{owner.manager} ({how})"


def _owner(ctx: ObjectContext, leaf: Leaf) -> FieldOwner | None:
    if leaf.op is Op.REMOVE:
        return None
    whole = leaf.item or isinstance(leaf.live, Mapping | list)
    return ctx.ownership.owner_of(leaf.path, subtree=whole)


def decide(ctx: ObjectContext, leaf: Leaf) -> Verdict:
    """The decision for one difference of one object."""
    why = table_default(kind=ctx.ref.kind, leaf=leaf, live=ctx.live, offline=ctx.offline)
    if why:
        return Verdict(decision=Decision.IGNORE, reason=why, default=True)
    owner = _owner(ctx, leaf)
    if leaf.op is Op.ADD:
        default = _defaulted(ctx, leaf, owner)
        if default:
            return Verdict(decision=Decision.IGNORE, reason=default, owner=owner, default=True)
    if any(is_prefix(p, leaf.path) or is_prefix(leaf.path, p) for p in ctx.pending):
        at = f" {ctx.revision}" if ctx.revision else ""
        return Verdict(
            decision=Decision.PENDING,
            reason=f"pending sync: Git changed this field after the applied revision{at}",
            owner=owner,
        )
    for reason in (
        ctx.flux,
        ctx.ignores.rule_reason(ref=ctx.ref, path=leaf.path, owner=owner),
        ctx.ignores.argo_reason(ref=ctx.ref, path=leaf.path, owner=owner, live=ctx.live, git=ctx.git, keys=ctx.keys),
    ):
        if reason:
            return Verdict(decision=Decision.IGNORE, reason=reason, owner=owner)
    if owner is not None:
        role = manager_role(ctx.policy, owner.manager)
        if role is Role.CONTROLLER:
            return Verdict(decision=Decision.IGNORE, reason=f"owned by {_owned(owner)}", owner=owner)
        if role is Role.GITOPS:
            return Verdict(
                decision=Decision.IGNORE,
                reason=f"pending or failed sync: field managed by the GitOps controller {_owned(owner)}",
                owner=owner,
            )
    if ctx.autoscaler is not None and leaf.path == _REPLICAS:
        return Verdict(
            decision=Decision.IGNORE, reason=f"scaled by the {ctx.autoscaler}: its replicas belong to the autoscaler",
            owner=owner,
        )  # fmt: skip
    filled = filled_by(ref=ctx.ref, leaf=leaf, live=ctx.live, ownership=ctx.ownership, owner=owner,
                       raw_live=ctx.raw_live)  # fmt: skip
    if filled:
        return Verdict(decision=Decision.IGNORE, reason=filled, owner=owner)
    scaled = _unrecorded_scale(ctx, leaf, owner)
    if scaled and ctx.policy.write_unattributed:
        return Verdict(decision=Decision.WRITEBACK, reason=f"{scaled} (policy.write_unattributed)")
    if scaled:
        return Verdict(decision=Decision.UNATTRIBUTED, reason=f"{scaled}; not written back without evidence of "
                       "who made it (policy.write_unattributed writes it)")  # fmt: skip
    if leaf.op is Op.ADD:
        injected = ctx.ignores.preset_reason(path=leaf.path, op=leaf.op)
        if injected is None and owner is None and ctx.ownership.present:
            injected = "injected by a mutating webhook: no manager is recorded for it in managedFields"
        if injected:
            return Verdict(decision=Decision.IGNORE, reason=injected, owner=owner)
    flag = security_reason(ref=ctx.ref, leaf=leaf, policy=ctx.policy, flag_patterns=ctx.flag_patterns)
    reason = _who(ctx, leaf, owner) + (f"; {flag}" if flag else "")
    if not ctx.ownership.present and not ctx.policy.write_unattributed:
        return Verdict(
            decision=Decision.UNATTRIBUTED,
            reason=f"{reason}; not written back without evidence of who made it (dump with --show-managed-fields, "
            "or set policy.write_unattributed)",
        )
    return Verdict(decision=Decision.FLAG if flag else Decision.WRITEBACK, reason=reason, owner=owner)


def table_default(*, kind: str, leaf: Leaf, live: Mapping[str, Any], offline: bool) -> str | None:
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
    return "defaulted by the API server" + (" (built-in defaults table)" if offline else "")


def _defaulted(ctx: ObjectContext, leaf: Leaf, owner: FieldOwner | None) -> str | None:
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
            return "defaulted by the API server (a dry-run create of the Git manifest alone fills it in)"
        return None
    if owner is None:
        if ctx.ownership.present and leaf.path != _REPLICAS:  # a scale records no manager: see _unrecorded_scale
            return "defaulted by the API server: no manager is recorded for it in managedFields"
        return None
    if (
        ctx.last_applied is not None
        and lookup_as_served(ctx.last_applied, leaf.path) is ABSENT
        and any(o.manager == owner.manager for o in ctx.ownership.owners_of(LAST_APPLIED_PATH))
    ):
        return (
            f"defaulted by the API server when {owner.manager} applied the object "
            "(not in the last-applied configuration it wrote)"
        )
    return None


_META_NAMES = frozenset({"annotations", "labels"})
_REPLICAS: FieldPath = (Key("spec"), Key("replicas"))


def _unrecorded_scale(ctx: ObjectContext, leaf: Leaf, owner: FieldOwner | None) -> str | None:
    """``spec.replicas`` that nobody owns, with managedFields recorded, and not the server's default.

    The real kube-apiserver records no manager for a write through the ``scale`` subresource (``kubectl scale``,
    an HPA) to replicas that nobody owned, e.g. when Git leaves replicas out: no evidence of a default, and none
    of who changed it (rule 9a): ``unattributed``, written back only with ``policy.write_unattributed``.
    """
    if leaf.path != _REPLICAS or leaf.op is not Op.ADD or owner is not None or not ctx.ownership.present:
        return None
    return (
        "live has replicas Git does not declare, with no manager recorded: a write through the scale subresource "
        "(kubectl scale, an autoscaler) to replicas nobody owned records none, so who changed it is unknown"
    )


def _origin(leaf: Leaf) -> str:
    """Whole list items, annotations and labels come from webhooks; other fields from defaulting."""
    path = leaf.path
    parent = path[-2] if len(path) >= 2 else None
    meta = type(parent) is Key and parent.name in _META_NAMES
    live = leaf.live
    return "injected" if leaf.item or meta or type(live) is dict or isinstance(live, Mapping) else "defaulted"


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
