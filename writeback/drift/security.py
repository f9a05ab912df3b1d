"""Which differences need security review (``flag``): security-sensitive fields, RBAC, image registries and the
configured flag paths. Pure."""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from writeback.drift.diffing import Leaf
from writeback.drift.subtree_matching import matches_within
from writeback.kube.images import image_registry
from writeback.kube.pathtypes import Key, PatternSegment
from writeback.kube.refs import ObjectRef
from writeback.model import Explanation, Op, Rule
from writeback.settings import Policy

__all__ = ["SECURITY_KEYS", "any_glob", "security_flag"]

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


def any_glob(patterns: Collection[str], name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _security_keys_in(value: Any) -> str | None:
    """The first security-sensitive key inside ``value``, or None."""
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


def security_flag(
    *, ref: ObjectRef, leaf: Leaf, policy: Policy, flag_patterns: Sequence[tuple[PatternSegment, ...]] = ()
) -> Explanation | None:
    """Why a difference needs security review, or None."""
    keys = [s.name for s in leaf.path if isinstance(s, Key)]
    hit = next((k for k in keys if k in SECURITY_KEYS), None)
    if hit:
        return Explanation(Rule.SECURITY_FIELD, f"security-sensitive field ({hit}): needs security review")
    top = keys[0] if keys else ""
    if top in _RBAC.get(ref.kind, ()):
        return Explanation(Rule.RBAC, f"RBAC {top} of a {ref.kind}: needs security review")
    inner = _security_keys_in(leaf.live if leaf.op is not Op.REMOVE else leaf.git)
    if inner:
        how = "added" if leaf.op is Op.ADD else "changed"
        return Explanation(Rule.SECURITY_FIELD, f"security-sensitive field ({inner}) inside the {how} value")
    if keys and keys[-1] == "image" and isinstance(leaf.live, str):
        live_reg = image_registry(leaf.live)
        if isinstance(leaf.git, str) and image_registry(leaf.git) != live_reg:
            moved = f"image moved to another registry ({image_registry(leaf.git)} -> {live_reg})"
            return Explanation(Rule.IMAGE_REGISTRY, moved)
        if policy.allowed_registries and not any_glob(policy.allowed_registries, live_reg):
            return Explanation(Rule.IMAGE_REGISTRY, f"image from a registry that is not allowed ({live_reg})")
    if matches_within(flag_patterns, path=leaf.path, values=(leaf.live, leaf.git)):
        return Explanation(Rule.FLAG_PATH, "matches a configured flag path: needs security review")
    return None
