"""Canaries on the real control plane: service mode and break-glass end.

A person's 3 AM edits put a canary into a Secret (policy.include_secrets on) and into a ``sensitive_paths`` field;
the forge token is a canary too. The service (`writeback run --config`) runs its cycles, serves /metrics, captures
state; then `break-glass start` and `break-glass end` run against the same Application. Every output is scanned,
plain and base64: the service's log lines, its metric labels and values, its state directory, every forge request,
every object and ref of the pushed remote, the break-glass commands' output and error messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.github_fake import GitHubFake
from tests.reliability.test_security import (
    SECRET_CANARY,
    SENSITIVE_CANARY,
    TOKEN_CANARY,
    _git_everything,
    assert_clean,
    b64,
)
from tests.support.controllers import argocd_app
from tests.support.gitrepos import seed_bare
from tests.support.polling import wait_until
from tests.support.services import free_port, start_writeback, stop_writeback

pytestmark = pytest.mark.controlplane
TOKEN_ENV = "WB_CANARY_TOKEN"


def manifests(namespace: str) -> dict[str, str]:
    meta = f"metadata:\n  namespace: {namespace}\n"
    return {
        "apps/settings.yaml": f"apiVersion: v1\nkind: ConfigMap\n{meta}  name: settings\n"
        "data:\n  setting: v1\n  apiKey: old-key\n",
        "apps/db.yaml": f"apiVersion: v1\nkind: Secret\ntype: Opaque\n{meta}  name: db\n"
        f"data:\n  password: {b64('old-password')}\n",
    }


def test_canaries_in_service_mode_and_break_glass(
    controlplane: Any, crds: list[str], namespace: str, tmp_path: Path
) -> None:
    bare, seed = tmp_path / "gitops.git", tmp_path / "seed"
    seed_bare(bare, seed, manifests(namespace))
    controlplane.kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-f", str(seed / "apps"))
    argocd_app(controlplane, namespace, "shop")
    patch = json.dumps({"data": {"setting": "v2", "apiKey": SENSITIVE_CANARY}})
    controlplane.kubectl("patch", "configmap", "settings", "-n", namespace, "-p", patch)
    controlplane.kubectl(
        "patch", "secret", "db", "-n", namespace, "-p", json.dumps({"data": {"password": b64(SECRET_CANARY)}})
    )
    fake = GitHubFake(bare=bare, tokens=(TOKEN_CANARY,)).start()
    port = free_port()
    target = {
        "name": "shop", "cluster": "test", "repo_url": str(bare), "path": "apps", "namespace": namespace,
        "argocd_application": f"{namespace}/shop",
        "forge": {"kind": "github", "url": fake.url, "project": "octo-org/gitops", "token": {"env": TOKEN_ENV},
                  "max_retries": 0, "backoff_seconds": 0, "max_wait_seconds": 1, "throttle": False},
        "policy": {"include_secrets": True, "sensitive_paths": ["data.apiKey"]},
        "schedule": {"interval_seconds": 2, "jitter_seconds": 0},
    }  # fmt: skip
    config = {
        "clusters": [{"name": "test", "kubeconfig": controlplane.kubeconfig, "context": "writeback-test"}],
        "targets": [target], "metrics": {"address": f"127.0.0.1:{port}"}, "state_dir": str(tmp_path / "state"),
        "watch": {"debounce_seconds": 1}, "shutdown_grace_seconds": 10,
    }  # fmt: skip
    env = {TOKEN_ENV: TOKEN_CANARY}
    outputs: list[tuple[str, str]] = []
    proc, log = start_writeback(config, workdir=tmp_path, env=env)
    try:
        wait_until("the service's PR", lambda: bool(fake.prs), timeout=90, process=proc, stderr=log)
        wait_until("metrics", lambda: "writeback_cycles_total" in _metrics(port), timeout=30, process=proc, stderr=log)
        outputs.append(("/metrics", _metrics(port)))
    finally:
        code = stop_writeback(proc, timeout=40)
    outputs.append(("the service's log", log.read_text()))
    assert code == 0, outputs[-1][1][-3000:]
    [pr] = fake.prs.values()
    assert "redacted" in pr["body"]  # the Secret and the sensitive field are reported, without their values
    argv = [sys.executable, "-m", "writeback.cli", "break-glass"]
    flags = ["--config", str(tmp_path / "writeback.yaml"), "--workdir", str(tmp_path / "bg")]
    for step in (["start", "--argocd-app", f"{namespace}/shop", "--reason", "incident 42", "--ttl", "1h",
                  "--kubeconfig", controlplane.kubeconfig],
                 ["end", "--argocd-app", f"{namespace}/shop", "--kubeconfig", controlplane.kubeconfig, *flags],
                 ["status", "-A", "--kubeconfig", controlplane.kubeconfig]):  # fmt: skip
        done = subprocess.run([*argv, *step], capture_output=True, text=True, env={**os.environ, **env})
        outputs.append((f"break-glass {step[0]}", done.stdout + done.stderr))
        assert done.returncode == 0, (step, done.stdout, done.stderr)
    fake.stop()
    for where, text in outputs:
        assert_clean(where, text)
    for rec in fake.requests:
        assert_clean(f"forge request {rec.method} {rec.path}", rec.path + json.dumps(rec.body))
    assert_clean("PRs and comments", json.dumps([fake.prs, fake.comments]))
    assert_clean("the pushed remote", _git_everything(bare))
    for path in sorted(p for p in tmp_path.rglob("*") if p.is_file() and "/objects/" not in str(p)):
        if path.name not in ("writeback.yaml",) and "seed" not in path.parts:
            assert_clean(f"the file {path}", path.read_bytes().decode("utf-8", "replace"))


def _metrics(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            return str(resp.read().decode())
    except OSError:
        return ""
