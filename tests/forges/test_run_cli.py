"""``writeback run --once`` end to end: a live dump, a real bare remote, the fake forges, the real planner."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.fakes.forge_server import FakeForge
from tests.forges.conftest import make_fake
from tests.support.cli import run_cli
from tests.support.gitrepos import git, seed_bare
from tests.support.objects import web_manifest

MANIFEST = web_manifest(comment="web frontend", namespace="prod", replicas=2)
APP = 'k:{"name":"app"}'
TOKENS = {"github": "ghp_test_token", "gitlab": "glpat-test-token"}
PROJECTS = {"github": "octo-org/gitops", "gitlab": "platform/gitops"}


def live_dump(tmp_path: Path, image: str) -> Path:
    body: dict[str, Any] = YAML(typ="safe", pure=True).load(MANIFEST)
    body["spec"]["template"]["spec"]["containers"][0]["image"] = image
    body["metadata"]["managedFields"] = [
        {"manager": "argocd-controller", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-11-29T10:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:selector": {}}}},
        {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-11-30T03:00:00Z",
         "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {APP: {"f:image": {}}}}}}}},
    ]  # fmt: skip
    path = tmp_path / f"live-{image.rsplit(':', 1)[1]}.json"
    path.write_text(json.dumps(body))
    return path


def make_bare(tmp_path: Path, name: str) -> Path:
    bare = tmp_path / f"{name}.git"
    seed_bare(bare, tmp_path / f"{name}-seed", {"apps/web.yaml": MANIFEST})
    return bare


def refs(bare: Path) -> str:
    return git("--git-dir", str(bare), "for-each-ref")


@pytest.fixture(params=["github", "gitlab"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def flags(kind: str, bare: Path, fake: FakeForge, live: Path) -> list[str]:
    return [
        "run", "--once", "--repo-url", str(bare), "--forge", kind, "--forge-url", fake.url,
        "--forge-project", PROJECTS[kind], "--token-env", "WB_TEST_TOKEN", "--path", "apps", "--live", str(live),
    ]  # fmt: skip


def test_run_once_creates_then_twice_more_changes_nothing(
    kind: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("WB_TEST_TOKEN", TOKENS[kind])
    bare = make_bare(tmp_path, "repo")
    fake = make_fake(kind, bare)
    try:
        live = live_dump(tmp_path, "registry.example.com/web:1.0.4")
        code, out, err = run_cli(*flags(kind, bare, fake, live))
        assert code == 0, err
        assert " created " in out and "https://" in out
        # the bot branch holds the minimal patch, comments and formatting kept
        [branch] = [line.split()[-1] for line in refs(bare).splitlines() if "writeback/" in line]
        patched = git("--git-dir", str(bare), "show", f"{branch}:apps/web.yaml")
        assert patched == MANIFEST.replace("web:1.0.0   # bumped by CI", "web:1.0.4   # bumped by CI").rstrip("\n")

        before, mark = refs(bare), fake.mark()
        for _ in range(2):
            code, out, err = run_cli(*flags(kind, bare, fake, live), "--workdir", str(tmp_path / "wd"))
            assert code == 0, err
            assert " unchanged " in out
        assert [r for r in fake.since(mark) if r.method != "GET"] == []
        assert refs(bare) == before

        changed = live_dump(tmp_path, "registry.example.com/web:1.0.5")
        code, out, err = run_cli(*flags(kind, bare, fake, changed), "--output", "json")
        assert code == 0, err
        [result] = json.loads(out)["results"]
        assert result["outcome"] == "updated" and result["url"]
        assert fake.violations == []
        assert TOKENS[kind] not in caplog.text + out + err  # never log a token (debug logs included)
        assert any(r.name.startswith(("github", "gitlab", "urllib3")) for r in caplog.records)
    finally:
        fake.stop()


def test_dry_run_pushes_nothing_and_writes_nothing(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WB_TEST_TOKEN", TOKENS[kind])
    bare = make_bare(tmp_path, "repo")
    fake = make_fake(kind, bare)
    try:
        before = refs(bare)
        live = live_dump(tmp_path, "registry.example.com/web:1.0.4")
        code, out, err = run_cli(*flags(kind, bare, fake, live), "--dry-run")
        assert code == 0, err
        assert " created " in out and "dry run" in out
        assert fake.writes() == [] and refs(bare) == before
        assert fake.violations == []
    finally:
        fake.stop()


def _config(tmp_path: Path, targets: list[dict[str, Any]]) -> Path:
    path = tmp_path / "writeback.yaml"
    path.write_text(json.dumps({"targets": targets}))
    return path


def _target(name: str, kind: str, bare: Path, fake: FakeForge) -> dict[str, Any]:
    return {
        "name": name, "repo_url": str(bare), "path": "apps",
        "forge": {"kind": kind, "url": fake.url, "project": PROJECTS[kind], "token": {"env": "WB_TEST_TOKEN"},
                  "max_wait_seconds": 5, "max_retries": 2, "backoff_seconds": 0, "throttle": False},
    }  # fmt: skip


def test_a_rate_limited_or_broken_target_never_blocks_the_others(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WB_TEST_TOKEN", TOKENS[kind])
    limited_bare, ok_bare = make_bare(tmp_path, "limited"), make_bare(tmp_path, "ok")
    limited, ok = make_fake(kind, limited_bare), make_fake(kind, ok_bare)
    try:
        # the first target's forge asks for an hour's wait: past max_wait_seconds, skipped until the next cycle
        limited.inject(429, headers={"Retry-After": "3600"}, times=50)
        broken = {**_target("broken", kind, tmp_path / "missing.git", ok), "path": "apps"}
        cfg = _config(
            tmp_path, [_target("limited", kind, limited_bare, limited), broken, _target("ok", kind, ok_bare, ok)]
        )
        live = live_dump(tmp_path, "registry.example.com/web:1.0.4")

        code, out, _err = run_cli("run", "--once", "--config", str(cfg), "--live", str(live))

        lines = {line.split()[0]: line for line in out.splitlines()}
        assert "skipped" in lines["limited"] and "3600" in lines["limited"]
        assert "failed" in lines["broken"] and "missing.git" in lines["broken"]
        assert " created " in lines["ok"]
        assert code == 2  # the broken target's repository does not exist: bad input, as a missing token
        assert len(limited.requests) == 1  # no retry loop past the maximum wait
        assert [r for r in limited.requests if r.method != "GET"] == []
        assert ok.violations == [] and limited.violations == []
    finally:
        limited.stop()
        ok.stop()


def test_plan_text_shows_the_pull_request_before_the_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_bare(tmp_path, "repo")
    live = live_dump(tmp_path, "registry.example.com/web:1.0.4")
    code, out, err = run_cli("plan", "--live", str(live), "--repo", str(tmp_path / "repo-seed"), "--path", "apps")
    assert code == 0, err
    order = [
        out.index("changeset "),
        out.index("  title:     writeback: "),
        out.index("    <!-- writeback:fingerprint="),
        out.index("spec.<wbr>template.<wbr>spec.<wbr>containers<wbr>\\[name=<wbr>app\\].<wbr>image |"),
        out.index("+          image: registry.example.com/web:1.0.4   # bumped by CI"),
    ]
    assert order == sorted(order)
