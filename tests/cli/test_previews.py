"""``plan`` shows the pull request ``run`` opens, all of it; ``run --exit-code``; the PR title and quoted values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tests.cli.process import ROOT, environment, writeback
from tests.fakes.github_fake import TOKEN, GitHubFake
from tests.support.gitrepos import seed_bare

DEMO = ROOT / "examples" / "hotfix"


def _deployment_only() -> str:
    """The demo's live Deployment alone: the person's env var, the HPA's replicas and the injected sidecar."""
    yaml = YAML(typ="safe", pure=True)
    dump: dict[str, Any] = yaml.load((DEMO / "live.yaml").read_text(encoding="utf-8"))
    (deployment,) = [i for i in dump["items"] if i["kind"] == "Deployment"]
    return json.dumps(deployment)


def _config(tmp_path: Path, bare: Path, forge_url: str) -> Path:
    config = tmp_path / "writeback.yaml"
    config.write_text(
        f"""\
targets:
  - name: shop
    repo_url: {bare}
    path: apps
    forge: {{kind: github, url: "{forge_url}", project: octo-org/gitops, token: {{env: WB_TEST_TOKEN}}}}
    pull_request:
      labels: [writeback, team-shop]
      reviewers: [alice]
      assignees: [bob, carol]
      draft: true
      branch_template: "bot/{{target}}/{{changeset}}"
"""
    )
    return config


def test_plan_previews_the_pull_request_run_opens_and_run_exit_code(tmp_path: Path) -> None:
    bare, seed = tmp_path / "gitops.git", tmp_path / "seed"
    manifest = (DEMO / "gitops" / "apps" / "checkout" / "deployment.yaml").read_text(encoding="utf-8")
    seed_bare(bare, seed, {"apps/deployment.yaml": manifest})
    fake = GitHubFake(bare=bare).start()
    try:
        config = _config(tmp_path, bare, fake.url)
        live = _deployment_only()
        plan_args = ["plan", "--config", str(config), "--repo", str(seed), "--live", "-"]
        text = writeback(*plan_args, stdin=live)
        assert text.returncode == 0, text.stderr
        title = "writeback: shop/checkout env PAYMENT_TIMEOUT_MS added live"  # one change: resource and field
        for row in ("  branch:    bot/shop/shop -> main", f"  title:     {title}", "  labels:    writeback, team-shop",
                    "  reviewers: alice", "  assignees: bob, carol", "  draft:     yes"):  # fmt: skip
            assert f"\n{row}\n" in text.stdout, row
        doc = json.loads(writeback(*plan_args, "--output", "json", stdin=live).stdout)
        (cs,) = doc["changesets"]
        pr = cs["pullRequest"]
        assert (pr["branch"], pr["base"], pr["title"], pr["draft"]) == ("bot/shop/shop", "main", title, True)
        assert (pr["labels"], pr["reviewers"], pr["assignees"]) == (
            ["writeback", "team-shop"],
            ["alice"],
            ["bob", "carol"],
        )
        assert any("offline mode" in n for n in doc["notes"]) and doc["problems"] == []
        body_in_text = text.stdout.split("  body:\n", 1)[1].split("\ndiff --git ", 1)[0]
        assert [line.removeprefix("    ") for line in body_in_text.strip("\n").splitlines()] == [
            line.rstrip() for line in pr["body"].strip("\n").splitlines()
        ]  # the whole body

        env = environment(WB_TEST_TOKEN=TOKEN)
        run_args = ["run", "--once", "--config", str(config), "--live", "-", "--workdir", str(tmp_path / "wd")]
        first = writeback(*run_args, "--exit-code", stdin=live, env=env)
        assert first.returncode == 1, first.stderr  # a pull request was opened
        assert " created " in first.stdout
        (opened,) = fake.prs.values()
        assert (opened["head"], opened["title"], opened["body"], opened["draft"]) == (
            pr["branch"],
            pr["title"],
            pr["body"],
            True,
        )  # the preview is what run opened
        assert (opened["labels"], opened["reviewers"], opened["assignees"]) == (
            pr["labels"],
            pr["reviewers"],
            pr["assignees"],
        )
        again = writeback(*run_args, "--exit-code", stdin=live, env=env)
        assert again.returncode == 0 and " unchanged " in again.stdout  # nothing opened or updated
        assert fake.violations == []
    finally:
        fake.stop()


def test_a_string_that_reads_as_another_type_is_quoted_in_the_pr_body(tmp_path: Path) -> None:
    bare, seed = tmp_path / "gitops.git", tmp_path / "seed"
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flags, namespace: shop}\ndata: {checkout: 'false'}\n"
    seed_bare(bare, seed, {"apps/flags.yaml": manifest})
    live = {
        "apiVersion": "v1", "kind": "ConfigMap", "data": {"checkout": "true"},
        "metadata": {"name": "flags", "namespace": "shop", "managedFields": [
            {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1", "time": "2026-11-30T03:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:checkout": {}}}}]},
    }  # fmt: skip
    result = writeback("plan", "--live", "-", "--repo", str(seed), "--path", "apps", stdin=json.dumps(live))
    assert result.returncode == 0, result.stderr
    assert "  title:     writeback: shop/flags data checkout changed live\n" in result.stdout
    assert '| data.<wbr>checkout | <code>"false"</code> | <code>"true"</code> |' in result.stdout
