"""Merged first (the default ``resume_after: merged``): ``end`` opens the backport PR and leaves auto-sync
suspended; past its TTL the record stays, says so (status, an Event); ``expire`` resumes only once the PR is
merged AND the controller's source revision contains the merge commit. ``--force`` resumes at once, warning.
The real kube-apiserver, real git, and the fake GitHub/GitLab (which check every request against the schemas)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.breakglass.support import TOKEN_ENV, gitops_sync, make_bare, start_incident
from tests.fakes.github_fake import PROJECT, TOKEN, GitHubFake
from tests.fakes.gitlab_fake import GitLabFake
from tests.support.breakglass_record import events, record
from tests.support.cli import run_cli
from tests.support.controllers import AUTOMATED, flux_applied, flux_kustomization, flux_source, synced_to
from tests.support.gitrepos import commit, git
from tests.support.kube import get

pytestmark = pytest.mark.controlplane
APPS = "applications.argoproj.io"
FORGES = {"github": (GitHubFake, PROJECT, TOKEN), "gitlab": (GitLabFake, "platform/gitops", "glpat-test-token")}


def _flags(namespace: str, bare: Path, forge: str, url: str, project: str, kubeconfig: str) -> tuple[str, ...]:
    return (
        "--argocd-app", f"{namespace}/web", "--repo-url", str(bare), "--forge", forge, "--forge-url", url,
        "--forge-project", project, "--token-env", TOKEN_ENV, "--path", "apps", "--manifest-namespace", namespace,
        "--kubeconfig", kubeconfig,
    )  # fmt: skip


def _suspended(controlplane: Any, namespace: str) -> bool:
    app = get(controlplane, APPS, namespace, "web")
    return "automated" not in app["spec"]["syncPolicy"] and record(app) is not None


@pytest.mark.parametrize("forge", ["github", "gitlab"])
def test_auto_sync_resumes_only_once_the_pr_is_merged_and_the_controller_has_the_merge_commit(
    controlplane: Any, crds: list[str], namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, forge: str,
) -> None:  # fmt: skip
    bare = start_incident(controlplane, namespace, tmp_path, ttl="3s")
    synced = get(controlplane, APPS, namespace, "web")["status"]["sync"]["revision"]
    fake_cls, project, token = FORGES[forge]
    monkeypatch.setenv(TOKEN_ENV, token)
    fake = fake_cls(bare=bare).start()
    flags = _flags(namespace, bare, forge, fake.url, project, controlplane.kubeconfig)
    try:
        code, out, err = run_cli("break-glass", "end", *flags)
        assert code == 0, out + err
        assert " created " in out and "backport ensured; auto-sync stays suspended, waiting for PR #1 to merge" in out
        assert _suspended(controlplane, namespace)  # the controller would apply the old Git and wipe the hotfix
        rec = record(get(controlplane, APPS, namespace, "web"))
        assert rec is not None and [p["number"] for p in rec["ending"]["pulls"]] == [1]
        assert rec["ending"]["by"] == "writeback-test-admin"

        # past its TTL, the PR not merged: still suspended, status says so, one Warning Event however often it runs
        expires = datetime.fromisoformat(rec["expires"].replace("Z", "+00:00"))
        time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds() + 0.2))
        code, out, _ = run_cli("break-glass", "status", "--argocd-app", f"{namespace}/web",
                           "--kubeconfig", controlplane.kubeconfig)  # fmt: skip
        assert code == 0 and "(expired)  expired and waiting for PR #1 to merge" in out
        for _ in range(2):
            code, out, err = run_cli("break-glass", "expire", *flags)
            assert code == 0, out + err
            assert "expired" in out and "auto-sync stays suspended, waiting for PR #1 to merge" in out
        assert _suspended(controlplane, namespace)
        reasons = [(kind, reason) for kind, reason, _ in events(controlplane, namespace, "web")]
        assert reasons == [("Normal", "BreakGlassStarted"), ("Normal", "BreakGlassEnded"),
                           ("Warning", "BreakGlassExpiredWaiting")]  # fmt: skip

        # merged, but the controller still has the old commit: still suspended
        fake.merge(1)
        merged = git("--git-dir", str(bare), "rev-parse", "main")
        code, out, err = run_cli("break-glass", "expire", *flags)
        assert code == 0, out + err
        assert f"PR #1 merged as {merged[:12]}; waiting for Argo CD Application {namespace}/web " in out
        assert f"({synced[:12]}) to contain it" in out and _suspended(controlplane, namespace)

        # the controller resolved a later commit on main, which contains the merge: auto-sync resumes exactly
        seed = tmp_path / "later"
        git("clone", "-q", str(bare), str(seed))
        later = commit(seed, "docs", files={"README.md": "later\n"})
        git("push", "-q", "origin", "HEAD:main", cwd=seed)
        synced_to(controlplane, namespace, "web", later)
        code, out, err = run_cli("break-glass", "expire", *flags)
        assert code == 0, out + err
        assert "contains it: auto-sync restored" in out
        assert fake.violations == []
    finally:
        fake.stop()
    app = get(controlplane, APPS, namespace, "web")
    assert app["spec"]["syncPolicy"]["automated"] == AUTOMATED and record(app) is None
    assert events(controlplane, namespace, "web")[-1][:2] == ("Normal", "BreakGlassEnded")


def test_force_resumes_at_once_and_names_the_risk(
    controlplane: Any, crds: list[str], namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    bare = start_incident(controlplane, namespace, tmp_path)
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    fake = GitHubFake(bare=bare).start()
    try:
        flags = _flags(namespace, bare, "github", fake.url, PROJECT, controlplane.kubeconfig)
        code, out, err = run_cli("break-glass", "end", "--force", *flags)
        assert code == 0, out + err
        assert " created " in out and "backport ensured, auto-sync restored" in out
        assert "--force: auto-sync resumed before PR #1 is merged" in err and "reverts the live fix" in err
        assert [pr["state"] for pr in fake.prs.values()] == ["open"]  # the fix is only proposed, not in Git
        assert fake.violations == []
    finally:
        fake.stop()
    app = get(controlplane, APPS, namespace, "web")
    assert app["spec"]["syncPolicy"]["automated"] == AUTOMATED and record(app) is None


def test_flux_resumes_once_its_gitrepository_artifact_has_the_merge_commit(
    controlplane: Any, crds: list[str], namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Designed for real Flux (issue 11 e): ``spec.suspend`` on the Kustomization, and the commit source-controller
    fetched (``GitRepository.status.artifact.revision``, ``main@sha1:<sha>``) must contain the merge commit."""
    bare, seed = make_bare(tmp_path)
    gitops_sync(controlplane, namespace, seed)
    base = git("rev-parse", "HEAD", cwd=seed)
    flux_source(controlplane, namespace, "gitops", url="http://127.0.0.1/gitops.git", revision=base)
    flux_kustomization(controlplane, namespace, "apps")
    flux_applied(controlplane, namespace, "apps", base)
    kc = ("--kubeconfig", controlplane.kubeconfig)
    code, _, err = run_cli("break-glass", "start", "--flux-kustomization", f"{namespace}/apps", "--reason", "r",
                       "--ttl", "1h", "--actor", "oncall-bob", *kc)  # fmt: skip
    assert code == 0, err
    controlplane.kubectl("set", "env", "-n", namespace, "deployment/web", "FEATURE_X=off")
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    fake = GitHubFake(bare=bare).start()
    flags = (
        "--flux-kustomization", f"{namespace}/apps", "--repo-url", str(bare), "--forge", "github", "--forge-url",
        fake.url, "--forge-project", PROJECT, "--token-env", TOKEN_ENV, "--path", "apps",
        "--manifest-namespace", namespace, *kc,
    )  # fmt: skip
    ks = "kustomizations.kustomize.toolkit.fluxcd.io"
    try:
        code, out, err = run_cli("break-glass", "end", *flags)
        assert code == 0, out + err
        assert "waiting for PR #1 to merge" in out and get(controlplane, ks, namespace, "apps")["spec"]["suspend"]
        # the reviewer merges by pushing the PR's commit to main (the forge then counts the PR as merged)
        merged = git("--git-dir", str(bare), "rev-parse", f"refs/heads/{fake.prs[1]['head']}")
        git("--git-dir", str(bare), "update-ref", "refs/heads/main", merged)
        code, out, err = run_cli("break-glass", "expire", *flags)
        assert code == 0 and f"waiting for Flux GitRepository {namespace}/gitops status.artifact.revision" in out
        assert get(controlplane, ks, namespace, "apps")["spec"]["suspend"] is True
        flux_source(controlplane, namespace, "gitops", url="http://127.0.0.1/gitops.git", revision=merged)
        code, out, err = run_cli("break-glass", "expire", *flags)
        assert code == 0, out + err
        assert "auto-sync restored" in out and fake.violations == []
    finally:
        fake.stop()
    kustomization = get(controlplane, ks, namespace, "apps")
    assert "suspend" not in kustomization["spec"] and record(kustomization) is None  # exactly as before
