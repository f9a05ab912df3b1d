"""Kustomize targets: live is compared with the real ``kustomize build`` of the overlay at the applied revision.

Offline (``kubectl get -o yaml --show-managed-fields``-style dumps) against real git repos and the real kustomize.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.drift.kustomize_repo import APP, IMAGE, KUSTOMIZATION, OVERLAY, bump_image, make_repo, overlay, rendered
from tests.drift.support import by_path, diff_json, drifts_of, to_yaml
from tests.support.cli import run_cli
from tests.support.gitrepos import commit
from writeback.adapters import kustomize as kustomize_cli
from writeback.pipeline.detecting import detect, resolve_source
from writeback.pipeline.targets import Edges, TargetSpec

APPLIED, EDITED = "2026-11-01T10:00:00Z", "2026-11-30T03:00:00Z"
MODE = f"{APP}.env[name=MODE].value"
MODE_FIELDS = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"app"}', "f:env", 'k:{"name":"MODE"}')
IMAGE_FIELDS = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"app"}', "f:image")


def _fields_v1(obj: Mapping[str, Any]) -> dict[str, Any]:
    """FieldsV1 of everything in ``obj`` (lists of named items keyed by name, as the API server does)."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if isinstance(v, Mapping):
            out[f"f:{k}"] = {".": {}, **_fields_v1(v)}
        elif isinstance(v, list) and v and all(isinstance(i, Mapping) and "name" in i for i in v):
            out[f"f:{k}"] = {f'k:{{"name":"{i["name"]}"}}': {".": {}, **_fields_v1(i)} for i in v}
        else:
            out[f"f:{k}"] = {}
    return out


def _nested(keys: Sequence[str]) -> dict[str, Any]:
    leaf: dict[str, Any] = {}
    for key in reversed(keys):
        leaf = {key: leaf}
    return leaf


def _drop(fields: dict[str, Any], keys: Sequence[str]) -> None:
    node = fields
    for key in keys[:-1]:
        node = node[key]
    node.pop(keys[-1], None)


