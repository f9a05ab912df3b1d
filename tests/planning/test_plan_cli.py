"""``writeback plan`` offline (--live dump + --repo): the JSON contract, text output, and Kustomize overlays."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.planning.repos import KUSTOMIZE_REPO
from tests.support.cli import run_cli
from tests.support.gitrepos import write_files
from tests.support.objects import web_manifest
from writeback.adapters import kustomize as kustomize_cli

MANIFEST = web_manifest(comment="web frontend", namespace="prod", replicas=2, env={"MODE": "normal"})
APP = 'k:{"name":"app"}'


def _fields(*leaves: str) -> dict[str, Any]:
    """managedFields FieldsV1 for leaves of the app container."""
    return {"f:spec": {"f:template": {"f:spec": {"f:containers": {APP: {f"f:{x}": {} for x in leaves}}}}}}


def _live(*, image: str, privileged: bool, time: str = "2026-11-30T03:00:00Z", manager: str = "kubectl-edit") -> str:
    body: dict[str, Any] = YAML(typ="safe", pure=True).load(MANIFEST)
    container = body["spec"]["template"]["spec"]["containers"][0]
    container["image"] = image
    edited = ["image"]
    if privileged:
        container["securityContext"] = {"privileged": True}
        edited.append("securityContext")
    body["metadata"]["managedFields"] = [
        {
            "manager": "argocd-controller",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": "2026-11-29T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}, "f:selector": {}}},
        },
        {
            "manager": manager,
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": time,
            "fieldsType": "FieldsV1",
            "fieldsV1": _fields(*edited),
        },
    ]
    if privileged:
        sc = body["metadata"]["managedFields"][1]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"][APP]
        sc["f:securityContext"] = {".": {}, "f:privileged": {}}
    return json.dumps(body)


def _plan(*args: str) -> tuple[int, str, str]:
    return run_cli("plan", *args)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write_files(root, {"apps/web.yaml": MANIFEST})
    return root


def _json_plan(repo: Path, live: str, tmp_path: Path) -> dict[str, Any]:
    dump = tmp_path / "live.json"
    dump.write_text(live)
    code, out, err = _plan("--live", str(dump), "--repo", str(repo), "--path", "apps", "--output", "json")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_plan_json_contract_and_security_split(capsys: pytest.CaptureFixture[str], repo: Path, tmp_path: Path) -> None:
    before = (repo / "apps/web.yaml").read_bytes()
    doc = _json_plan(repo, _live(image="registry.example.com/web:1.0.4", privileged=True), tmp_path)
    assert list(doc) == ["apiVersion", "kind", "changesets", "notes", "problems"]  # a writeback/v1 Plan
    standard, security = doc["changesets"]
    for cs in (standard, security):
        assert list(cs) == ["id", "fingerprint", "target", "review", "files", "drifts", "unresolved", "pullRequest"]
        assert cs["pullRequest"]["branch"] == f"writeback/apps/{cs['id']}"
        assert cs["target"] == "apps" and len(cs["fingerprint"]) == 64
    assert (standard["id"], standard["review"], security["id"], security["review"]) == (
        "apps",
        "standard",
        "apps-security",
        "security",
    )
    (file,) = standard["files"]
    assert file["path"] == "apps/web.yaml"
    assert file["diff"].startswith(
        "diff --git a/apps/web.yaml b/apps/web.yaml\n--- a/apps/web.yaml\n+++ b/apps/web.yaml\n"
    )
    minus = [line for line in file["diff"].splitlines() if line.startswith("-") and not line.startswith("---")]
    plus = [line for line in file["diff"].splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert minus == ["-          image: registry.example.com/web:1.0.0   # bumped by CI"]
    assert plus == ["+          image: registry.example.com/web:1.0.4   # bumped by CI"]
    (d,) = standard["drifts"]
    assert d["resource"] == {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "prod", "name": "web"}
    assert (d["path"], d["op"], d["decision"], d["manager"]) == (
        "spec.template.spec.containers[name=app].image",
        "change",
        "writeback",
        "kubectl-edit",
    )
    assert [x["decision"] for x in security["drifts"]] == ["flag"]
    assert "+            privileged: true" in security["files"][0]["diff"]
    assert "privileged" not in file["diff"]
    assert standard["unresolved"] == [] == security["unresolved"]
    assert (repo / "apps/web.yaml").read_bytes() == before  # plan commits and writes nothing


def test_fingerprint_stable_across_time_and_manager_and_id_stable(
    capsys: pytest.CaptureFixture[str], repo: Path, tmp_path: Path
) -> None:
    one = _json_plan(repo, _live(image="registry.example.com/web:1.0.4", privileged=False), tmp_path)["changesets"][0]
    later = _live(
        image="registry.example.com/web:1.0.4", privileged=False, time="2026-12-02T11:00:00Z", manager="kubectl-patch"
    )
    two = _json_plan(repo, later, tmp_path)["changesets"][0]
    other = _json_plan(repo, _live(image="registry.example.com/web:1.0.5", privileged=False), tmp_path)["changesets"][0]
    assert one["fingerprint"] == two["fingerprint"] != other["fingerprint"]
    assert one["id"] == two["id"] == other["id"] == "apps"
    assert two["drifts"][0]["manager"] == "kubectl-patch"


def test_plan_text_output_and_exit_code(capsys: pytest.CaptureFixture[str], repo: Path, tmp_path: Path) -> None:
    dump = tmp_path / "live.json"
    dump.write_text(_live(image="registry.example.com/web:1.0.4", privileged=False))
    code, out, _ = _plan("--live", str(dump), "--repo", str(repo), "--path", "apps", "--exit-code")
    assert code == 1
    assert out.startswith("changeset apps  (target apps, review: standard, fingerprint ")
    assert "+          image: registry.example.com/web:1.0.4   # bumped by CI\n" in out
    dump.write_text(json.dumps(YAML(typ="safe", pure=True).load(MANIFEST)))
    code, out, _ = _plan("--live", str(dump), "--repo", str(repo), "--path", "apps", "--exit-code")
    assert code == 0 and out.startswith("no change sets")


def test_plan_kustomize_overlay_offline(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kustomize_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(kustomize_cli.ENV_VAR, str(kustomize_bin))
    repo = tmp_path / "repo"
    write_files(repo, KUSTOMIZE_REPO)
    rendered = list(YAML(typ="safe", pure=True).load_all(kustomize_cli.build(repo / "overlays/prod")))
    live = copy.deepcopy(rendered)
    deploy = next(o for o in live if o["kind"] == "Deployment")
    deploy["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/web:1.0.9"
    deploy["metadata"]["managedFields"] = [
        {
            "manager": "kubectl-edit",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "2026-11-30T03:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": _fields("image"),
        }
    ]
    dump = tmp_path / "live.yaml"
    dump.write_text("\n---\n".join(json.dumps(o) for o in live))
    code, out, err = _plan("--live", str(dump), "--repo", str(repo), "--path", "overlays/prod", "-o", "json")
    assert code == 0, err
    (cs,) = json.loads(out)["changesets"]
    assert [f["path"] for f in cs["files"]] == ["overlays/prod/kustomization.yaml"]
    assert (
        '-    newTag: "1.0.3"  # pinned by the release train\n+    newTag: "1.0.9"  # pinned by the release train\n'
        in (cs["files"][0]["diff"])
    )


def test_plan_with_a_config_file(
    capsys: pytest.CaptureFixture[str], repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = tmp_path / "live.json"
    dump.write_text(_live(image="registry.example.com/web:1.0.4", privileged=False))
    config = tmp_path / "writeback.yaml"
    config.write_text(
        "targets:\n"
        "  - name: shop-prod\n"
        f"    repo_url: {repo}\n"
        "    path: apps\n"
        "    source: plain\n"
        "    pull_request:\n"
        "      fingerprint_key: {env: WB_TEST_FP_KEY}\n"
    )
    code, _, err = _plan("--config", str(config), "--live", str(dump), "-o", "json")
    assert code == 2 and "WB_TEST_FP_KEY is not set" in err
    monkeypatch.setenv("WB_TEST_FP_KEY", "k")
    code, out, err = _plan("--config", str(config), "--live", str(dump), "-o", "json")
    assert code == 0, err
    (cs,) = json.loads(out)["changesets"]
    assert (cs["id"], cs["target"]) == ("shop-prod", "shop-prod")
    assert [f["path"] for f in cs["files"]] == ["apps/web.yaml"]
