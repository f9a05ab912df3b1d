"""GitOps controller objects on the real kube-apiserver, with the status their controllers would write: an Argo CD
Application (and the revision its refresh resolved), a Flux Kustomization, HelmRelease and GitRepository (and the
revision source-controller fetched, kustomize-controller applied). No controller runs: the tests that need a real
one use tests/flux and tests/argocd."""

from __future__ import annotations

import json
from typing import Any

from tests.support.kube import apply

AUTOMATED = {"enabled": True, "prune": True, "selfHeal": True}  # an Application's spec.syncPolicy.automated


def argocd_app(controlplane: Any, namespace: str, name: str, *, automated: Any = AUTOMATED) -> None:
    """An Argo CD Application of the repo's ``apps`` into ``namespace``; auto-sync ``automated`` (None: off)."""
    sync: dict[str, Any] = {"syncOptions": ["ServerSideApply=true"], "retry": {"limit": 2}}
    if automated is not None:
        sync["automated"] = automated
    apply(controlplane, {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"project": "default", "destination": {"server": "https://kubernetes.default.svc",
                                                        "namespace": namespace},
                 "source": {"repoURL": "https://git.example.com/gitops.git", "path": "apps"},
                 "syncPolicy": sync},
    })  # fmt: skip


def synced_to(controlplane: Any, namespace: str, app: str, revision: str) -> None:
    """What Argo CD's refresh writes: the revision it resolved ``targetRevision`` to (status.sync.revision)."""
    status = {"status": {"sync": {"status": "OutOfSync", "revision": revision}}}
    controlplane.kubectl("patch", "application", app, "-n", namespace, "--type=merge", "-p", json.dumps(status))


def flux_kustomization(controlplane: Any, namespace: str, name: str, *, suspend: bool | None = None) -> None:
    spec: dict[str, Any] = {"interval": "5m", "prune": True, "path": "./apps",
                            "sourceRef": {"kind": "GitRepository", "name": "gitops"}}  # fmt: skip
    if suspend is not None:
        spec["suspend"] = suspend
    apply(controlplane, {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                         "metadata": {"name": name, "namespace": namespace}, "spec": spec})  # fmt: skip


def flux_helmrelease(controlplane: Any, namespace: str, name: str, *, suspend: bool | None = None) -> None:
    spec: dict[str, Any] = {"interval": "10m", "chart": {"spec": {"chart": "podinfo", "version": "6.x",
                            "sourceRef": {"kind": "HelmRepository", "name": "podinfo"}}}}  # fmt: skip
    if suspend is not None:
        spec["suspend"] = suspend
    apply(controlplane, {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                         "metadata": {"name": name, "namespace": namespace}, "spec": spec})  # fmt: skip


def flux_source(controlplane: Any, namespace: str, name: str, *, url: str, revision: str) -> None:
    """A Flux GitRepository whose artifact is ``main@sha1:<revision>`` (what source-controller writes once it
    fetched that commit)."""
    apply(controlplane, {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                         "metadata": {"name": name, "namespace": namespace},
                         "spec": {"interval": "1m", "url": url, "ref": {"branch": "main"}}})  # fmt: skip
    artifact = {"digest": "sha256:" + "0" * 64, "lastUpdateTime": "2026-11-30T03:00:00Z", "path": f"gitrepository/"
                f"{namespace}/{name}/{revision}.tar.gz", "revision": f"main@sha1:{revision}",
                "url": f"http://source-controller/{revision}.tar.gz"}  # fmt: skip
    controlplane.kubectl("patch", "gitrepository", name, "-n", namespace, "--subresource=status", "--type=merge",
                         "-p", json.dumps({"status": {"artifact": artifact}}))  # fmt: skip


def flux_applied(controlplane: Any, namespace: str, name: str, revision: str) -> None:
    """What kustomize-controller writes after applying ``revision``."""
    status = {"status": {"lastAppliedRevision": f"main@sha1:{revision}"}}
    controlplane.kubectl("patch", "kustomization", name, "-n", namespace, "--subresource=status", "--type=merge",
                         "-p", json.dumps(status))  # fmt: skip
