"""Helpers for the break-glass tests: controller objects on the real kube-apiserver, a bare remote, the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.cli import run_cli
from tests.support.gitrepos import git, seed_bare
from tests.support.polling import wait_until
from writeback.kube.wellknown import BREAK_GLASS_ANNOTATION as ANNOTATION

TOKEN_ENV, TOKEN = "WB_BG_TOKEN", "ghp_test_token"
ADMIN = "writeback-test-admin"  # the test control plane's client certificate (what a SelfSubjectReview says)
PROJECT = "octo-org/gitops"
AUTOMATED = {"enabled": True, "prune": True, "selfHeal": True}
MANIFEST = """\
# web frontend (synced by Argo CD)
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
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
          image: registry.example.com/web:1.0.0   # bumped by CI
          env:
            - name: FEATURE_X
              value: "on"
"""


def make_bare(tmp_path: Path) -> tuple[Path, Path]:
    """A bare remote whose main holds apps/web.yaml, and the seed clone it was pushed from."""
    bare, seed = tmp_path / "gitops.git", tmp_path / "seed"
    seed_bare(bare, seed, {"apps/web.yaml": MANIFEST})
    return bare, seed


def apply(controlplane: Any, doc: dict[str, Any]) -> None:
    controlplane.kubectl("apply", "--server-side", "--field-manager=platform-team", "-f", "-", input=json.dumps(doc))


def argocd_app(controlplane: Any, namespace: str, name: str, *, automated: Any = AUTOMATED) -> None:
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


def get(controlplane: Any, resource: str, namespace: str, name: str) -> dict[str, Any]:
    out = controlplane.kubectl("get", resource, "-n", namespace, name, "-o", "json", "--show-managed-fields").stdout
    doc: dict[str, Any] = json.loads(out)
    return doc


def record(body: dict[str, Any]) -> dict[str, Any] | None:
    text = (body["metadata"].get("annotations") or {}).get(ANNOTATION)
    return None if text is None else dict(json.loads(text))


def events(controlplane: Any, namespace: str, name: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the break-glass Events on the object ``name``, oldest first."""
    out = controlplane.kubectl("get", "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}",
                               "-o", "json").stdout  # fmt: skip
    items = [e for e in json.loads(out)["items"] if e["reason"].startswith("BreakGlass")]
    items.sort(key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["creationTimestamp"],
                              int(e["metadata"]["resourceVersion"])))  # fmt: skip
    return [(e["type"], e["reason"], e["message"]) for e in items]


def managers(body: dict[str, Any]) -> set[str]:
    return {str(m["manager"]) for m in body["metadata"].get("managedFields") or []}


def gitops_sync(controlplane: Any, namespace: str, seed: Path) -> None:
    """What the GitOps controller does: server-side apply of the repo's manifests."""
    controlplane.kubectl(
        "apply", "--server-side", "--field-manager=argocd-controller", "-n", namespace, "-f", str(seed / "apps")
    )


def write_config(path: Path, *targets: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"targets": list(targets)}))  # JSON is YAML
    return path


def target(name: str, *, bare: Path, namespace: str, app: str, forge_url: str) -> dict[str, Any]:
    return {
        "name": name, "repo_url": str(bare), "path": "apps", "namespace": namespace,
        "argocd_application": f"{namespace}/{app}",
        "forge": {"kind": "github", "url": forge_url, "project": PROJECT, "token": {"env": TOKEN_ENV},
                  "max_retries": 0, "backoff_seconds": 0, "max_wait_seconds": 1, "throttle": False},
    }  # fmt: skip


def synced_to(controlplane: Any, namespace: str, app: str, revision: str) -> None:
    """What Argo CD's refresh writes: the revision it resolved ``targetRevision`` to (status.sync.revision)."""
    status = {"status": {"sync": {"status": "OutOfSync", "revision": revision}}}
    controlplane.kubectl("patch", "application", app, "-n", namespace, "--type=merge", "-p", json.dumps(status))


def start_incident(controlplane: Any, namespace: str, tmp_path: Path, *, ttl: str = "2h") -> Path:
    """Git synced by the controller (its revision in the Application's status), break-glass started, then a
    person's hotfix at 3 AM; the bare remote."""
    bare, seed = make_bare(tmp_path)
    gitops_sync(controlplane, namespace, seed)
    argocd_app(controlplane, namespace, "web")
    synced_to(controlplane, namespace, "web", git("rev-parse", "HEAD", cwd=seed))
    code, _, err = run_cli(
        "break-glass", "start", "--argocd-app", f"{namespace}/web",
        "--reason", "checkout errors: FEATURE_X off", "--ttl", ttl, "--incident", "https://status.example.com/inc/77",
        "--actor", "oncall-bob", "--kubeconfig", controlplane.kubeconfig,
    )  # fmt: skip
    assert code == 0, err
    controlplane.kubectl("set", "env", "-n", namespace, "deployment/web", "FEATURE_X=off")
    return bare


def account_kubeconfig(controlplane: Any, namespace: str, path: Path, *, name: str, rules: list[dict[str, Any]]) -> str:
    """A kubeconfig for a ServiceAccount of ``namespace`` bound to a Role with ``rules`` (a real token from the
    TokenRequest API, checked by the real authenticator and authorizer); its path."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": namespace}, "rules": rules}  # fmt: skip
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": name, "namespace": namespace},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
               "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]}  # fmt: skip
    controlplane.kubectl("create", "serviceaccount", name, "-n", namespace)
    for doc in (role, binding):
        controlplane.kubectl("apply", "-f", "-", input=json.dumps(doc))
    token = controlplane.kubectl("create", "token", name, "-n", namespace, "--duration=1h").stdout.strip()
    admin = json.loads(controlplane.kubectl("config", "view", "--raw", "-o", "json").stdout)
    cluster = admin["clusters"][0]
    doc = {
        "apiVersion": "v1", "kind": "Config", "clusters": [cluster],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": cluster["name"], "user": name, "namespace": namespace}}],
        "current-context": name,
    }  # fmt: skip
    path.write_text(json.dumps(doc))
    return str(path)


def wait_allowed(controlplane: Any, kubeconfig: str, *args: str) -> None:
    """Until the RBAC authorizer's cache has the new binding (``kubectl auth can-i`` as that user says yes)."""
    wait_until(
        f"the RoleBinding taking effect for {args}",
        lambda: (
            controlplane.kubectl("--kubeconfig", kubeconfig, "auth", "can-i", *args, check=False).stdout.strip()
            == "yes"
        ),
        timeout=30,
        step=0.2,
    )


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