def _set(body: dict[str, Any], path: Sequence[Any], value: Any) -> None:
    node: Any = body
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def live_from(objects: Sequence[Mapping[str, Any]], *, edits: Sequence[tuple[str, str, Any]] = ()) -> list[Any]:
    """Rendered objects as the controller applied them (argocd-controller), then a person's kubectl edits.

    ``edits``: (kind, field path as FieldsV1 keys ending in the leaf, value); only Deployments are edited here.
    """
    out = []
    for i, obj in enumerate(objects):
        body = copy.deepcopy(dict(obj))
        owned = {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
        owned["metadata"] = {k: v for k, v in body["metadata"].items() if k not in ("name", "namespace")}
        applied = _fields_v1(owned)
        managed: list[dict[str, Any]] = [
            {"manager": "argocd-controller", "operation": "Update", "apiVersion": body["apiVersion"],
             "time": APPLIED, "fieldsType": "FieldsV1", "fieldsV1": applied},
        ]  # fmt: skip
        for kind, keys, value in edits:
            if body["kind"] != kind:
                continue
            fields: tuple[str, ...]
            if keys == "mode":
                body["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = value
                fields = (*MODE_FIELDS, "f:value")
            elif keys == "image":
                _set(body, ("spec", "template", "spec", "containers", 0, "image"), value)
                fields = IMAGE_FIELDS
            else:
                _set(body, ("spec", "replicas"), value)
                fields = ("f:spec", "f:replicas")
            _drop(applied, fields)
            managed.append({"manager": "kubectl-edit", "operation": "Update", "apiVersion": body["apiVersion"],
                            "time": EDITED, "fieldsType": "FieldsV1", "fieldsV1": _nested(fields)})  # fmt: skip
        body["metadata"].update(
            uid=f"00000000-0000-4000-8000-00000000000{i}", resourceVersion=str(100 + i), creationTimestamp=APPLIED,
            managedFields=managed,
        )  # fmt: skip
        out.append(body)
    return out


def argocd_app(revision: str) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web", "namespace": "argocd"},
        "spec": {"source": {"path": OVERLAY}, "destination": {"namespace": "prod"}},
        "status": {"sync": {"status": "OutOfSync", "revision": revision}},
    }


def dump(tmp: Path, objects: Sequence[Mapping[str, Any]]) -> Path:
    path = tmp / "live.yaml"
    path.write_text(to_yaml(*objects))
    return path


@pytest.fixture
def kustomize_env(kustomize_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv(kustomize_cli.ENV_VAR, str(kustomize_bin))
    yield kustomize_bin


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return tmp_path / "gitops"


def _diff(capsys: pytest.CaptureFixture[str], repo: Path, live: Path, *args: str) -> dict[str, Any]:
    _, doc = diff_json("--repo", str(repo), "--path", OVERLAY, "--live", str(live), *args)
    return doc


def test_person_change_is_writeback_on_the_rendered_resource(
    repo: Path, tmp_path: Path, kustomize_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v1 = make_repo(repo, namespace="prod")
    live = dump(tmp_path, live_from(rendered(repo, kustomize_env), edits=[("Deployment", "mode", "safe")]))

    doc = _diff(capsys, repo, live)  # the source is auto-detected: overlays/prod holds a kustomization.yaml

    assert doc["revision"] == v1
    (d,) = doc["drifts"]
    assert d["resource"] == {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "prod", "name": "prod-web"}
    assert (d["path"], d["op"], d["live"], d["git"]) == (MODE, "change", "safe", "normal")
    assert (d["decision"], d["manager"], d["time"]) == ("writeback", "kubectl-edit", EDITED)
    assert doc["problems"] == []

    found = detect(spec=TargetSpec(name="shop", path=OVERLAY), repo=repo, edges=Edges(live_path=live))
    assert found.source.name == "kustomize"
    assert {(o.ref.kind, o.ref.namespace, o.ref.name) for o in found.desired} == {
        ("Deployment", "prod", "prod-web"),
        ("ConfigMap", "prod", "prod-settings"),
    }
    assert {o.file for o in found.desired} == {KUSTOMIZATION}


def test_fields_set_by_the_overlay_match_live_and_are_compared_with_rendered_values(
    repo: Path, tmp_path: Path, kustomize_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_repo(repo, namespace="prod")
    objects = rendered(repo, kustomize_env)
    # image (images:), replicas (replicas:), memory (a patch), namespace and prefix all as the overlay renders them
    assert _diff(capsys, repo, dump(tmp_path, live_from(objects)))["drifts"] == []

    edits = [("Deployment", "image", f"{IMAGE}:1.0.9"), ("Deployment", "replicas", 5)]
    doc = _diff(capsys, repo, dump(tmp_path, live_from(objects, edits=edits)))
    web = by_path(drifts_of(doc, kind="Deployment", name="prod-web"))
    assert set(web) == {f"{APP}.image", "spec.replicas"}
    # Git's side is the rendered value (the overlay's), not the base's 1.0.0 and 1 replica
    assert (web[f"{APP}.image"]["git"], web[f"{APP}.image"]["live"]) == (f"{IMAGE}:1.0.3", f"{IMAGE}:1.0.9")
    assert (web["spec.replicas"]["git"], web["spec.replicas"]["live"]) == (3, 5)
    assert {d["decision"] for d in web.values()} == {"writeback"}


def _plan(capsys: pytest.CaptureFixture[str], repo: Path, live: Path, *args: str) -> dict[str, Any]:
    code, out, err = run_cli("plan", "--repo", str(repo), "--path", OVERLAY, "--live", str(live), "-o", "json", *args)
    assert code == 0, err
    return dict(json.loads(out))


@pytest.mark.parametrize("how", ["--revision", "--argocd-app"])
def test_git_ahead_image_bump_is_pending_and_plan_does_not_revert_it(
    how: str, repo: Path, tmp_path: Path, kustomize_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v1 = make_repo(repo, namespace="prod")
    objects = rendered(repo, kustomize_env)  # what the controller applied
    v2 = bump_image(repo, namespace="prod", tag="1.0.4")  # committed, not synced yet
    live_objs = live_from(objects, edits=[("Deployment", "mode", "safe")])
    args: tuple[str, ...] = ("--revision", v1[:12])
    if how == "--argocd-app":
        live_objs.append(argocd_app(v1))
        args = ("--argocd-app", "argocd/web")
    live = dump(tmp_path, live_objs)

    doc = _diff(capsys, repo, live, *args)
    assert doc["revision"] == v1 != v2
    assert any("ahead" in n for n in doc["notes"]), doc["notes"]
    web = by_path(drifts_of(doc, kind="Deployment", name="prod-web"))
    assert set(web) == {MODE}  # live runs v1's image: no drift, nothing to revert
    assert web[MODE]["decision"] == "writeback"

    # a person also moves the image while v2 waits for its sync: the head changed that field, so it is pending
    live_objs = live_from(objects, edits=[("Deployment", "mode", "safe"), ("Deployment", "image", f"{IMAGE}:1.0.5")])
    if how == "--argocd-app":
        live_objs.append(argocd_app(v1))
    live = dump(tmp_path, live_objs)
    web = by_path(drifts_of(_diff(capsys, repo, live, *args), kind="Deployment", name="prod-web"))
    assert (web[f"{APP}.image"]["decision"], web[f"{APP}.image"]["git"]) == ("pending", f"{IMAGE}:1.0.3")
    assert web[MODE]["decision"] == "writeback"

    plan = _plan(capsys, repo, live, *args)
    (cs,) = plan["changesets"]
    assert {(d["path"], d["decision"]) for d in cs["drifts"]} == {(MODE, "writeback")}
    text = "".join(f["diff"] for f in cs["files"])
    assert "value: safe" in text
    assert "newTag" not in text and "1.0.3" not in text and "1.0.5" not in text  # the bump is not reverted
    assert all(f["path"].startswith(f"{OVERLAY}/") for f in cs["files"])  # the shared base is left alone
    assert '"1.0.4"' in (repo / KUSTOMIZATION).read_text()  # and nothing was written


def test_head_that_does_not_build_makes_everything_pending(
    repo: Path, tmp_path: Path, kustomize_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v1 = make_repo(repo, namespace="prod")
    live = dump(tmp_path, live_from(rendered(repo, kustomize_env), edits=[("Deployment", "mode", "safe")]))
    (repo / KUSTOMIZATION).write_text(overlay(namespace="prod", tag="1.0.4") + "  - path: missing-patch.yaml\n")
    doc = _diff(capsys, repo, live, "--revision", v1)
    (d,) = doc["drifts"]
    assert (d["path"], d["decision"]) == (MODE, "pending")  # never a writeback that could revert the head
    assert any("at the head failed" in n and "missing-patch.yaml" in n for n in doc["notes"]), doc["notes"]


def test_overlay_missing_at_the_applied_revision_is_a_problem(
    repo: Path, tmp_path: Path, kustomize_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_repo(repo, namespace="prod")
    live = dump(tmp_path, live_from(rendered(repo, kustomize_env)))
    kfile = repo / KUSTOMIZATION
    text = kfile.read_text()
    kfile.unlink()
    v0 = commit(repo, "no prod overlay yet")
    kfile.write_text(text)
    commit(repo, "prod overlay")
    code, _, err = run_cli("diff", "--repo", str(repo), "--path", OVERLAY, "--live", str(live),
                           "--revision", v0)  # fmt: skip
    assert code == 2
    assert f"{OVERLAY}: no kustomization" in err and f"at the compared revision {v0[:12]}" in err


def test_missing_kustomize_is_a_clear_input_error(
    repo: Path, tmp_path: Path, kustomize_bin: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make_repo(repo, namespace="prod")
    live = dump(tmp_path, live_from(rendered(repo, kustomize_bin)))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = next(Path(p) / "git" for p in os.environ["PATH"].split(os.pathsep) if (Path(p) / "git").is_file())
    (bin_dir / "git").symlink_to(git)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv(kustomize_cli.ENV_VAR, raising=False)
    for command in ("diff", "plan"):
        code, _, err = run_cli(command, "--repo", str(repo), "--path", OVERLAY, "--live", str(live))
        assert code == 2, (command, err)
        assert "neither kustomize nor kubectl is on PATH" in err and "WRITEBACK_KUSTOMIZE" in err
        assert "Traceback" not in err
    # told to read the files as plain manifests, it needs no kustomize
    code, _, err = run_cli("diff", "--repo", str(repo), "--path", OVERLAY, "--live", str(live),
                           "--source", "plain")  # fmt: skip
    assert code == 0 and "neither kustomize nor kubectl is on PATH" not in err, err


@pytest.mark.parametrize("name", ["kustomization.yaml", "kustomization.yml", "Kustomization"])
def test_source_is_detected_from_the_kustomization_file(name: str, tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "web.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n")
    assert resolve_source(repo=tmp_path, path="app").name == "plain"
    (tmp_path / "app" / name).write_text("resources: [web.yaml]\n")
    assert resolve_source(repo=tmp_path, path="app").name == "kustomize"
    assert resolve_source(repo=tmp_path, path=".").name == "plain"  # only --path itself counts
    assert resolve_source(repo=tmp_path, path="app", source="plain").name == "plain"  # an explicit source wins
