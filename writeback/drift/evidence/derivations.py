"""The fields whose default is a relation, not a constant: a few rules, checked by the generator. Pure.

``DERIVED``: where the server derives a value from other fields (imagePullPolicy from the image tag, a Service
port's targetPort from its port) or allocates it (cluster IPs, node ports). The generated data names the rule
instead of a value; tests/controlplane/defaults_gen.py runs each rule's check on every value the server returned
and refuses a varying value no rule covers. ``ADMISSION_RULES``: written by hand, what the generating control
plane cannot show (it runs without the ServiceAccount admission plugin).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.kube.paths import match, parse_pattern
from writeback.kube.pathtypes import ABSENT, PatternSegment, Segment

__all__ = ["ADMISSION_RULES", "DERIVED", "Check", "Context", "Derived", "derived_rule"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """Where a value sits: its key and its ancestors, nearest first (``ancestors[0]`` is the parent)."""

    key: str
    ancestors: tuple[Any, ...] = ()

    def up(self, n: int) -> Any:
        return self.ancestors[n] if len(self.ancestors) > n else ABSENT


Check = Callable[[Any, Context], bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class Derived:
    """A field whose value the server derives from other fields (or allocates): a rule, not a constant."""

    name: str
    doc: str
    where: tuple[tuple[frozenset[str] | None, str], ...]  # (kinds or None for any, path pattern)
    check: Check
    allocated: bool = False


def _get(node: Any, key: str) -> Any:
    return node.get(key, ABSENT) if isinstance(node, Mapping) else ABSENT


def _pull_policy(value: Any, ctx: Context) -> bool:
    """``Always`` for ``:latest`` or no tag, else ``IfNotPresent`` (a digest counts as a tag)."""
    parent = ctx.up(0)
    image = _get(parent, "image")
    image = _get(parent, "reference") if image is ABSENT else image
    if not isinstance(image, str):
        return False
    name = image.rsplit("/", 1)[-1]
    if "@" in name:
        return bool(value == "IfNotPresent")
    tag = name.split(":", 1)[1] if ":" in name else "latest"
    return bool(value == ("Always" if tag == "latest" else "IfNotPresent"))


def _same_as(sibling: str) -> Check:
    def check(value: Any, ctx: Context) -> bool:
        other = _get(ctx.up(0), sibling)
        return other is not ABSENT and type(other) is type(value) and bool(other == value)

    return check


def _single_family(value: Any, _ctx: Context) -> bool:
    return value in (["IPv4"], ["IPv6"])


def _policy_types(value: Any, ctx: Context) -> bool:
    egress = _get(ctx.up(0), "egress")
    return bool(value == ["Ingress", *(["Egress"] if isinstance(egress, list) and egress else [])])


def _crd_name(make: Callable[[str], str]) -> Check:
    def check(value: Any, ctx: Context) -> bool:
        kind = _get(ctx.up(0), "kind")
        return isinstance(kind, str) and value == make(kind)

    return check


def _limit_default(value: Any, ctx: Context) -> bool:
    """A LimitRange item's ``default`` is its ``max``; its ``defaultRequest`` is its ``default`` (else ``max``)."""
    item = ctx.up(1)
    for source in ("max",) if _get(item, "default") is ctx.up(0) else ("default", "max"):
        known = _get(_get(item, source), ctx.key)
        if known is not ABSENT:
            return bool(known == value)
    return False


def _request_from_limit(value: Any, ctx: Context) -> bool:
    limit = _get(_get(ctx.up(1), "limits"), ctx.key)
    return limit is not ABSENT and bool(limit == value)


def _named(value: Any, _ctx: Context) -> bool:
    return isinstance(value, str) and bool(value)


def _anything(_value: Any, _ctx: Context) -> bool:
    return True


