"""Opening a forge from config and flags: project derivation, secrets by reference, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

import writeback.cli
from writeback import settings
from writeback.adapters.forges.github import GitHubSettings
from writeback.adapters.forges.github_api import GitHubForge
from writeback.adapters.forges.gitlab import GitLabSettings
from writeback.adapters.forges.gitlab_api import GitLabForge
from writeback.adapters.forges.opening import derive_project, open_forge, read_secret
from writeback.errors import ConfigError


@pytest.mark.parametrize(
    ("url", "project"),
    [
        ("https://github.com/acme/gitops.git", "acme/gitops"),
        ("https://gitlab.example.com/platform/team/gitops", "platform/team/gitops"),
        ("git@github.com:acme/gitops.git", "acme/gitops"),
        ("ssh://git@gitlab.example.com/platform/gitops.git", "platform/gitops"),
        ("/srv/git/gitops.git", None),
        ("https://github.com/only-owner", None),
    ],
)
def test_derive_project(url: str, project: str | None) -> None:
    assert derive_project(url) == project


def test_secrets_by_reference(tmp_path: Path) -> None:
    f = tmp_path / "token"
    f.write_text("glpat-from-file\n")
    assert read_secret(settings.SecretRef(file=str(f)), key="k") == "glpat-from-file"
    assert read_secret(settings.SecretRef(env="TOK"), key="k", environ={"TOK": "abc"}) == "abc"
    with pytest.raises(ConfigError, match=r"targets\[0\]\.forge\.token: the environment variable NOPE is not set"):
        read_secret(settings.SecretRef(env="NOPE"), key="targets[0].forge.token", environ={})
    with pytest.raises(ConfigError, match="cannot read"):
        read_secret(settings.SecretRef(file=str(tmp_path / "missing")), key="k")


def test_open_forge_kinds_and_errors() -> None:
    gh = GitHubSettings(kind="github", token=settings.SecretRef(env="T"))
    assert isinstance(open_forge(gh, repo_url="https://github.com/a/b.git", key="f", environ={"T": "x"}), GitHubForge)
    gl = GitLabSettings(kind="gitlab", url="https://gitlab.example.com", token=settings.SecretRef(env="T"))
    forge = open_forge(gl, repo_url="https://gitlab.example.com/g/p.git", key="f", environ={"T": "x"})
    assert isinstance(forge, GitLabForge) and forge.git_token() == "x"
    with pytest.raises(ConfigError, match=r"f\.project: cannot derive it"):
        open_forge(gh, repo_url="/srv/git/repo", key="f", environ={"T": "x"})
    with pytest.raises(ConfigError, match="GitHub needs token, or app_id"):
        open_forge(GitHubSettings(kind="github"), repo_url="https://github.com/a/b", key="f", environ={})
    with pytest.raises(ConfigError, match="GitLab needs a token"):
        open_forge(GitLabSettings(kind="gitlab"), repo_url="https://gitlab.com/a/b", key="f", environ={})


def test_run_flag_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert writeback.cli.main(["run", "--repo-url", "/x", "--forge", "github"]) == 2
    assert "--once" in capsys.readouterr().err
    assert writeback.cli.main(["run", "--once", "--forge", "github"]) == 2
    assert "--repo-url" in capsys.readouterr().err
    cfg = tmp_path / "c.yaml"
    cfg.write_text("targets: [{name: a, repo_url: /x}]\n")
    assert writeback.cli.main(["run", "--once", "--config", str(cfg), "--base", "dev", "--live", "x"]) == 2
    assert "either --config or the repo and forge flags" in capsys.readouterr().err


def test_run_target_with_a_config_error_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "live.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n")
    code = writeback.cli.main(
        ["run", "--once", "--dry-run", "--live", str(tmp_path / "live.yaml"), "--repo-url", str(tmp_path),
         "--forge", "github", "--token-env", "WB_UNSET_TOKEN"]
    )  # fmt: skip
    assert code == 2  # bad input for the only target: not a run-time failure (3)
    assert "--forge-project: cannot derive it" in capsys.readouterr().out  # a flag-mode target names the flag
