"""Helpers for the break-glass tests only: a bare remote holding the web Deployment, a break-glass started on it,
the target config, a ServiceAccount's kubeconfig. What other test directories share lives in tests/support
(controllers, kube, breakglass_record, objects)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.github_fake import PROJECT
from tests.support.cli import run_cli
from tests.support.controllers import argocd_app, synced_to
from tests.support.gitrepos import git, seed_bare
from tests.support.objects import WEB_MANIFEST
from tests.support.polling import wait_until

TOKEN_ENV = "WB_BG_TOKEN"  # where the service and the CLI find the fake forge's token
ADMIN = "writeback-test-admin"  # the test control plane's client certificate (what a SelfSubjectReview says)


def make_bare(tmp_path: Path) -> tuple[Path, Path]:
    """A bare remote whose main holds apps/web.yaml, and the seed clone it was pushed from."""
    bare, seed = tmp_path / "gitops.git", tmp_path / "seed"
    seed_bare(bare, seed, {"apps/web.yaml": WEB_MANIFEST})
    return bare, seed


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
