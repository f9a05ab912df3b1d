"""Helpers of the drift scenarios: manifests, GitOps-style syncs with real kubectl, running the CLI."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tests.support.cli import run_cli
from tests.support.gitrepos import commit
from tests.support.objects import deployment

# How the GitOps controller applied Git: kubectl with that controller's field manager.
SYNC_MODES: dict[str, tuple[str, ...]] = {
    "argocd-client-side": ("apply", "--field-manager=argocd-controller"),  # Update, Argo CD's default
    "argocd-server-side": ("apply", "--server-side", "--field-manager=argocd-controller"),  # Apply
    "flux-kustomize-controller": ("apply", "--server-side", "--field-manager=kustomize-controller"),  # Apply
}

PEM_BEFORE = """\
-----BEGIN CERTIFICATE-----
MIIBszCCAVmgAwIBAgIUQ2xlYXJseU5vdEFSZWFsQ2VydGlmaWNhdGUwCgYIKoZI
zj0EAwIwHjEcMBoGA1UEAwwTd3JpdGViYWNrLXRlc3QtY2EtMTAeFw0yNjAxMDEw
-----END CERTIFICATE-----
-----BEGIN CERTIFICATE-----
MIIBtDCCAVqgAwIBAgIUU2Vjb25kTm90QVJlYWxDZXJ0aWZpY2F0ZTAKBggqhkjO
PQQDAjAeMRwwGgYDVQQDDBN3cml0ZWJhY2stdGVzdC1jYS0yMB4XDTI2MDEwMTAw
-----END CERTIFICATE-----
"""
ROTATED_LINE_OLD = "PQQDAjAeMRwwGgYDVQQDDBN3cml0ZWJhY2stdGVzdC1jYS0yMB4XDTI2MDEwMTAw"
ROTATED_LINE_NEW = "PQQDAjAeMRwwGgYDVQQDDBN3cml0ZWJhY2stdGVzdC1jYS0zMB4XDTI2MDYwMTAw"
PEM_AFTER = PEM_BEFORE.replace(ROTATED_LINE_OLD, ROTATED_LINE_NEW)

# A KUBE_EDITOR: rewrites one line of the PEM in the file kubectl edit opens (like a person in vi).
EDITOR_SCRIPT = f"""\
import sys
p = sys.argv[-1]
text = open(p).read()
assert {ROTATED_LINE_OLD!r} in text, text
open(p, "w").write(text.replace({ROTATED_LINE_OLD!r}, {ROTATED_LINE_NEW!r}))
"""


def configmap(name: str, data: Mapping[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": dict(data)}


def to_yaml(*docs: Mapping[str, Any]) -> str:
    y = YAML()
    y.default_flow_style = False
    out = []
    for d in docs:
        buf = io.StringIO()
        y.dump(_plain(d), buf)
        out.append(buf.getvalue())
    return "---\n".join(out)


def _plain(v: Any) -> Any:
    from ruamel.yaml.scalarstring import LiteralScalarString

    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, str) and "\n" in v:
        return LiteralScalarString(v)  # PEM bundles as block scalars, as people write them
    return v


def write(root: Path, rel: str, *docs: Mapping[str, Any]) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"# {rel}: managed by GitOps\n" + to_yaml(*docs))
    return p


def sync(controlplane: Any, mode: str, namespace: str, *files: Path) -> None:
    """Apply Git's files the way the GitOps controller of ``mode`` does."""
    args = [a for f in files for a in ("-f", str(f))]
    controlplane.kubectl(*SYNC_MODES[mode], "-n", namespace, *args)


def diff_json(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run_cli("diff", "--output", "json", *args)
    assert code in (0, 1), f"writeback diff exited {code}: {err}"
    return code, json.loads(out)


def drifts_of(doc: Mapping[str, Any], *, kind: str, name: str) -> list[dict[str, Any]]:
    return [d for d in doc["drifts"] if d["resource"]["kind"] == kind and d["resource"]["name"] == name]


def by_path(drifts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["path"]: d for d in drifts}


def decisions(doc: Mapping[str, Any]) -> dict[tuple[str, str, str], str]:
    """(kind, name, path) -> decision: what offline and cluster mode must agree on."""
    return {(d["resource"]["kind"], d["resource"]["name"], d["path"]): d["decision"] for d in doc["drifts"]}


def git_ahead(controlplane: Any, namespace: str, git_remote: Any, *, applier: str) -> dict[str, str]:
    """v1 applied by ``applier`` (a ``sync`` mode); v2 (a new image) committed and pushed, not synced; a person's env
    hotfix on live. Returns both commits: ``{"v1": ..., "v2": ...}``."""
    work = git_remote.work
    (work / "apps").mkdir()
    (work / "apps" / "kustomization.yaml").write_text(f"namespace: {namespace}\nresources: [web.yaml]\n")
    manifest = write(work, "apps/web.yaml", deployment("web", image="nginx:1.25"))
    v1 = commit(work, "web v1")
    git_remote.push()
    sync(controlplane, applier, namespace, manifest)
    write(work, "apps/web.yaml", deployment("web", image="nginx:1.27"))
    v2 = commit(work, "web: nginx 1.27")
    git_remote.push()
    controlplane.kubectl("set", "env", "deployment/web", "-n", namespace, "HOTFIX=1")
    return {"v1": v1, "v2": v2}


def apply_argocd_application(controlplane: Any, namespace: str, git_remote: Any, status: dict[str, Any]) -> None:
    """The Application ``NS/web`` following ``apps`` of ``git_remote``, with ``status`` as Argo CD's controller writes
    it (its CRD has no status subresource: the controller writes status with the object)."""
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "project": "default",
            "source": {"repoURL": str(git_remote.bare), "path": "apps", "targetRevision": "main"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
        },
        "status": status,
    }
    controlplane.kubectl(
        "apply", "--server-side", "--field-manager=argocd-controller", "-f", "-", input=json.dumps(app)
    )
