"""Regression tests for what issue 12 found (section 1): a pasted token, an empty or unreadable live dump, the
exit code of new and deleted objects, and fake forges whose validation was opt-in."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.forge_server import ForgeViolations
from tests.fakes.github_fake import GitHubFake
from tests.reliability.world import live_object, manifest
from tests.support.cli import run_cli
from tests.support.gitrepos import commit, init_repo, seed_bare
from writeback.cli import main
from writeback.credentials import looks_like_credential

PASTED = ("ghp_R2d2C3po0123456789abcdefghijklmnopqr", "glpat-x8Yz1AbCdEfGhIjKlMnO",
          "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln",
          "Zx9Kq2Lm8Np4Rt7Vw1Yb3Cd6Ef0Gh")  # fmt: skip
AUTH = {"Authorization": "token ghp_test_token"}
NAMES = ("GITHUB_TOKEN", "WB_GH", "WRITEBACK_GITHUB_TOKEN_PRODUCTION_EU", "_private", "TOKEN_2")


def test_credential_shapes() -> None:
    assert [looks_like_credential(p) for p in PASTED] == [True] * len(PASTED)
    assert [looks_like_credential(n) for n in NAMES] == [False] * len(NAMES)


@pytest.mark.parametrize("token", PASTED[:3])
def test_a_token_pasted_into_token_env_is_refused_and_never_printed(
    token: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--once", "--repo-url", str(tmp_path), "--forge", "github", "--forge-project", "a/b",
                 "--token-env", token, "--live", str(tmp_path)])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 2 and "this looks like a token, not a variable name" in err, err
    assert token not in out + err


@pytest.mark.parametrize("value", [*PASTED[:2], "my-token"])
def test_a_token_pasted_into_the_config_is_refused_and_never_printed(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    forge = {"kind": "github", "project": "a/b", "token": {"env": value}}
    path.write_text(json.dumps({"targets": [{"name": "a", "repo_url": str(tmp_path), "forge": forge}]}))
    code = main(["--debug", "config", "validate", str(path)])  # even the traceback of --debug
    out, err = capsys.readouterr()
    assert code == 2 and "targets[0].forge.token.env" in err, err
    says = "this looks like a token" if looks_like_credential(value) else "not an environment variable name"
    assert says in err and value not in out + err, err


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    init_repo(root)
    commit(root, "cm", files={"apps/alpha.yaml": manifest("alpha")})
    return root


def _diff(*args: str) -> tuple[int, str, str]:
    return run_cli("diff", *args)


def test_an_empty_dump_is_an_input_error_unless_expected(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    other = tmp_path / "other.json"  # objects, but none of the namespaces Git uses
    other.write_text(json.dumps(live_object("beta", "v1")))
    for dump, says in ((empty, "holds no object"), (other, "holds 1 object(s), none of the kinds")):
        code, out, err = _diff("--repo", str(repo), "--path", "apps", "--live", str(dump), "--exit-code")
        assert code == 2 and says in err and "--allow-empty-live" in err, err
        assert out == "", "no report before the error"
    code, out, _ = _diff("--repo", str(repo), "--path", "apps", "--live", str(empty), "--allow-empty-live",
                         "--exit-code")  # fmt: skip
    assert code == 1 and "1 deleted" in out, out  # deleted counts for --exit-code
    code, out, _ = _diff("--repo", str(repo), "--path", "apps", "--live", str(empty), "--allow-empty-live")
    assert code == 0


def test_new_objects_count_for_exit_code(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "dump.json"
    extra = live_object("gamma", "v1")
    extra["metadata"]["namespace"] = "ns-alpha"
    extra["metadata"]["managedFields"] = extra["metadata"]["managedFields"][1:]  # only a person: kubectl
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [live_object("alpha", "v1"), extra]}))
    code, out, _ = _diff("--repo", str(repo), "--path", "apps", "--live", str(dump), "--exit-code")
    assert code == 1 and "1 new" in out, out


def test_a_dump_that_cannot_be_read_stops_before_any_report(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "live.yaml"
    bad.write_text("apiVersion: v1\nkind: List\nitems: [\n")
    for output in ("text", "json"):
        code, out, err = _diff("--repo", str(repo), "--path", "apps", "--live", str(bad), "-o", output)
        assert code == 2 and out == "", out  # no false "everything was deleted" report first
        assert f"--live {bad}: the dump cannot be used" in err and "not valid YAML" in err, err


def _post(url: str, body: object) -> int:
    headers = {"Authorization": "token ghp_test_token", "Content-Type": "application/json"}
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_a_fake_forge_fails_its_test_on_a_bad_request_and_on_a_bad_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_bare(tmp_path / "r.git", tmp_path / "seed", {"a.yaml": "a: 1\n"})
    fake = GitHubFake(bare=tmp_path / "r.git").start()
    _post(f"{fake.url}/repos/octo-org/gitops/issues/1/comments", {"body": "x", "colour": "blue"})
    with pytest.raises(ForgeViolations, match="invalid request body"):
        fake.stop()
    fake = GitHubFake(bare=tmp_path / "r.git").start()

    def bad_answer(pr: dict[str, Any], *, simple: bool = False) -> dict[str, Any]:
        return {"number": "not a number"}

    monkeypatch.setattr(fake, "pr_json", bad_answer)
    fake.prs[1] = {"number": 1, "head": "b", "base": "main", "state": "open"}
    get = urllib.request.Request(f"{fake.url}/repos/octo-org/gitops/pulls/1", headers=AUTH)
    urllib.request.urlopen(get, timeout=10)
    with pytest.raises(ForgeViolations, match="breaks the response schema"):
        fake.stop()
