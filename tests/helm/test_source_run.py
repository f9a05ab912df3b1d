"""``writeback run`` for a Helm release against the fake GitHub: the person's ``kubectl set image`` on the real
control plane becomes a pull request whose commit edits the values file and whose body carries the re-render's
proof; a second cycle, with no new drift, renders nothing (the process shares its renders) and leaves the PR as
it is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import to_yaml
from tests.fakes.github_fake import GitHubFake
from tests.helm.cluster import PODINFO, apply_as_argocd, apply_object, argocd_application, helm_template, new_repo
from tests.support.cli import run_cli
from tests.support.gitrepos import git
from writeback.adapters import helm as helm_adapter

pytestmark = pytest.mark.controlplane

TOKEN_ENV, TOKEN = "WB_HELM_TOKEN", "ghp_test_token"
VALUES = "# prod\nimage:\n  tag: 6.14.1 # pinned\n"


def test_run_opens_the_pull_request_with_the_values_edit_and_the_proof(
    controlplane: Any,
    namespace: str,
    crds: list[str],
    helm_bin: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(helm_adapter.ENV_VAR, str(helm_bin))
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    work, bare = tmp_path / "platform", tmp_path / "platform.git"
    app = argocd_application("web", namespace=namespace, value_files=["../../envs/prod/values.yaml"])
    sha = new_repo(work, {"envs/prod/values.yaml": VALUES, "apps/web.yaml": to_yaml(app)})
    git("clone", "-q", "--bare", str(work), str(bare))
    text = helm_template(helm_bin, work / PODINFO, release="web", namespace=namespace,
                         values=[work / "envs/prod/values.yaml"])  # fmt: skip
    apply_as_argocd(controlplane, text, namespace=namespace)
    apply_object(controlplane, {**app, "status": {"sync": {"status": "Synced", "revision": sha}}})
    controlplane.kubectl("set", "image", "deployment/web-podinfo", "-n", namespace,
                         "podinfo=ghcr.io/stefanprodan/podinfo:6.15.0")  # fmt: skip
    fake = GitHubFake(bare=bare).start()
    try:
        forge = {"kind": "github", "url": fake.url, "project": "octo-org/gitops", "token": {"env": TOKEN_ENV}}
        target = {"name": "web", "repo_url": str(bare), "argocd_application": f"{namespace}/web", "forge": forge,
                  "source": "helm"}  # fmt: skip
        config = tmp_path / "writeback.yaml"
        config.write_text(json.dumps({"targets": [target]}))
        args = ("run", "--once", "-o", "json", "--config", str(config), "--kubeconfig", controlplane.kubeconfig,
                "--workdir", str(tmp_path / "wd"))  # fmt: skip

        code, out, err = run_cli(*args)

        assert code == 0, err
        (result,) = json.loads(out)["results"]
        assert result["outcome"] == "created", result
        (pr,) = fake.prs.values()
        assert "helm template re-render: changes exactly these 1 field of these 1 object; nothing else" in pr["body"]
        assert "Server-side dry-run" not in pr["body"]
        edited = git("show", f"{pr['head']}:envs/prod/values.yaml", cwd=bare)
        assert edited == VALUES.replace("6.14.1", "6.15.0").rstrip("\n")
        assert git("diff", "--name-only", f"main..{pr['head']}", cwd=bare) == "envs/prod/values.yaml"

        runs = helm_adapter.SHARED.runs
        code, out, err = run_cli(*args)  # the next cycle: the same drift, already proposed

        assert code == 0, err
        assert [r["outcome"] for r in json.loads(out)["results"]] == ["unchanged"]
        assert helm_adapter.SHARED.runs == runs  # every render came from the process's cache
        assert len(fake.prs) == 1
    finally:
        fake.stop()
