"""Skeleton objects for tests/controlplane/defaults_gen.py: every built-in kind that GitOps repos hold.

Each skeleton is as small as validation allows, plus every optional sub-struct once, so that the API server's
dry-run create shows every field it fills in. Kinds get two variants that differ in the values a default could
be derived from (images, ports, names, kinds, limits), so a derived value shows up as a value that varies:
the generator then insists on a derived rule in writeback/drift/evidence/derivations.py instead of recording a constant.

Names and namespaces do not matter (metadata is not recorded); cluster-scoped names start with ``NAME``.
"""

from __future__ import annotations

import copy
from typing import Any

NAME = "writeback-defaults"
DIGEST = "sha256:" + "0" * 64
HANDLERS = ("httpGet", "tcpSocket", "grpc", "exec")
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
HOOK_HANDLERS = ("httpGet", "tcpSocket", "exec", "sleep")
# One of each form imagePullPolicy is derived from, per variant (a tag, none, :latest, a digest, host:port).
IMAGES = (
    ("nginx:1.25", "busybox", "nginx:latest", f"nginx@{DIGEST}"),
    ("registry.local:5000/app", "nginx:1.27-alpine", "docker.io/library/redis:latest", f"quay.io/app:v1@{DIGEST}"),
)


def _handler(kind: str, port: int) -> dict[str, Any]:
    if kind == "httpGet":
        return {"httpGet": {"port": port, "httpHeaders": [{"name": "X-Probe", "value": "1"}]}}
    if kind == "tcpSocket":
        return {"tcpSocket": {"port": port}}
    if kind == "grpc":
        return {"grpc": {"port": port}}
    if kind == "sleep":
        return {"sleep": {"seconds": 1}}
    return {"exec": {"command": ["true"]}}


