"""Fields that in-cluster controllers and admission plugins fill, told from evidence in the objects. Pure.

managedFields name most controllers, but not all evidence lives there: dumps made with plain ``kubectl get -o
yaml`` have no managedFields, and some writers are attributed to whoever sent the request (an admission plugin's
mutation of a Pod belongs to the Pod's creator). Each rule here names the evidence it relies on:

- autoscaling: an HPA or a KEDA ScaledObject (live or in Git) whose ``scaleTargetRef`` is the object owns its
  ``spec.replicas``;
- aggregation: a ClusterRole with ``aggregationRule`` has its ``rules`` written by the aggregation controller;
- CA injection: ``caBundle`` of webhook configurations, CRD conversion webhooks and APIServices, owned by a CA
  injector (cert-manager's cainjector and the like) or requested from cert-manager by an ``inject-ca-from``
  annotation;
- the ServiceAccount admission plugin: the projected token volume ``kube-api-access-*`` of a Pod and its mounts.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Any

from writeback.drift.diffing import Leaf
from writeback.drift.ownership import Ownership
from writeback.kube.pathtypes import Key, Select
from writeback.kube.refs import Identity, ObjectRef, group_of
from writeback.model import Explanation, FieldOwner, Rule

__all__ = ["AUTOSCALER_KINDS", "CA_INJECTORS", "autoscaled", "filled_by"]


# Field managers of CA injectors: cert-manager's cainjector (SSA and older Update), ingress-nginx's
# kube-webhook-certgen, open-policy-agent's cert-controller (Gatekeeper), OpenShift's service CA operator.
CA_INJECTORS = ("cert-manager-cainjector", "cainjector", "kube-webhook-certgen", "cert-controller",
                "gatekeeper*", "service-ca*")  # fmt: skip
_INJECT_ANNOTATIONS = ("cert-manager.io/inject-ca-from", "cert-manager.io/inject-ca-from-secret",
                       "cert-manager.io/inject-apiserver-ca")  # fmt: skip
_WEBHOOK_CONFIGS = frozenset({"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"})
_TOKEN_VOLUME = re.compile(r"^kube-api-access-[a-z0-9]{5}$")
_AUTOSCALERS = {
    ("autoscaling", "HorizontalPodAutoscaler"): "HorizontalPodAutoscaler",
    ("keda.sh", "ScaledObject"): "KEDA ScaledObject",
}
AUTOSCALER_KINDS = frozenset(kind for _, kind in _AUTOSCALERS)  # the kinds :func:`autoscaled` reads


def autoscaled(objects: Iterable[tuple[ObjectRef, Mapping[str, Any]]]) -> dict[Identity, str]:
    """The objects an HPA or a ScaledObject scales (by identity), each with that autoscaler's name."""
    out: dict[Identity, str] = {}
    for ref, body in objects:
        if ref.kind not in AUTOSCALER_KINDS:  # most objects: no group to work out
            continue
        what = _AUTOSCALERS.get((ref.group, ref.kind))
        spec = body.get("spec")
        target = spec.get("scaleTargetRef") if isinstance(spec, Mapping) else None
        if what is None or not isinstance(target, Mapping) or not target.get("name"):
            continue
        api = str(target.get("apiVersion") or "apps/v1")
        group = group_of(api)
        kind = str(target.get("kind") or "Deployment")
        out.setdefault(Identity(group, kind, ref.namespace or "", str(target["name"])), ref.named(what))
    return out


def filled_by(*, ref: ObjectRef, leaf: Leaf, live: Mapping[str, Any], ownership: Ownership,
              owner: FieldOwner | None, raw_live: Mapping[str, Any]) -> Explanation | None:  # fmt: skip
    """Why a controller or an admission plugin, not a person, filled this field; None when nothing shows it.
    ``live``: the normalized body; ``raw_live``: the object as read (its annotations are evidence)."""
    names = [s.name for s in leaf.path if isinstance(s, Key)]
    aggregated = ref.kind == "ClusterRole" and ref.group == "rbac.authorization.k8s.io" and live.get("aggregationRule")
    if aggregated and names[:1] == ["rules"]:
        return Explanation(
            Rule.AGGREGATED, "written by the ClusterRole aggregation controller: the ClusterRole has an aggregationRule"
        )
    if names and names[-1] == "caBundle" and _ca_bundle_path(ref, names):
        who = owner.manager if owner is not None else None
        if who is not None and any(fnmatch.fnmatchcase(who, p) for p in CA_INJECTORS):
            return Explanation(Rule.CA_INJECTED, f"injected by the CA injector {who} (owned in managedFields)")
        meta = raw_live.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
        asked = [a for a in _INJECT_ANNOTATIONS if isinstance(annotations, Mapping) and a in annotations]
        if asked and (who is None or not ownership.present):
            text = f"injected by cert-manager's cainjector: the object carries the {asked[0]} annotation"
            return Explanation(Rule.CA_INJECTED, text)
    if ref.group == "" and ref.kind == "Pod" and _token_volume(leaf):
        text = "added by the ServiceAccount admission plugin (the projected service account token volume)"
        return Explanation(Rule.SERVICE_ACCOUNT_TOKEN, text)
    return None


def _ca_bundle_path(ref: ObjectRef, names: list[str]) -> bool:
    if ref.kind in _WEBHOOK_CONFIGS:
        return names[:1] == ["webhooks"] and "clientConfig" in names
    if ref.kind == "CustomResourceDefinition":
        return names[:3] == ["spec", "conversion", "webhook"]
    if ref.kind == "APIService":
        return names == ["spec", "caBundle"]
    return False


def _token_volume(leaf: Leaf) -> bool:
    """A whole ``volumes`` item or ``volumeMounts`` item of the ServiceAccount token, added live."""
    if not leaf.item or not leaf.path:
        return False
    last, parent = leaf.path[-1], leaf.path[-2] if len(leaf.path) >= 2 else None
    value = leaf.live
    if not isinstance(last, Select) or not isinstance(value, Mapping):
        return False
    name = str(value.get("name") or "")
    if not _TOKEN_VOLUME.match(name):
        return False
    if parent == Key("volumes"):
        sources = (value.get("projected") or {}).get("sources") or []
        return any(isinstance(s, Mapping) and "serviceAccountToken" in s for s in sources)
    return parent == Key("volumeMounts") and value.get("mountPath") == "/var/run/secrets/kubernetes.io/serviceaccount"
