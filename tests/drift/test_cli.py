"""``writeback diff`` flags, config targets, revisions and bad input, offline (no control plane needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import configmap, to_yaml, write
from tests.support.cli import run_cli
from tests.support.gitrepos import commit, git, init_repo

T1, T2 = "2026-03-04T03:12:55Z", "2026-03-01T10:00:00Z"


def live_configmap(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    """A ConfigMap as `kubectl get -o yaml --show-managed-fields` prints it after a person's kubectl edit."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": "0b7c6a52-1111-4f6e-9a55-4a0e7c1d2e3f",
            "resourceVersion": "4242",
            "creationTimestamp": T2,
            "managedFields": [
                {
                    "manager": "argocd-controller",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": T2,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:level": {}}},
                },
                {
                    "manager": "kubectl-edit",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": T1,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:mode": {}}},
                },
            ],
        },
        "data": data,
    }


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Path]:
    repo = tmp_path / "repo"
    init_repo(repo)
    write(repo, "apps/settings.yaml", configmap("settings", {"mode": "strict", "level": "info"}))
    (repo / "apps" / "kustomization.yaml").write_text("namespace: prod\nresources: [settings.yaml]\n")
    commit(repo, "settings")
    dump = tmp_path / "dump.yaml"
    item = live_configmap("settings", "prod", {"mode": "relaxed", "level": "info"})
    listed = {"apiVersion": "v1", "kind": "List", "items": [item]}
    dump.write_text(to_yaml(listed))
    return {"repo": repo, "dump": dump, "tmp": tmp_path}


def diff(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any] | None, str]:
    code, out, err = run_cli("diff", "--output", "json", *args)
    return code, (json.loads(out) if out.strip() else None), err


