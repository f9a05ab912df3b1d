"""The target that `run`/`break-glass` build from flags (no config file) gets a readable, valid name."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from tests.cli.process import ROOT
from tests.support.cli import run_cli
from tests.support.gitrepos import commit, init_repo
from writeback.cli.common import flag_target_name, target_name, targets_from_args


def _args(**kw: object) -> argparse.Namespace:
    base: dict[str, object] = dict(
        config=None, target=None, repo_url="https://github.com/acme/GitOps.git", base=None, forge="github",
        forge_url=None, forge_project=None, token_env="GITHUB_TOKEN", path=None, namespaces=[], revision=None,
        argocd_app=None, source=None, flux_kustomization=None,
    )  # fmt: skip
    base.update(kw)
    return argparse.Namespace(**base)


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({}, "gitops"),
        ({"path": "apps/Prod EU/"}, "prod-eu"),
        ({"path": "."}, "gitops"),
        ({"repo_url": "git@gitlab.example.com:platform/shop-config.git"}, "shop-config"),
        ({"repo_url": "/srv/git/repo.git/"}, "repo"),
        ({"repo_url": "https://example.com/%%%"}, "default"),
    ],
)
def test_flag_target_name(kw: dict[str, object], name: str) -> None:
    assert flag_target_name(_args(**kw)) == name


def test_flag_target_is_a_valid_config_target() -> None:
    cfg, targets = targets_from_args(_args(path="overlays/prod", base="release"))
    assert cfg is None
    (target,) = targets
    assert (target.name, target.base, target.path) == ("prod", "release", "overlays/prod")
    assert target.forge is not None and target.forge.token is not None and target.forge.token.env == "GITHUB_TOKEN"


@pytest.mark.parametrize("name", ["a..b", "web.lock"])
def test_target_names_that_git_refuses_in_branch_names_are_config_errors(name: str) -> None:
    from writeback.config import parse_config
    from writeback.errors import ConfigError

    with pytest.raises(ConfigError, match=r"targets\[0\]\.name: .*git branch name"):
        parse_config({"targets": [{"name": name, "repo_url": "/srv/git/x.git"}]}, source="t.yaml")


@pytest.mark.parametrize(
    ("path", "fallback", "name"),
    [
        (None, "GitOps", "gitops"),
        ("apps/Prod EU/", "x", "prod-eu"),
        ("./apps/shop/.", "x", "shop"),
        (".", "Shop Config", "shop-config"),
        ("..", "repo", "repo"),
        (None, "%%%", "default"),
    ],
)
def test_one_rule_names_a_target_built_from_flags(path: str | None, fallback: str, name: str) -> None:
    assert target_name(path, fallback=fallback) == name


def test_diff_and_plan_name_their_target_by_the_same_rule_as_run(tmp_path: Path) -> None:
    repo = tmp_path / "Shop Config"
    shutil.copytree(ROOT / "examples" / "hotfix" / "gitops", repo / "Apps EU")
    init_repo(repo)
    commit(repo, "manifests")
    live = str(ROOT / "examples" / "hotfix" / "live.yaml")
    for path, name in ((".", "shop-config"), ("Apps EU", "apps-eu")):
        code, out, err = run_cli("plan", "--live", live, "--repo", str(repo), "--path", path, "--output", "json")
        assert code == 0, err
        assert {cs["target"] for cs in json.loads(out)["changesets"]} == {name}
