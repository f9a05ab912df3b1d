"""A Kustomize GitOps repo for the revision tests: a base and a prod overlay, in a real git repo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tests.support.gitrepos import commit, init_repo
from writeback.adapters import kustomize as kustomize_cli

OVERLAY = "overlays/prod"
KUSTOMIZATION = f"{OVERLAY}/kustomization.yaml"
APP = "spec.template.spec.containers[name=app]"
IMAGE = "registry.example.com/web"

BASE = {
    "base/kustomization.yaml": """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deployment.yaml
  - configmap.yaml
""",
    "base/deployment.yaml": """\
# shared by every environment
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
              value: normal
""",
    "base/configmap.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  LOG_LEVEL: info
""",
    f"{OVERLAY}/memory-patch.yaml": """\
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


def overlay(*, namespace: str, tag: str) -> str:
    return f"""\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {namespace}
namePrefix: prod-
resources:
  - ../../base
images:
  - name: {IMAGE}
    newTag: "{tag}"  # pinned by the release train
replicas:
  - name: web
    count: 3
patches:
  - path: memory-patch.yaml
"""


def make_repo(root: Path, *, namespace: str, tag: str = "1.0.3") -> str:
    """The repo at its first commit (the one the controller applies); returns the sha."""
    init_repo(root)
    return commit(root, "web in prod", files={**BASE, KUSTOMIZATION: overlay(namespace=namespace, tag=tag)})


def bump_image(root: Path, *, namespace: str, tag: str) -> str:
    """A new commit in the overlay (the release train) that the controller has not applied yet."""
    (root / KUSTOMIZATION).write_text(overlay(namespace=namespace, tag=tag))
    return commit(root, f"web {tag}")


def rendered(root: Path, binary: Path) -> list[dict[str, Any]]:
    """The real ``kustomize build`` of the overlay, as plain dicts."""
    text = kustomize_cli.build(root / OVERLAY, binary=binary)
    return [d for d in YAML(typ="safe", pure=True).load_all(text) if isinstance(d, dict)]
