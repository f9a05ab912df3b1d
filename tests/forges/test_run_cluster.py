"""``writeback run --once`` against the real kube-apiserver: a person's kubectl change becomes a PR whose body
carries the server-side dry-run verification of the patched manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.github_fake import GitHubFake
from support.gitrepos import git, seed_bare
from test_run_cli import PROJECTS, TOKENS, refs, run

MANIFEST = """\
# web frontend
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
"""


@pytest.mark.controlplane
def test_kubectl_edit_becomes_a_verified_pull_request(
    controlplane: Any, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    bare, seed = tmp_path / "repo.git", tmp_path / "repo-seed"
    seed_bare(bare, seed, {"apps/web.yaml": MANIFEST})
    # the GitOps controller syncs Git, then a person changes the image at 3 AM
    controlplane.kubectl(
        "apply", "--server-side", "--field-manager=argocd-controller", "-n", namespace, "-f", str(seed / "apps")
    )
    controlplane.kubectl("set", "image", "-n", namespace, "deployment/web", "app=registry.example.com/web:1.0.7")

    monkeypatch.setenv("WB_TEST_TOKEN", TOKENS["github"])
    fake = GitHubFake(bare=bare).start()
    try:
        code, out, err = run(
            capsys, "run", "--once", "--repo-url", str(bare), "--forge", "github", "--forge-url", fake.url,
            "--forge-project", PROJECTS["github"], "--token-env", "WB_TEST_TOKEN", "--path", "apps",
            "--namespace", namespace, "--kubeconfig", controlplane.kubeconfig,
        )  # fmt: skip
        assert code == 0, err
        assert " created " in out
        [pr] = fake.prs.values()
        assert "registry.example.com/web:1.0.7" in pr["body"]
        assert "kubectl-set" in pr["body"]
        assert "no change to the 1 written-back field (they match live)" in pr["body"]
        [branch] = [line.split()[-1] for line in refs(bare).splitlines() if "writeback/" in line]
        patched = git("--git-dir", str(bare), "show", f"{branch}:apps/web.yaml")
        assert "image: registry.example.com/web:1.0.7   # bumped by CI" in patched
        assert fake.violations == []
    finally:
        fake.stop()
