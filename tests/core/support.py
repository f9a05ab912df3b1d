"""Builders for the core tests: real-shaped objects and managedFields entries."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.support.objects import container, deployment
from writeback.kube.refs import ObjectRef
from writeback.model import DesiredObject, LiveObject


def entry(
    manager: str,
    fields: dict[str, Any],
    *,
    operation: str = "Update",
    subresource: str = "",
    time: str = "2024-05-01T10:00:00Z",
    api_version: str = "apps/v1",
) -> dict[str, Any]:
    """One managedFields entry as the API server writes it."""
    out: dict[str, Any] = {
        "apiVersion": api_version,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
        "manager": manager,
        "operation": operation,
        "time": time,
    }
    if subresource:
        out["subresource"] = subresource
    return out


def k(**keys: Any) -> str:
    """A ``k:`` FieldsV1 key, JSON sorted as the API server sorts it."""
    return "k:" + json.dumps(keys, sort_keys=True, separators=(",", ":"))


def deployment_git(**overrides: Any) -> dict[str, Any]:
    """The shop's web Deployment as Git has it (two containers), ``overrides`` replacing top-level keys."""
    web = container(
        "web", image="registry.example.com/shop/web:1.4.2", ports=[8080], env={"LOG_LEVEL": "info", "REGION": "eu"}
    )
    metrics = container("metrics", image="registry.example.com/shop/exporter:0.9", args=["--port", "9100"])
    body = deployment("web", namespace="shop", replicas=3, containers=[web, metrics])
    body.update(overrides)
    return body


def defaulted_live(git: dict[str, Any]) -> dict[str, Any]:
    """What the API server stores for ``git``: server metadata, defaults, status."""
    live = copy.deepcopy(git)
    meta = live["metadata"]
    meta.update(uid="0f9c", resourceVersion="4711", generation=2, creationTimestamp="2024-05-01T10:00:00Z")
    meta.setdefault("annotations", {})["deployment.kubernetes.io/revision"] = "2"
    spec = live["spec"]
    spec.update(revisionHistoryLimit=10, progressDeadlineSeconds=600)
    spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    spec["template"]["metadata"]["creationTimestamp"] = None
    pod = spec["template"]["spec"]
    pod.update(
        dnsPolicy="ClusterFirst",
        restartPolicy="Always",
        schedulerName="default-scheduler",
        securityContext={},
        terminationGracePeriodSeconds=30,
    )
    for c in pod["containers"]:
        c.update(
            imagePullPolicy="IfNotPresent",
            resources={},
            terminationMessagePath="/dev/termination-log",
            terminationMessagePolicy="File",
        )
        for p in c.get("ports", []):
            p.setdefault("protocol", "TCP")
    live["status"] = {"replicas": spec.get("replicas", 1), "observedGeneration": 2}
    return live


def applied_fields() -> dict[str, Any]:
    """FieldsV1 of a server-side apply of :func:`deployment_git` (no defaults: Apply owns what it sent)."""
    return {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:containers": {
                        k(name="web"): {
                            ".": {},
                            "f:env": {
                                k(name="LOG_LEVEL"): {".": {}, "f:name": {}, "f:value": {}},
                                k(name="REGION"): {".": {}, "f:name": {}, "f:value": {}},
                            },
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {k(containerPort=8080, protocol="TCP"): {".": {}, "f:containerPort": {}}},
                        },
                        k(name="metrics"): {".": {}, "f:args": {}, "f:image": {}, "f:name": {}},
                    }
                },
            },
        },
    }


def ref_of(body: dict[str, Any]) -> ObjectRef:
    return ObjectRef(
        api_version=body["apiVersion"],
        kind=body["kind"],
        namespace=body["metadata"].get("namespace"),
        name=body["metadata"]["name"],
    )


def live_obj(body: dict[str, Any]) -> LiveObject:
    return LiveObject(ref=ref_of(body), body=body)


def desired_obj(body: dict[str, Any], file: str = "apps/web.yaml") -> DesiredObject:
    return DesiredObject(ref=ref_of(body), body=body, file=file)
