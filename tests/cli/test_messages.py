"""What the real ``writeback`` process says about bad input: config errors, kubeconfigs, flags, the Git side."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.cli.process import DEMO, ROOT, writeback
from tests.support.gitrepos import git, init_repo

CONFIG = """\
targets:
  - name: prod
    repo_url: /srv/git/gitops.git
    bsae: main
    schedule:
      interval_seconds: five
    forge:
      kind: github
      token: [ghp_SECRET_in_a_list]
      max_retries: many
"""


def test_config_errors_name_file_line_column_key_suggest_and_show_the_bad_value(tmp_path: Path) -> None:
    bad = tmp_path / "prod.yaml"
    bad.write_text(CONFIG)
    broken = tmp_path / "broken.yaml"
    broken.write_text("targets:\n  - name: a\n    repo_url: [x\n")
    good = ROOT / "config" / "writeback.example.yaml"
    result = writeback("config", "validate", str(good), str(bad), str(broken))
    assert result.returncode == 2
    assert result.stdout.startswith(f"{good}: valid\n")  # every file is checked, the valid one summarised
    err = result.stderr
    assert f"writeback: error: {bad}:4:5: targets[0]: unknown key `bsae`; did you mean `base`?\n" in err
    assert f"{bad}:6:7: targets[0].schedule.interval_seconds: Input should be a valid number" in err
    assert '(got "five")' in err and '(got "many")' in err  # a wrong type shows the bad value
    assert f"{bad}:9:7: targets[0].forge.token: " in err and "ghp_SECRET" not in err  # never a secret's
    assert re.search(re.escape(str(broken)) + r":\d+:\d+: not valid YAML: ", err)
    rows = [int(m.group(1)) for m in re.finditer(re.escape(str(bad)) + r":(\d+):", err)]
    assert len(rows) == 4 and rows == sorted(rows)  # in the order of the file
    as_json = json.loads(writeback("config", "validate", str(good), str(bad), "--output", "json").stdout)
    assert as_json["valid"] is False and [f["valid"] for f in as_json["files"]] == [True, False]
    assert any("did you mean `base`" in e["message"] for e in as_json["files"][1]["errors"])


def test_a_kubeconfig_that_is_not_one_says_so(tmp_path: Path) -> None:
    for text, what in [("just a string\n", "it is a string"), ("hello: world\n", "without clusters, contexts")]:
        path = tmp_path / "kubeconfig"
        path.write_text(text)
        result = writeback("diff", "--kubeconfig", str(path), "--repo", ".", "--path", "examples/hotfix/gitops")
        assert result.returncode == 2
        assert result.stderr.startswith(f"writeback: error: --kubeconfig {path}: not a kubeconfig (")
        assert what in result.stderr and "item assignment" not in result.stderr
    result = writeback("diff", "--kubeconfig", "README.md", "--repo", ".", "--path", "examples/hotfix/gitops")
    assert re.match(
        r"writeback: error: --kubeconfig README\.md:\d+:\d+: not a kubeconfig: not valid YAML", result.stderr
    )


def test_flag_mode_errors_name_the_flag(tmp_path: Path) -> None:
    args = ["run", "--once", "--dry-run", *DEMO[:2], "--forge", "github", "--token-env", "WB_NO_SUCH_TOKEN"]
    local = writeback(*args, "--repo-url", str(tmp_path / "gitops.git"))
    assert local.returncode == 2
    assert "--forge-project: cannot derive it from" in local.stdout and "forge.project" not in local.stdout
    creds = writeback(*args, "--repo-url", "https://bot:ghp_SECRET0@github.com/acme/gitops.git")
    assert creds.returncode == 2
    assert "writeback: error: invalid configuration:\n  --repo-url: credentials in the URL are rejected" in creds.stderr
    assert "ghp_SECRET0" not in creds.stderr + creds.stdout
    unset = writeback(*args, "--repo-url", "https://github.com/acme/gitops.git")
    assert "--token-env: the environment variable WB_NO_SUCH_TOKEN is not set" in unset.stdout


def test_offline_argocd_app_says_it_looked_in_the_live_dump() -> None:
    result = writeback("diff", *DEMO, "--argocd-app", "argocd/shop")
    assert result.returncode == 2
    assert "Argo CD Application argocd/shop: not found in the --live dump" in result.stderr
    assert "kubectl get applications.argoproj.io -n argocd shop -o yaml" in result.stderr


def test_a_repo_without_commits_is_called_that(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo)
    (repo / "apps").mkdir()
    (repo / "apps" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n")
    live = ["--live", "-", "--repo", str(repo), "--path", "apps"]
    dump = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n"
    result = writeback("diff", *live, stdin=dump)
    assert result.returncode == 0, result.stderr
    assert f"{repo} is a git repository with no commits: compared with the files as they are" in result.stderr
    assert "not a git repository" not in result.stderr
    at = writeback("diff", *live, "--revision", "main", stdin=dump)
    assert at.returncode == 2 and "a git repository with no commits, cannot compare at revision 'main'" in at.stderr
    git("commit", "--allow-empty", "-qm", "x", cwd=repo)
    assert "no commits" not in writeback("diff", *live, stdin=dump).stderr


def test_a_path_without_manifests_is_a_warning_not_a_silent_no_drift(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "values.yaml").write_text("replicaCount: 3\n")  # YAML, but no Kubernetes object
    result = writeback("diff", *DEMO[:2], "--repo", str(tmp_path), "--path", "docs")
    assert result.returncode == 0
    assert "writeback: warning: 'docs' in " in result.stderr and "holds no Kubernetes manifests" in result.stderr
    assert "holds no Kubernetes manifests" not in result.stdout
