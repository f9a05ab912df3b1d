"""Normalization: drop server-populated fields before diffing, and say which rule dropped each. Pure.

Both sides go through the same rules. Some rules only drop a live field that Git does not
declare (the cluster IP of a Service, Argo CD's instance label): a value Git sets is compared.
The identity fields (apiVersion, kind, metadata.name, metadata.namespace) are not compared at
all: objects are matched by group, kind, namespace and name before diffing.
"""

from __future__ import annotations

import base64
import datetime
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from writeback.kube.paths import key, lookup
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key
from writeback.kube.refs import ObjectRef
from writeback.kube.wellknown import LAST_APPLIED
from writeback.model import Dropped, Side

__all__ = ["Normalized", "is_empty", "normalize", "plain"]

_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "selfLink",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
_IDENTITY_METADATA = ("name", "namespace")

# Annotations the API server, kubectl, controllers or GitOps tools write: never a person's edit.
_SERVER_ANNOTATIONS = {
    "deployment.kubernetes.io/revision": "server-populated: Deployment revision",
    "deprecated.daemonset.template.generation": "server-populated: DaemonSet template generation",
    LAST_APPLIED: "client-side apply bookkeeping",
    "argocd.argoproj.io/tracking-id": "Argo CD resource tracking",
    "argocd.argoproj.io/installation-id": "Argo CD resource tracking",
    "endpoints.kubernetes.io/last-change-trigger-time": "server-populated: endpoints controller",
    "control-plane.alpha.kubernetes.io/leader": "server-populated: leader election",
    "pv.kubernetes.io/bind-completed": "server-populated: volume binding",
    "pv.kubernetes.io/bound-by-controller": "server-populated: volume binding",
    "pv.kubernetes.io/provisioned-by": "server-populated: volume provisioning",
    "volume.beta.kubernetes.io/storage-provisioner": "server-populated: volume provisioning",
    "volume.kubernetes.io/storage-provisioner": "server-populated: volume provisioning",
    "volume.kubernetes.io/selected-node": "server-populated: volume scheduling",
    "batch.kubernetes.io/job-tracking": "server-populated: Job tracking",
}
# Dropped from live only when Git does not declare them (a GitOps tool or Helm adds them).
_TOOL_ANNOTATION_PREFIXES = {
    "meta.helm.sh/": "Helm release bookkeeping",
    "kustomize.toolkit.fluxcd.io/": "Flux bookkeeping",
    "helm.toolkit.fluxcd.io/": "Flux bookkeeping",
}
_TOOL_LABELS = {
    "app.kubernetes.io/instance": "Argo CD resource tracking label",
    "kubernetes.io/metadata.name": "server-populated: namespace name label",
    "pod-template-hash": "server-populated: ReplicaSet pod template hash",
    "controller-uid": "server-populated: Job controller",
    "job-name": "server-populated: Job controller",
    "batch.kubernetes.io/controller-uid": "server-populated: Job controller",
    "batch.kubernetes.io/job-name": "server-populated: Job controller",
}
_TOOL_LABEL_PREFIXES = {
    "kustomize.toolkit.fluxcd.io/": "Flux resource tracking label",
    "helm.toolkit.fluxcd.io/": "Flux resource tracking label",
}
_RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"

# (kind or "*", path): spec fields the API server or a controller fills in; live-only when Git is silent.
_ALLOCATED: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("Service", ("spec", "clusterIP"), "allocated by the API server: Service cluster IP"),
    ("Service", ("spec", "clusterIPs"), "allocated by the API server: Service cluster IPs"),
    ("Service", ("spec", "healthCheckNodePort"), "allocated by the API server: health check node port"),
    ("PersistentVolumeClaim", ("spec", "volumeName"), "set by the volume binder"),
    ("Pod", ("spec", "nodeName"), "set by the scheduler"),
    ("Namespace", ("spec", "finalizers"), "server-populated: Namespace finalizers"),
    ("ServiceAccount", ("secrets",), "set by the token controller"),
    ("Job", ("spec", "selector"), "set by the Job controller"),
)


_SERVER_METADATA_DROPS: dict[str, tuple[FieldPath, str]] = {
    k: ((Key("metadata"), Key(k)), f"server-populated: metadata.{k}") for k in _SERVER_METADATA
}
_ALLOCATED_BY_KIND: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    kind: tuple((names, rule) for k, names, rule in _ALLOCATED if k == kind) for kind, _, _ in _ALLOCATED
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Normalized:
    body: dict[str, Any]
    dropped: tuple[Dropped, ...] = ()


_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})


def plain(value: Any) -> Any:
    """A deep copy as plain dicts and lists (ruamel and other mappings included)."""
    t = type(value)
    if t is dict:  # the common case first: parsed JSON and YAML
        return _plain_dict(value)
    if t is list:
        return [v if type(v) in _PLAIN_SCALARS else plain(v) for v in value]
    if t in _PLAIN_SCALARS:
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, datetime.date):  # YAML timestamps: the API server sees text
        return value.isoformat()
    return value