_SERVICE = frozenset({"Service"})
DERIVED: tuple[Derived, ...] = (
    Derived(
        name="image-pull-policy",
        doc="imagePullPolicy from the image's tag: Always for :latest or none, else IfNotPresent",
        where=((None, "**.imagePullPolicy"), (None, "**.volumes[*].image.pullPolicy")),
        check=_pull_policy,
    ),
    Derived(
        name="same-as-port",
        doc="a Service port's targetPort is its port",
        where=((_SERVICE, "spec.ports[*].targetPort"),),
        check=_same_as("port"),
    ),
    Derived(
        name="service-account",
        doc="the deprecated serviceAccount repeats serviceAccountName",
        where=((None, "**.serviceAccount"),),
        check=_same_as("serviceAccountName"),
    ),
    Derived(
        name="single-ip-family",
        doc="ipFamilies: the cluster's one family ([IPv4] or [IPv6])",
        where=((_SERVICE, "spec.ipFamilies"),),
        check=_single_family,
    ),
    Derived(
        name="network-policy-types",
        doc="policyTypes: Ingress, plus Egress when egress rules are given",
        where=((frozenset({"NetworkPolicy"}), "spec.policyTypes"),),
        check=_policy_types,
    ),
    Derived(
        name="crd-singular",
        doc="names.singular: the kind in lower case",
        where=((frozenset({"CustomResourceDefinition"}), "spec.names.singular"),),
        check=_crd_name(str.lower),
    ),
    Derived(
        name="crd-list-kind",
        doc="names.listKind: the kind + List",
        where=((frozenset({"CustomResourceDefinition"}), "spec.names.listKind"),),
        check=_crd_name(lambda kind: kind + "List"),
    ),
    Derived(
        name="limit-range-default",
        doc="a LimitRange item's default is its max; its defaultRequest its default",
        where=(
            (frozenset({"LimitRange"}), "spec.limits[*].default.*"),
            (frozenset({"LimitRange"}), "spec.limits[*].defaultRequest.*"),
        ),
        check=_limit_default,
    ),
    Derived(
        name="request-from-limit",
        doc="a Pod container's missing resource request is its limit",
        where=tuple(
            (frozenset({"Pod"}), f"spec.{c}[*].resources.requests.*") for c in ("containers", "initContainers")
        ),
        check=_request_from_limit,
    ),
    Derived(
        name="cluster-default-class",
        doc="the cluster's default StorageClass or IngressClass, filled in by admission",
        where=(
            (frozenset({"PersistentVolumeClaim"}), "spec.storageClassName"),
            (frozenset({"Ingress"}), "spec.ingressClassName"),
        ),
        check=_named,
    ),
    Derived(
        name="allocated",
        doc="allocated by the API server",
        where=(
            (_SERVICE, "spec.clusterIP"),
            (_SERVICE, "spec.clusterIPs"),
            (_SERVICE, "spec.ports[*].nodePort"),
            (_SERVICE, "spec.healthCheckNodePort"),
            (frozenset({"Job"}), 'spec.selector.matchLabels["batch.kubernetes.io/controller-uid"]'),
        ),
        check=_anything,
        allocated=True,
    ),
)

# Written by hand: what the ServiceAccount admission plugin adds. The generating control plane runs without it
# (tests/controlplane/cp.py), so the data cannot show it. (kind, path, value)
ADMISSION_RULES: tuple[tuple[str, str, Any], ...] = (("Pod", "spec.serviceAccountName", "default"),)


@functools.cache
def _derived_patterns() -> tuple[tuple[Derived, frozenset[str] | None, tuple[PatternSegment, ...]], ...]:
    return tuple((d, kinds, parse_pattern(p)) for d in DERIVED for kinds, p in d.where)


def derived_rule(*, kind: str, path: Sequence[Segment]) -> Derived | None:
    """The derived rule that covers the field at ``path`` of a ``kind`` object, if any (the generator asks)."""
    for rule, kinds, pattern in _derived_patterns():
        if (kinds is None or kind in kinds) and match(pattern, path, prefix=False):
            return rule
    return None
