"""Well-known Kubernetes defaults: the offline fallback when no dry-run is available. Pure.

Each entry says: in an object of these kinds, a field at this path that Git leaves out and
live holds with this value was filled in by the API server (defaulting or a built-in
admission plugin). The table is deliberately conservative: a value other than the default
is never explained away.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.model import Key, PatternSegment, Segment
from writeback.paths import match, parse_pattern

__all__ = ["DEFAULTS", "Default", "is_default"]

Check = Callable[[Any, Any], bool]  # (value, parent mapping) -> is it the default?


@dataclass(frozen=True, slots=True, kw_only=True)
class Default:
    kinds: frozenset[str]
    pattern: str
    check: Check
    note: str = ""


def _is(expected: Any) -> Check:
    def check(value: Any, _parent: Any) -> bool:
        return type(value) is type(expected) and bool(value == expected)

    return check


def _any(_value: Any, _parent: Any) -> bool:
    return True


def _pull_policy(value: Any, parent: Any) -> bool:
    image = str(parent.get("image", "")) if isinstance(parent, Mapping) else ""
    name = image.rsplit("/", 1)[-1]
    if "@" in name:
        return bool(value == "IfNotPresent")
    tag = name.split(":", 1)[1] if ":" in name else "latest"
    return bool(value == ("Always" if tag == "latest" else "IfNotPresent"))


def _target_port(value: Any, parent: Any) -> bool:
    return isinstance(parent, Mapping) and value == parent.get("port")


def _single_family(value: Any, _parent: Any) -> bool:
    return value in (["IPv4"], ["IPv6"])


_WORKLOADS = {
    "Deployment": "spec.template.spec",
    "ReplicaSet": "spec.template.spec",
    "StatefulSet": "spec.template.spec",
    "DaemonSet": "spec.template.spec",
    "ReplicationController": "spec.template.spec",
    "Job": "spec.template.spec",
    "CronJob": "spec.jobTemplate.spec.template.spec",
    "PodTemplate": "template.spec",
    "Pod": "spec",
}
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_PROBE_FIELDS = (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3))

_POD_SPEC: tuple[tuple[str, Check], ...] = (
    ("dnsPolicy", _is("ClusterFirst")),
    ("schedulerName", _is("default-scheduler")),
    ("terminationGracePeriodSeconds", _is(30)),
    ("volumes[*].configMap.defaultMode", _is(420)),
    ("volumes[*].secret.defaultMode", _is(420)),
    ("volumes[*].projected.defaultMode", _is(420)),
    ("volumes[*].downwardAPI.defaultMode", _is(420)),
    ("volumes[*].downwardAPI.items[*].fieldRef.apiVersion", _is("v1")),
    ("volumes[*].hostPath.type", _is("")),
)
_POD_ONLY: tuple[tuple[str, Check], ...] = (
    ("enableServiceLinks", _is(True)),
    ("priority", _is(0)),
    ("preemptionPolicy", _is("PreemptLowerPriority")),
    ("serviceAccountName", _is("default")),
    ("serviceAccount", _is("default")),
)
_CONTAINER: tuple[tuple[str, Check], ...] = (
    ("terminationMessagePath", _is("/dev/termination-log")),
    ("terminationMessagePolicy", _is("File")),
    ("imagePullPolicy", _pull_policy),
    ("ports[*].protocol", _is("TCP")),
    ("env[*].valueFrom.fieldRef.apiVersion", _is("v1")),
    *((f"{p}.{f}", _is(v)) for p in _PROBES for f, v in _PROBE_FIELDS),
    *((f"{p}.httpGet.scheme", _is("HTTP")) for p in _PROBES),
)

_OTHER: tuple[tuple[tuple[str, ...], str, Check], ...] = (
    (("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"), "spec.replicas", _is(1)),
    (("Deployment", "StatefulSet", "DaemonSet"), "spec.revisionHistoryLimit", _is(10)),
    (("Deployment",), "spec.progressDeadlineSeconds", _is(600)),
    (("Deployment",), "spec.strategy.type", _is("RollingUpdate")),
    (("Deployment",), "spec.strategy.rollingUpdate.maxSurge", _is("25%")),
    (("Deployment",), "spec.strategy.rollingUpdate.maxUnavailable", _is("25%")),
    (("StatefulSet",), "spec.podManagementPolicy", _is("OrderedReady")),
    (("StatefulSet", "DaemonSet"), "spec.updateStrategy.type", _is("RollingUpdate")),
    (("StatefulSet",), "spec.updateStrategy.rollingUpdate.partition", _is(0)),
    (("StatefulSet",), "spec.persistentVolumeClaimRetentionPolicy.whenDeleted", _is("Retain")),
    (("StatefulSet",), "spec.persistentVolumeClaimRetentionPolicy.whenScaled", _is("Retain")),
    (("StatefulSet",), "spec.volumeClaimTemplates[*].apiVersion", _is("v1")),
    (("StatefulSet",), "spec.volumeClaimTemplates[*].kind", _is("PersistentVolumeClaim")),
    (("StatefulSet",), "spec.volumeClaimTemplates[*].spec.volumeMode", _is("Filesystem")),
    (("DaemonSet",), "spec.updateStrategy.rollingUpdate.maxUnavailable", _is(1)),
    (("DaemonSet",), "spec.updateStrategy.rollingUpdate.maxSurge", _is(0)),
    (("Job",), "spec.backoffLimit", _is(6)),
    (("Job",), "spec.completions", _is(1)),
    (("Job",), "spec.parallelism", _is(1)),
    (("Job",), "spec.completionMode", _is("NonIndexed")),
    (("Job", "CronJob"), "spec.suspend", _is(False)),
    (("Job",), "spec.podReplacementPolicy", _is("TerminatingOrFailed")),
    (("CronJob",), "spec.concurrencyPolicy", _is("Allow")),
    (("CronJob",), "spec.successfulJobsHistoryLimit", _is(3)),
    (("CronJob",), "spec.failedJobsHistoryLimit", _is(1)),
    (("CronJob",), "spec.jobTemplate.spec.backoffLimit", _is(6)),
    (("CronJob",), "spec.jobTemplate.spec.completionMode", _is("NonIndexed")),
    (("CronJob",), "spec.jobTemplate.spec.podReplacementPolicy", _is("TerminatingOrFailed")),
    (("Service",), "spec.type", _is("ClusterIP")),
    (("Service",), "spec.sessionAffinity", _is("None")),
    (("Service",), "spec.ipFamilies", _single_family),
    (("Service",), "spec.ipFamilyPolicy", _is("SingleStack")),
    (("Service",), "spec.internalTrafficPolicy", _is("Cluster")),
    (("Service",), "spec.externalTrafficPolicy", _is("Cluster")),
    (("Service",), "spec.allocateLoadBalancerNodePorts", _is(True)),
    (("Service",), "spec.ports[*].protocol", _is("TCP")),
    (("Service",), "spec.ports[*].targetPort", _target_port),
    (("PersistentVolumeClaim",), "spec.volumeMode", _is("Filesystem")),
    (("PersistentVolumeClaim",), "spec.storageClassName", _any),
    (("NetworkPolicy",), "spec.policyTypes", _is(["Ingress"])),
    (("NetworkPolicy",), "spec.ingress[*].ports[*].protocol", _is("TCP")),
    (("NetworkPolicy",), "spec.egress[*].ports[*].protocol", _is("TCP")),
    (("Secret",), "type", _is("Opaque")),
)


def _build() -> tuple[Default, ...]:
    out: list[Default] = []
    for kind, prefix in _WORKLOADS.items():
        k = frozenset({kind})
        for field, check in _POD_SPEC + (_POD_ONLY if kind == "Pod" else ()):
            out.append(Default(kinds=k, pattern=f"{prefix}.{field}", check=check))
        if kind not in ("Job", "CronJob"):
            out.append(Default(kinds=k, pattern=f"{prefix}.restartPolicy", check=_is("Always")))
        for lst in _CONTAINER_LISTS:
            for field, check in _CONTAINER:
                out.append(Default(kinds=k, pattern=f"{prefix}.{lst}[*].{field}", check=check))
    for kinds, pattern, check in _OTHER:
        out.append(Default(kinds=frozenset(kinds), pattern=pattern, check=check))
    return tuple(out)


DEFAULTS: tuple[Default, ...] = _build()


def _index() -> dict[tuple[str, str], list[tuple[Default, tuple[PatternSegment, ...]]]]:
    """By (kind, last field name): a lookup touches a handful of entries, not the whole table."""
    out: dict[tuple[str, str], list[tuple[Default, tuple[PatternSegment, ...]]]] = {}
    for d in DEFAULTS:
        pat = parse_pattern(d.pattern)
        last = pat[-1]
        assert isinstance(last, Key), d.pattern
        for kind in d.kinds:
            out.setdefault((kind, last.name), []).append((d, pat))
    return out


_BY_KIND_AND_NAME = _index()


def is_default(*, kind: str, path: Sequence[Segment], value: Any, parent: Any) -> bool:
    """Is ``value`` at ``path`` the well-known default the API server fills in?"""
    if not path or not isinstance(path[-1], Key):
        return False
    candidates = _BY_KIND_AND_NAME.get((kind, path[-1].name), ())
    return any(match(pat, path, prefix=False) and d.check(value, parent) for d, pat in candidates)