def _plain_dict(value: dict[Any, Any]) -> dict[str, Any]:
    scalars = _PLAIN_SCALARS
    return {(k if type(k) is str else str(k)): (v if type(v) in scalars else plain(v)) for k, v in value.items()}


def is_empty(value: Any) -> bool:
    """Absent, null, ``{}`` and ``[]`` all mean "not set" to the API server."""
    return value is ABSENT or value is None or (isinstance(value, dict | list) and not value)


class _Dropper:
    def __init__(self, *, ref: ObjectRef, side: Side, declared: Mapping[str, Any] | None) -> None:
        self.ref = ref
        self.side = side
        self.declared = declared
        self.dropped: list[Dropped] = []

    def drop(self, container: dict[str, Any], key: str, path: FieldPath, rule: str) -> None:
        if key in container:
            del container[key]
            self.dropped.append(Dropped(resource=self.ref, path=path, rule=rule, side=self.side))

    def git_declares(self, path: FieldPath) -> bool:
        """Whether Git declares the field at ``path`` (keys only: a path through a list item is never declared)."""
        if self.declared is None or not all(type(seg) is Key for seg in path):
            return False
        return lookup(self.declared, path) is not ABSENT


@functools.lru_cache(maxsize=1024)
def _keys(*names: str) -> FieldPath:
    """A path of keys; cached (paths are immutable), since the rules build the same few paths for every object."""
    return tuple(Key(n) for n in names)


def normalize(
    body: Mapping[str, Any], *, ref: ObjectRef, side: Side, declared: Mapping[str, Any] | None = None
) -> Normalized:
    """Drop server-populated fields. ``declared`` is the Git body, for live-only rules."""
    out = _plain_body(body)
    d = _Dropper(ref=ref, side=side, declared=declared)
    for k in ("apiVersion", "kind"):
        out.pop(k, None)
    d.drop(out, "status", _keys("status"), "server-populated: status")
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for k in _IDENTITY_METADATA:
            meta.pop(k, None)
        for k, (path, rule) in _SERVER_METADATA_DROPS.items():
            if k in meta:
                d.drop(meta, k, path, rule)
        _owner_references(meta, d)
        _metadata_maps(meta, (Key("metadata"),), d)
        if not meta:
            del out["metadata"]
    for names, rule in _ALLOCATED_BY_KIND.get(ref.kind, ()) if side == Side.LIVE else ():
        if not d.git_declares(_keys(*names)):  # live only: a value Git declares is compared, on both sides
            parent = lookup(out, _keys(*names[:-1]))
            if isinstance(parent, dict):
                d.drop(parent, names[-1], _keys(*names), rule)
    if ref.kind == "Service" and side == Side.LIVE:
        _node_ports(out, d)
    if ref.is_secret and side == Side.GIT:
        _string_data(out, d)
    _nested_metadata(out, (), d)
    return Normalized(body=out, dropped=tuple(d.dropped))


def _plain_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """``plain(body)``, except that ``status`` and ``metadata.managedFields`` (always dropped) are not copied."""
    out: dict[str, Any] = {}
    for raw, value in body.items():
        k = raw if type(raw) is str else str(raw)
        if k == "status":
            out[k] = None  # a placeholder: only its presence matters (the drop is recorded)
        elif k == "metadata" and (type(value) is dict or isinstance(value, Mapping)):
            meta: dict[str, Any] = {}
            for mk, mv in value.items():
                name = mk if type(mk) is str else str(mk)
                meta[name] = None if name == "managedFields" else plain(mv)
            out[k] = meta
        else:
            out[k] = plain(value)
    return out


def _string_data(out: dict[str, Any], d: _Dropper) -> None:
    """A Secret's ``stringData`` is write-only: the API server stores it base64-encoded in ``data`` (it wins)."""
    string_data = out.get("stringData")
    if not isinstance(string_data, dict):
        return
    current = out.get("data")
    data: dict[str, Any] = current if isinstance(current, dict) else {}
    for name, value in string_data.items():
        data[name] = base64.b64encode(str(value).encode("utf-8")).decode("ascii")
    out["data"] = data
    d.drop(out, "stringData", _keys("stringData"), "write-only: stored base64-encoded in data")


def _owner_references(meta: dict[str, Any], d: _Dropper) -> None:
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list):
        return
    kept = [r for r in refs if not (isinstance(r, dict) and r.get("controller") is True)]
    if len(kept) != len(refs):
        d.dropped.append(
            Dropped(
                resource=d.ref,
                path=_keys("metadata", "ownerReferences"),
                rule="set by a controller: controller ownerReferences",
                side=d.side,
            )
        )
        if kept:
            meta["ownerReferences"] = kept
        else:
            del meta["ownerReferences"]