def _env(v: int) -> list[dict[str, Any]]:
    return [
        {"name": "PLAIN", "value": str(v)},
        {"name": "FIELD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "RESOURCE", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
        {"name": "CONFIGMAP", "valueFrom": {"configMapKeyRef": {"name": f"cm{v}", "key": "k"}}},
        {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": f"s{v}", "key": "k"}}},
    ]


def _container(v: int, i: int, *, prefix: str = "c", probes: bool = True) -> dict[str, Any]:
    """Container i of variant v: probe handlers and hooks rotate, so each probe meets each handler once."""
    port = 8080 + 10 * v + i
    c: dict[str, Any] = {
        "name": f"{prefix}{i}",
        "image": IMAGES[v][i % 4],
        "args": ["serve"],
        "ports": [{"containerPort": port, "name": f"p{i}"}],
        "env": _env(v),
        "envFrom": [{"configMapRef": {"name": f"cm{v}"}}, {"secretRef": {"name": f"s{v}"}, "prefix": "S_"}],
        # a Pod's missing requests come from its limits: the limits vary, variant 1 has no requests
        "resources": {
            "limits": {"cpu": f"{v + 1}", "memory": f"{64 * (v + 1)}Mi"},
            **({} if v else {"requests": {"cpu": "100m"}}),
        },
        "volumeMounts": [{"name": "v-emptydir", "mountPath": "/data"}],
    }
    if probes:
        for n, probe in enumerate(PROBES):
            c[probe] = _handler(HANDLERS[(i + n) % 4], port)
        c["lifecycle"] = {
            "postStart": _handler(HOOK_HANDLERS[i % 4], port),
            "preStop": _handler(HOOK_HANDLERS[(i + 1) % 4], port),
        }
    return c


def _volumes(v: int) -> list[dict[str, Any]]:
    """Every volume source of core/v1 Volume (the deprecated in-tree ones too: old manifests hold them)."""
    image = ("nginx:1.25", "nginx:latest")[v]
    sources: dict[str, Any] = {
        "hostPath": {"path": f"/tmp/{v}"},
        "emptyDir": {},
        "gcePersistentDisk": {"pdName": "disk"},
        "awsElasticBlockStore": {"volumeID": "vol"},
        "gitRepo": {"repository": "https://git.example.invalid/repo.git"},
        "secret": {"secretName": f"s{v}", "items": [{"key": "k", "path": "p"}]},
        "nfs": {"server": "nfs.example.invalid", "path": "/export"},
        "iscsi": {"targetPortal": "192.0.2.1:3260", "iqn": "iqn.2001-04.com.example:storage", "lun": 0},
        "glusterfs": {"endpoints": "gluster", "path": "vol"},
        "persistentVolumeClaim": {"claimName": f"claim{v}"},
        "rbd": {"monitors": ["192.0.2.1:6789"], "image": "img"},
        "flexVolume": {"driver": "example.com/driver"},
        "cinder": {"volumeID": "vol"},
        "cephfs": {"monitors": ["192.0.2.1:6789"]},
        "flocker": {"datasetName": "data"},
        "downwardAPI": {
            "items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                {"path": "cpu", "resourceFieldRef": {"containerName": "c0", "resource": "limits.cpu"}},
            ]
        },
        "fc": {"targetWWNs": ["500a0982591b7b91"], "lun": 0},
        "azureFile": {"secretName": f"s{v}", "shareName": "share"},
        "configMap": {"name": f"cm{v}"},
        "vsphereVolume": {"volumePath": "[datastore] vol.vmdk"},
        "quobyte": {"registry": "registry.example.invalid:7861", "volume": "vol"},
        "azureDisk": {"diskName": "disk", "diskURI": "https://disks.example.invalid/disk.vhd"},
        "photonPersistentDisk": {"pdID": "disk"},
        "projected": {
            "sources": [
                {"secret": {"name": f"s{v}"}},
                {"configMap": {"name": f"cm{v}"}},
                {"downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                {"serviceAccountToken": {"path": "token"}},
            ]
        },
        "portworxVolume": {"volumeID": "vol"},
        "scaleIO": {
            "gateway": "https://scaleio.example.invalid",
            "system": "sys",
            "volumeName": "vol",
            "secretRef": {"name": f"s{v}"},
        },
        "storageos": {"volumeName": "vol"},
        "csi": {"driver": "csi.example.com"},
        "ephemeral": {
            "volumeClaimTemplate": {
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }
        },
        "image": {"reference": image},
    }
    return [{"name": f"v-{name.lower()}", name: body} for name, body in sources.items()]


def pod_spec(v: int, *, restart: str | None = None) -> dict[str, Any]:
    """A pod spec with 4 containers, the same 4 as restartable init containers (sidecars), one plain init."""
    sidecars = [dict(_container(v, i, prefix="i"), restartPolicy="Always") for i in range(4)]
    plain_init = _container(v, 4, prefix="init", probes=False)
    minimal = {"name": "minimal", "image": IMAGES[v][v]}  # what the server fills in a bare container
    spec: dict[str, Any] = {
        "serviceAccountName": f"sa{v}",
        "containers": [*(_container(v, i) for i in range(4)), minimal],
        "initContainers": [plain_init, *sidecars, dict(minimal, name="init-minimal")],
        "volumes": _volumes(v),
    }
    if restart:
        spec["restartPolicy"] = restart
    return spec


def ephemeral_containers(v: int) -> list[dict[str, Any]]:
    """Ephemeral containers cannot be set on create: the generator adds them through the subresource."""
    return [{"name": f"debug{i}", "image": IMAGES[v][i], "env": _env(v), "targetContainerName": "c0"} for i in range(4)]


def _template(v: int, *, restart: str | None = None) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": f"a{v}"}}, "spec": pod_spec(v, restart=restart)}


def _selector(v: int) -> dict[str, Any]:
    return {"matchLabels": {"app": f"a{v}"}}


def _claim_template(v: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"data{v}"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": f"{v + 1}Gi"}}},
    }


def _webhook(v: int, i: int) -> dict[str, Any]:
    client: dict[str, Any] = (
        {"service": {"namespace": "ns", "name": f"svc{v}", "path": "/hook"}}
        if i == 0
        else {"url": f"https://hook{v}.example.invalid/hook"}
    )
    return {
        "name": f"hook{i}.v{v}.example.com",
        "clientConfig": client,
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }


def _crd(v: int) -> dict[str, Any]:
    kind, scope = (("Widget", "Namespaced"), ("Gadget", "Cluster"))[v]
    plural = kind.lower() + "s"
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.defaults.writeback.test"},
        "spec": {
            "group": "defaults.writeback.test",
            "scope": scope,
            "names": {"plural": plural, "kind": kind},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
        },
    }
    if v == 0:  # a conversion webhook: its service port defaults (variant 1 keeps the default strategy)
        service = {"name": "convert", "namespace": "default", "path": "/convert"}
        crd["spec"]["conversion"] = {
            "strategy": "Webhook",
            "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"service": service}},
        }
    return crd


def _obj(api_version: str, kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, **fields}


def _service(v: int, name: str, **spec: Any) -> dict[str, Any]:
    ports = [{"name": "http", "port": 80 + v}, {"name": "dns", "port": 53 + v, "protocol": "UDP"}]
    body: dict[str, Any] = {"selector": {"app": f"a{v}"}, "ports": ports, **spec}
    return _obj("v1", "Service", name, spec=body)


def variants(v: int) -> list[dict[str, Any]]:
    """All skeletons of variant ``v`` (0 or 1)."""
    n = f"{NAME}-{v}"
    metric = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}
    netpol_rules = (
        {"ingress": [{"ports": [{"port": 80}]}]},
        {"ingress": [{"ports": [{"port": 81}]}], "egress": [{"ports": [{"port": 53}]}]},
    )[v]
    limit = ("1", "2")[v]
    return [
        # workloads
        _obj("v1", "Pod", n, spec=pod_spec(v)),
        _obj("v1", "PodTemplate", n, template=_template(v)),
        _obj("v1", "ReplicationController", n, spec={"selector": {"app": f"a{v}"}, "template": _template(v)}),
        _obj("apps/v1", "Deployment", n, spec={"selector": _selector(v), "template": _template(v)}),
        _obj("apps/v1", "ReplicaSet", n, spec={"selector": _selector(v), "template": _template(v)}),
        _obj("apps/v1", "DaemonSet", n, spec={"selector": _selector(v), "template": _template(v)}),
        _obj(
            "apps/v1",
            "StatefulSet",
            n,
            spec={
                "selector": _selector(v),
                "serviceName": f"svc{v}",
                "template": _template(v),
                "volumeClaimTemplates": [_claim_template(v)],
            },
        ),
        _obj("batch/v1", "Job", n, spec={"template": _template(v, restart=("Never", "OnFailure")[v])}),
        _obj(
            "batch/v1",
            "CronJob",
            n,
            spec={"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": _template(v, restart="Never")}}},
        ),
        # Services: each type, headless, sessionAffinity ClientIP
        _service(v, f"{n}-clusterip", sessionAffinity="ClientIP"),
        _service(v, f"{n}-plain"),
        _service(v, f"{n}-nodeport", type="NodePort"),
        _service(v, f"{n}-lb", type="LoadBalancer"),
        _service(v, f"{n}-lb-local", type="LoadBalancer", externalTrafficPolicy="Local"),
        _service(v, f"{n}-headless", clusterIP="None"),
        _obj("v1", "Service", f"{n}-external", spec={"type": "ExternalName", "externalName": f"db{v}.example.com"}),
        _obj("v1", "Endpoints", n, subsets=[{"addresses": [{"ip": f"192.0.2.{v + 1}"}], "ports": [{"port": 80}]}]),
        # networking
        _obj(
            "networking.k8s.io/v1",
            "Ingress",
            n,
            spec={
                "rules": [
                    {
                        "host": f"app{v}.example.com",
                        "http": {
                            "paths": [
                                {
                                    "path": "/",
                                    "pathType": "Prefix",
                                    "backend": {"service": {"name": f"svc{v}", "port": {"number": 80}}},
                                }
                            ]
                        },
                    }
                ]
            },
        ),
        _obj("networking.k8s.io/v1", "IngressClass", n, spec={"controller": "example.com/ingress"}),
        _obj("networking.k8s.io/v1", "NetworkPolicy", n, spec={"podSelector": {}, **netpol_rules}),
        # policy, autoscaling, scheduling, quotas
        _obj("policy/v1", "PodDisruptionBudget", n, spec={"minAvailable": 1, "selector": _selector(v)}),
        _obj(
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            n,
            spec={"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 5},
        ),
        _obj(
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            f"{n}-behavior",
            spec={
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                "maxReplicas": 5,
                "metrics": [
                    dict(metric, resource={"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}})
                ],
                "behavior": {"scaleUp": {}, "scaleDown": {}},
            },
        ),
        _obj("scheduling.k8s.io/v1", "PriorityClass", n, value=1000 + v),
        _obj("v1", "ResourceQuota", n, spec={"hard": {"pods": "10"}, "scopes": ["BestEffort"]}),
        _obj("v1", "LimitRange", n, spec={"limits": [{"type": "Container", "max": {"cpu": limit, "memory": "1Gi"}}]}),
        _obj("node.k8s.io/v1", "RuntimeClass", n, handler=f"runc{v}"),
        # storage
        _obj(
            "v1",
            "PersistentVolume",
            f"{n}-hostpath",
            spec={"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": f"/tmp/{v}"}},
        ),
        _obj(
            "v1",
            "PersistentVolume",
            f"{n}-csi",
            spec={
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "csi": {"driver": "csi.example.com", "volumeHandle": f"h{v}"},
            },
        ),
        _obj(
            "v1",
            "PersistentVolumeClaim",
            n,
            spec={"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        ),
        _obj("storage.k8s.io/v1", "StorageClass", n, provisioner="csi.example.com"),
        _obj("storage.k8s.io/v1", "CSIDriver", f"csi{v}.example.com", spec={}),
        # RBAC
        _obj(
            "rbac.authorization.k8s.io/v1",
            "Role",
            n,
            rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        ),
        _obj(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            n,
            rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        ),
        *(
            _obj(
                "rbac.authorization.k8s.io/v1",
                kind,
                n,
                roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                subjects=[
                    {"kind": "ServiceAccount", "name": f"sa{v}", "namespace": "ns"},
                    {"kind": "User", "name": f"user{v}"},
                    {"kind": "Group", "name": f"group{v}"},
                ],
            )
            for kind in ("RoleBinding", "ClusterRoleBinding")
        ),
        # admission and API extension
        _obj(
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
            n,
            webhooks=[_webhook(v, 0), _webhook(v, 1)],
        ),
        _obj(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            n,
            webhooks=[_webhook(v, 0), _webhook(v, 1)],
        ),
        _obj(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
            n,
            spec={
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["apps"],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["deployments"],
                        }
                    ]
                },
                "validations": [{"expression": f"object.spec.replicas <= {5 + v}"}],
            },
        ),
        _obj(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicyBinding",
            n,
            spec={"policyName": n, "validationActions": ["Deny"]},
        ),
        _crd(v),
        _obj(
            "apiregistration.k8s.io/v1",
            "APIService",
            f"v1.api{v}.defaults.writeback.test",
            spec={
                "group": f"api{v}.defaults.writeback.test",
                "version": "v1",
                "service": {"namespace": "ns", "name": f"svc{v}"},
                "groupPriorityMinimum": 1000,
                "versionPriority": 15,
                "insecureSkipTLSVerify": True,
            },
        ),
        # plain objects
        _obj("v1", "ServiceAccount", n),
        _obj("v1", "Namespace", n),
        _obj("v1", "ConfigMap", n, data={"k": str(v)}),
        _obj("v1", "Secret", n, data={"k": ("MA==", "MQ==")[v]}),
    ]


# The objects that must exist for admission to fill a field: a default StorageClass (PVC storageClassName) and a
# default IngressClass (Ingress ingressClassName). Created for real for the generation, then deleted.
CLUSTER_DEFAULTS: tuple[dict[str, Any], ...] = (
    _obj(
        "storage.k8s.io/v1",
        "StorageClass",
        f"{NAME}-default",
        provisioner="csi.example.com",
    )
    | {"metadata": {"name": f"{NAME}-default", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}},
    _obj("networking.k8s.io/v1", "IngressClass", f"{NAME}-default", spec={"controller": "example.com/ingress"})
    | {
        "metadata": {
            "name": f"{NAME}-default",
            "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"},
        }
    },
)


def all_skeletons() -> list[dict[str, Any]]:
    return [copy.deepcopy(s) for v in (0, 1) for s in variants(v)]
