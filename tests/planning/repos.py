"""Repo texts for the planning tests: a Kustomize base with staging and prod overlays, and Helm values."""

from __future__ import annotations

from typing import Any

from writeback.kube.paths import parse_path
from writeback.kube.pathtypes import Select
from writeback.kube.refs import ObjectRef
from writeback.model import Decision, Drift, ManagerOperation, Op

KUSTOMIZE_REPO: dict[str, str] = {
    "base/kustomization.yaml": """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deployment.yaml
  - service.yaml
configMapGenerator:
  - name: app-config
    literals:
      - LOG_LEVEL=info
      - FEATURE_X=off
""",
    "base/deployment.yaml": """\
# The web frontend. Shared by every environment.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: app
          image: registry.example.com/web:1.0.0
          env:
            - name: MODE
              value: normal  # the default mode
          envFrom:
            - configMapRef:
                name: app-config
""",
    "base/service.yaml": """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
    - port: 80
      protocol: TCP
      targetPort: 8080
""",
    "overlays/staging/kustomization.yaml": """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: staging
namePrefix: stg-
resources:
  - ../../base
images:
  - name: registry.example.com/web
    newTag: 1.1.0-rc1
replicas:
  - name: web
    count: 1
""",
    "overlays/prod/kustomization.yaml": """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: prod
resources:
  - ../../base
labels:
  - pairs:
      env: prod
images:
  - name: registry.example.com/web
    newTag: "1.0.3"  # pinned by the release train
replicas:
  - name: web
    count: 3
patches:
  - path: resources-patch.yaml
configMapGenerator:
  - name: app-config
    behavior: merge
    literals:
      - LOG_LEVEL=warn
""",
    "overlays/prod/resources-patch.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: app
          resources:
            limits:
              memory: 256Mi
""",
}

HELM_VALUES = """\
# values for the web chart
replicaCount: 2 # {"$writeback": "Deployment.apps/prod/web:spec.replicas"}
image:
  repository: registry.example.com/web
  tag: "1.0.0" # {"$writeback": "Deployment.apps/prod/web:spec.template.spec.containers[name=app].image", "part": "tag"}
  pullPolicy: IfNotPresent
"""

HELM_RELEASE = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: api
  namespace: prod
spec:
  interval: 10m
  chart:
    spec:
      chart: api
      sourceRef:
        kind: HelmRepository
        name: charts
  values:
    logLevel: info # {"$writeback": "Deployment.apps/prod/api:spec.template.spec.containers[name=api].env[name=LOG_LEVEL].value"}
    resources:
      limits:
        cpu: 500m
"""  # noqa: E501


def ref(kind: str, name: str, *, namespace: str | None = "prod", api_version: str = "apps/v1") -> ObjectRef:
    return ObjectRef(api_version=api_version, kind=kind, namespace=namespace, name=name)


WEB = ref("Deployment", "web")


def drift(
    resource: ObjectRef,
    path: str,
    *,
    op: Op = Op.CHANGE,
    live: Any = None,
    git: Any = None,
    decision: Decision = Decision.WRITEBACK,
    manager: str | None = "kubectl-edit",
    time: str | None = "2026-11-30T03:00:00Z",
    sensitive: bool = False,
) -> Drift:
    from writeback.kube.pathtypes import ABSENT

    return Drift(
        resource=resource,
        path=parse_path(path),
        op=op,
        live=ABSENT if op is Op.REMOVE else live,
        git=ABSENT if op is Op.ADD else git,
        manager=manager,
        operation=ManagerOperation.UPDATE,
        time=time,
        decision=decision,
        reason="changed by a person",
        sensitive=sensitive,
    )


def selects(path: str) -> bool:
    return any(isinstance(s, Select) for s in parse_path(path))