def test_offline_person_edit_and_exit_code(setup: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, _ = diff(capsys, "--repo", str(setup["repo"]), "--live", str(setup["dump"]))
    assert code == 0 and doc is not None
    (d,) = doc["drifts"]
    assert d["resource"] == {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "prod", "name": "settings"}
    assert (d["path"], d["op"], d["live"], d["git"]) == ("data.mode", "change", "relaxed", "strict")
    assert (d["decision"], d["manager"], d["operation"], d["time"]) == ("writeback", "kubectl-edit", "Update", T1)
    assert doc["mode"] == "offline"
    code, _, _ = diff(capsys, "--repo", str(setup["repo"]), "--live", str(setup["dump"]), "--exit-code")
    assert code == 1


def test_bad_yaml_is_exit_2_naming_file_and_line_but_the_rest_is_compared(
    setup: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    (setup["repo"] / "apps" / "broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n")
    code, doc, err = diff(capsys, "--repo", str(setup["repo"]), "--live", str(setup["dump"]))
    assert code == 2
    assert "writeback: error: apps/broken.yaml:4:9: not valid YAML: " in err  # the [ that was never closed
    assert "while parsing a flow sequence that starts here" in err
    assert doc is not None and [d["path"] for d in doc["drifts"]] == ["data.mode"]
    assert any(p["file"] == "apps/broken.yaml" for p in doc["problems"])


def test_flag_conflicts_and_missing_inputs(setup: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    repo, dump = str(setup["repo"]), str(setup["dump"])
    code, _, err = diff(capsys, "--repo", repo, "--live", dump, "--kubeconfig", "/nope")
    assert code == 2 and "--live" in err
    code, _, err = diff(capsys, "--repo", repo, "--live", dump, "--target", "x")
    assert code == 2 and "--target needs --config" in err
    code, _, err = diff(capsys, "--repo", repo, "--live", str(setup["tmp"] / "missing.yaml"))
    assert code == 2 and "missing.yaml" in err
    code, _, err = diff(capsys, "--repo", repo, "--live", dump, "--revision", "f" * 40)
    assert code == 2 and "f" * 40 in err
    code, _, err = diff(capsys, "--repo", repo, "--live", dump, "--argocd-app", "argocd/web")
    assert code == 2 and "Argo CD Application argocd/web: not found" in err
    code, _, err = diff(capsys, "--repo", repo, "--live", dump, "--argocd-app", "web")
    assert code == 2 and "NAMESPACE/NAME" in err


def test_offline_argocd_application_from_the_dump(setup: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    repo = setup["repo"]
    applied = commit_change(repo, level="info")  # same content as before: the applied revision
    write(repo, "apps/settings.yaml", configmap("settings", {"mode": "strict", "level": "debug"}))
    head = commit(repo, "level debug")
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "settings", "namespace": "argocd"},
        "spec": {"destination": {"namespace": "prod"}},
        "status": {"sync": {"revision": applied}},
    }
    dump = setup["tmp"] / "with-app.yaml"
    dump.write_text(setup["dump"].read_text() + "---\n" + to_yaml(app))
    code, doc, err = diff(capsys, "--repo", str(repo), "--live", str(dump), "--argocd-app", "argocd/settings")
    assert code == 0, err
    assert doc is not None and doc["revision"] == applied != head
    assert [d["path"] for d in doc["drifts"]] == ["data.mode"]  # level: debug is pending sync, not drift
    assert "Argo CD Application argocd/settings" in doc["revisionSource"]


def commit_change(repo: Path, *, level: str) -> str:
    write(repo, "apps/settings.yaml", configmap("settings", {"mode": "strict", "level": level}))
    (repo / "apps" / "marker.txt").write_text("applied\n")
    return commit(repo, "applied revision")


def test_config_target(
    setup: dict[str, Path], capsys: pytest.CaptureFixture[str], kustomize_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WRITEBACK_KUSTOMIZE", str(kustomize_bin))  # path apps holds a kustomization: it is built
    cfg = setup["tmp"] / "writeback.yaml"
    cfg.write_text(
        "targets:\n"
        f"- name: prod\n  repo_url: file://{setup['repo']}\n  path: apps\n"
        "  ignore:\n  - paths: [data.mode]\n    kind: ConfigMap\n    reason: mode is tuned live\n"
        f"- name: other\n  repo_url: https://example.com/x.git\n"
    )
    code, _, err = diff(capsys, "--config", str(cfg), "--live", str(setup["dump"]))
    assert code == 2 and "--target" in err
    code, doc, err = diff(capsys, "--config", str(cfg), "--target", "prod", "--live", str(setup["dump"]))
    assert code == 0, err
    assert doc is not None
    (d,) = doc["drifts"]
    assert (d["path"], d["decision"]) == ("data.mode", "ignore") and "mode is tuned live" in d["reason"]
    code, _, err = diff(capsys, "--config", str(cfg), "--target", "other", "--live", str(setup["dump"]))
    assert code == 2 and "remote" in err and "--repo" in err
    code, _, err = diff(capsys, "--config", str(cfg), "--target", "nope", "--live", str(setup["dump"]))
    assert code == 2 and "no target named 'nope'" in err


def test_text_output_offline(setup: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli("diff", "--repo", str(setup["repo"]), "--live", str(setup["dump"]), "--explain")
    assert code == 0
    assert "mode: offline" in out
    assert "ConfigMap prod/settings" in out
    assert "writeback change data.mode" in out
    assert f"by kubectl-edit (Update) at {T1}" in out
    assert "metadata.uid" in out and "server-populated" in out
    assert "writeback: note: offline mode" in err and "offline mode" not in out  # notes on stderr only


def test_argocd_ignore_differences_are_honoured(setup: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "settings", "namespace": "argocd"},
        "spec": {"ignoreDifferences": [{"kind": "ConfigMap", "name": "settings", "jsonPointers": ["/data/mode"]}]},
        "status": {"sync": {"revision": "main"}},
    }
    dump = setup["tmp"] / "with-app.yaml"
    dump.write_text(setup["dump"].read_text() + "---\n" + to_yaml(app))
    code, doc, err = diff(capsys, "--repo", str(setup["repo"]), "--live", str(dump), "--argocd-app", "argocd/settings")
    assert code == 0, err
    assert doc is not None
    (d,) = doc["drifts"]
    assert (d["path"], d["decision"]) == ("data.mode", "ignore")
    assert "ignoreDifferences" in d["reason"]


def test_flux_spec_ignore_is_honoured_offline(setup: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    ks = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": "flux-system"},
        "spec": {"ignore": [{"paths": ["/data/mode"], "target": {"kind": "ConfigMap", "name": "sett.*"}}]},
        "status": {"lastAppliedRevision": "main@sha1:" + git("rev-parse", "HEAD", cwd=setup["repo"])},
    }
    dump = setup["tmp"] / "with-kustomization.yaml"
    dump.write_text(setup["dump"].read_text() + "---\n" + to_yaml(ks))
    flags = ("--repo", str(setup["repo"]), "--live", str(dump), "--flux-kustomization", "flux-system/apps")
    code, doc, err = diff(capsys, *flags, "--explain")
    assert code == 0, err
    assert doc is not None
    (d,) = doc["drifts"]
    assert (d["path"], d["decision"], d["rule"]) == ("data.mode", "ignore", "flux-ignore")
    assert d["reason"] == "Flux Kustomization flux-system/apps spec.ignore[0] ignores /data/mode"


def test_namespace_flag_names_the_default_namespace(setup: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    (setup["repo"] / "apps" / "kustomization.yaml").unlink()
    commit(setup["repo"], "no kustomization")
    code, doc, err = diff(
        capsys, "--repo", str(setup["repo"]), "--live", str(setup["dump"]), "--namespace", "prod", "-n", "qa"
    )
    assert code == 0, err
    assert doc is not None and [d["resource"]["namespace"] for d in doc["drifts"]] == ["prod"]
    code, doc, _ = diff(capsys, "--repo", str(setup["repo"]), "--live", str(setup["dump"]), "-n", "qa", "-n", "prod")
    # the manifest now means qa/settings, which the dump lacks; prod/settings was applied by Argo CD: not "new"
    assert doc is not None
    assert [(d["resource"]["namespace"], d["decision"]) for d in doc["drifts"]] == [("qa", "deleted")]


def test_config_selectors_limit_both_sides(setup: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    cfg = setup["tmp"] / "writeback.yaml"
    base = f"targets:\n- name: prod\n  repo_url: {setup['repo']}\n  selectors:\n"
    cfg.write_text(base + "  - {apiVersion: apps/v1, kind: Deployment}\n")
    code, doc, err = diff(capsys, "--config", str(cfg), "--live", str(setup["dump"]))
    assert code == 0, err
    assert doc is not None and doc["drifts"] == []  # the ConfigMap is neither snapshotted nor "deleted"
    assert any("outside the selectors" in n for n in doc["notes"])
    cfg.write_text(base + "  - {apiVersion: v1, kind: ConfigMap, namespaces: [prod]}\n")
    code, doc, err = diff(capsys, "--config", str(cfg), "--live", str(setup["dump"]))
    assert doc is not None and [d["path"] for d in doc["drifts"]] == ["data.mode"]
