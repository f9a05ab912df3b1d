"""``writeback break-glass end``: the live state is backported by PR first, and auto-sync is restored exactly only
once that PR exists; when the forge is down, auto-sync stays suspended and the command exits 3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.breakglass.support import TOKEN_ENV, start_incident, target, write_config
from tests.fakes.forge_server import FakeForge
from tests.fakes.github_fake import PROJECT, TOKEN, GitHubFake
from tests.fakes.gitlab_fake import GitLabFake
from tests.support.breakglass_record import record
from tests.support.cli import run_cli
from tests.support.controllers import AUTOMATED
from tests.support.gitrepos import git
from tests.support.kube import get
from tests.support.services import free_port

pytestmark = pytest.mark.controlplane
APPS = "applications.argoproj.io"
FORGES = {"github": (GitHubFake, PROJECT, TOKEN), "gitlab": (GitLabFake, "platform/gitops", "glpat-test-token")}


def _requests(fake: FakeForge) -> dict[int, dict[str, Any]]:
    """The fake's pull requests (GitHub) or merge requests (GitLab), the body as ``body``."""
    if isinstance(fake, GitHubFake):
        return fake.prs
    assert isinstance(fake, GitLabFake)
    return {n: {**mr, "body": mr.get("description", "")} for n, mr in fake.mrs.items()}


@pytest.mark.parametrize("forge", ["github", "gitlab"])
def test_end_backports_the_hotfix_by_pr_then_restores_sync_policy_exactly(
    controlplane: Any, crds: list[str], namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, forge: str,
) -> None:  # fmt: skip
    """``--resume-after opened``: auto-sync resumes as soon as the PR exists (the pre-merged-first behaviour)."""
    bare = start_incident(controlplane, namespace, tmp_path)
    fake_cls, project, token = FORGES[forge]
    monkeypatch.setenv(TOKEN_ENV, token)
    fake = fake_cls(bare=bare).start()
    flags = (
        "--argocd-app", f"{namespace}/web", "--repo-url", str(bare), "--forge", forge, "--forge-url", fake.url,
        "--forge-project", project, "--token-env", TOKEN_ENV, "--path", "apps", "--manifest-namespace", namespace,
        "--kubeconfig", controlplane.kubeconfig, "--resume-after", "opened",
    )  # fmt: skip
    try:
        # --dry-run: the cycle runs without a push or an API write, and auto-sync is not restored
        code, out, err = run_cli("break-glass", "end", "--dry-run", *flags)
        assert code == 0, out + err
        assert "would push" in out and "dry run: auto-sync would be restored" in out
        assert _requests(fake) == {} and record(get(controlplane, APPS, namespace, "web")) is not None
        code, out, err = run_cli("break-glass", "end", *flags)
        assert code == 0, out + err
        assert " created " in out and "backport ensured, auto-sync restored" in out
        [pr] = _requests(fake).values()
        body = pr["body"]
        # the incident/rationale field carries the break-glass record
        assert "checkout errors: FEATURE\\_X off" in body and "https://status.example.com/inc/77" in body
        assert "Break-glass on Application" in body and "oncall-bob" in body
        assert "directly in cluster **writeback" in body  # the kubeconfig context names the cluster
        assert "kubectl-set" in body and "FEATURE\\_X" in body
        branch = next(line.split()[-1] for line in git("--git-dir", str(bare), "for-each-ref").splitlines()
                      if "writeback/" in line)  # fmt: skip
        patched = git("--git-dir", str(bare), "show", f"{branch}:apps/web.yaml")
        assert 'value: "off"' in patched or "value: off" in patched
        assert "image: registry.example.com/web:1.0.0   # bumped by CI" in patched
        assert fake.violations == []
    finally:
        fake.stop()
    app = get(controlplane, APPS, namespace, "web")
    assert app["spec"]["syncPolicy"]["automated"] == AUTOMATED  # restored exactly
    assert record(app) is None
    code, _, err = run_cli("break-glass", "end", "--argocd-app", f"{namespace}/web", "--no-backport",
                       "--kubeconfig", controlplane.kubeconfig)  # fmt: skip
    assert code == 2 and "not in break-glass" in err


def test_end_with_the_forge_down_keeps_auto_sync_suspended_and_exits_3(
    controlplane: Any, crds: list[str], namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    bare = start_incident(controlplane, namespace, tmp_path)
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    cfg = write_config(tmp_path / "writeback.yaml",
                       target("shop", bare=bare, namespace=namespace, app="web", forge_url=down))  # fmt: skip
    before = record(get(controlplane, APPS, namespace, "web"))
    code, out, err = run_cli("break-glass", "end", "--argocd-app", f"{namespace}/web", "--config", str(cfg),
                         "--kubeconfig", controlplane.kubeconfig)  # fmt: skip
    assert code == 3, out + err
    assert "FAILED" in out and "auto-sync stays suspended" in out
    app = get(controlplane, APPS, namespace, "web")
    assert "automated" not in app["spec"]["syncPolicy"]  # still suspended: the hotfix is not lost
    assert record(app) == before
    assert [c["env"] for c in get(controlplane, "deployment", namespace, "web")["spec"]["template"]["spec"][
        "containers"]] == [[{"name": "FEATURE_X", "value": "off"}]]  # fmt: skip