def _metadata_maps(meta: dict[str, Any], at: FieldPath, d: _Dropper) -> None:
    """Drop bookkeeping annotations and labels from a ``metadata`` map at path ``at``."""
    ann = meta.get("annotations")
    if isinstance(ann, dict):
        for name in list(ann):
            rule = _SERVER_ANNOTATIONS.get(name)
            if rule is None and name == _RESTARTED_AT:
                rule = "kubectl rollout restart timestamp"
            declarable = False  # a tool's annotation: dropped from live only when Git does not declare it
            if rule is None and d.side == Side.LIVE:
                rule = next((r for p, r in _TOOL_ANNOTATION_PREFIXES.items() if name.startswith(p)), None)
                declarable = True
            if rule is None:
                continue
            path = (*at, _ANNOTATIONS, key(name))
            if not (declarable and d.git_declares(path)):
                d.drop(ann, name, path, rule)
        if not ann:
            del meta["annotations"]
    labels = meta.get("labels")
    if isinstance(labels, dict) and d.side == Side.LIVE:
        for name in list(labels):
            tool_rule = added_label(name)
            if not tool_rule:
                continue
            path = (*at, _LABELS, key(name))
            if not d.git_declares(path):
                d.drop(labels, name, path, tool_rule)
        if not labels:
            del meta["labels"]


def allocated(kind: str, names: tuple[str, ...]) -> bool:
    """Whether :func:`normalize` drops this live-only field of ``kind`` as allocated or set by the server."""
    return any(n == names for n, _ in _ALLOCATED_BY_KIND.get(kind, ()))


SERVER_METADATA = frozenset(_SERVER_METADATA)


@functools.lru_cache(maxsize=4096)  # pure; every live object repeats the same few keys
def added_annotation(key: str) -> str | None:
    """The rule that drops an annotation from live when Git does not declare it (the server's, kubectl's, a GitOps
    tool's bookkeeping), as :func:`normalize` drops it; None for any other annotation."""
    rule = _SERVER_ANNOTATIONS.get(key)
    if rule is None and key == _RESTARTED_AT:
        rule = "kubectl rollout restart timestamp"
    return rule or next((r for p, r in _TOOL_ANNOTATION_PREFIXES.items() if key.startswith(p)), None)


@functools.lru_cache(maxsize=4096)  # pure; every live object repeats the same few keys
def added_label(key: str) -> str | None:
    """The rule of a label that the GitOps tool or the server puts on live objects (Flux's tracking labels, a
    namespace's name label, ...): Git does not carry it unless it declares it. None for any other label."""
    return _TOOL_LABELS.get(key) or next((r for p, r in _TOOL_LABEL_PREFIXES.items() if key.startswith(p)), None)


_ANNOTATIONS, _LABELS, _TEMPLATE = Key("annotations"), Key("labels"), Key("template")
_CREATION, _STATUS = Key("creationTimestamp"), Key("status")
_NESTED = frozenset({"metadata", "spec", "template", "jobTemplate", "volumeClaimTemplates"})


def _nested_metadata(node: Any, at: FieldPath, d: _Dropper) -> None:
    """Pod templates and claim templates: ``creationTimestamp: null`` and bookkeeping labels."""
    if not isinstance(node, dict):
        return
    for name, value in list(node.items()):
        if name not in _NESTED:
            continue
        path: FieldPath = (*at, key(name))
        if name == "metadata" and at and isinstance(value, dict):
            if "creationTimestamp" in value:
                d.drop(value, "creationTimestamp", (*path, _CREATION), "server-populated: template")
            _metadata_maps(value, path, d)
            if not value:
                del node[name]
        elif name in ("spec", "template", "jobTemplate") and isinstance(value, dict):
            if name == "spec" and (at[-1:] == (_TEMPLATE,) or (not at and d.ref.kind == "Pod")):
                _empty_pod_security_context(value, path, d)
            _nested_metadata(value, path, d)
        elif name == "volumeClaimTemplates" and isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    d.drop(item, "status", (*path, Index(i), _STATUS), "server-populated: status")
                    _nested_metadata(item, (*path, Index(i)), d)


def _empty_pod_security_context(spec: dict[str, Any], at: FieldPath, d: _Dropper) -> None:
    """The API server defaults a pod's ``securityContext`` to ``{}`` (kubectl-neat drops it too)."""
    path = (*at, Key("securityContext"))
    if d.side == Side.LIVE and spec.get("securityContext") == {} and not d.git_declares(path):
        d.drop(spec, "securityContext", path, "defaulted by the API server: empty pod securityContext")


_SPEC_PORTS = (Key("spec"), Key("ports"))


def _node_ports(out: dict[str, Any], d: _Dropper) -> None:
    ports = lookup(out, _SPEC_PORTS)
    git_ports = lookup(d.declared, _SPEC_PORTS) if d.declared is not None else ABSENT
    if not isinstance(ports, list):
        return
    declared = {
        (str(p.get("port")), str(p.get("protocol") or "TCP"))
        for p in (git_ports if isinstance(git_ports, list) else [])
        if isinstance(p, Mapping) and "nodePort" in p
    }
    for p in ports:
        if (
            isinstance(p, dict)
            and "nodePort" in p
            and (str(p.get("port")), str(p.get("protocol") or "TCP")) not in declared
        ):
            del p["nodePort"]
            d.dropped.append(
                Dropped(
                    resource=d.ref,
                    path=(Key("spec"), Key("ports"), Key("nodePort")),
                    rule="allocated by the API server: node port",
                    side=d.side,
                )
            )
