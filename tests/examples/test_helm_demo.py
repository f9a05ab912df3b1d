"""The README's first Helm example: the offline demo of examples/helm (a small chart, prod's values and the Argo CD
Application; a live dump captured from the real control plane) plans the values edit a reviewer would write.

Also checks that the README runs that command, and that examples/helm/capture.py regenerates an equivalent dump.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from writeback.adapters import helm as helm_adapter

ROOT = Path(__file__).resolve().parents[2]
FLAGS = ["--repo", ".", "--path", "examples/helm/gitops", "--argocd-app", "argocd/web"]
DEMO = ["--live", "examples/helm/live.yaml", *FLAGS]
C = "spec.template.spec.containers[name=web]"
PERSON = {
    "spec.replicas": 5,
    f"{C}.image": "ghcr.io/stefanprodan/podinfo:6.15.0",
    f"{C}.env[name=LOG_LEVEL]": {"name": "LOG_LEVEL", "value": "debug"},
    "spec.template.spec.terminationGracePeriodSeconds": 60,
}
VALUES = "examples/helm/gitops/envs/prod/values.yaml"


@pytest.fixture(autouse=True)
def _helm(helm_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(helm_adapter.ENV_VAR, str(helm_bin))
    monkeypatch.chdir(ROOT)
    yield


def _plan(*args: str) -> dict[str, Any]:
    code, out, err = run_cli("plan", *args, "--output", "json")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_readme_runs_the_helm_demo() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"```sh\n([^\n]*writeback plan --live examples/helm/live\.yaml[^\n]*)\n```", readme)
    assert found is not None, "the README's Helm part must run `writeback plan` on examples/helm"
    assert found.group(1).endswith(" ".join(DEMO))
    assert readme.index("examples/helm/live.yaml") > readme.index("## Where edits land")


def test_the_demo_plans_the_values_edit_proven_by_a_re_render() -> None:
    doc = _plan(*DEMO)

    (cs,) = doc["changesets"]
    assert doc["problems"] == []
    assert {d["path"]: d["live"] for d in cs["drifts"]} == PERSON
    (u,) = cs["unresolved"]
    assert (u["path"], u["reason"]) == (
        "spec.template.spec.terminationGracePeriodSeconds",
        "set by web/templates/deployment.yaml; no value controls it",
    )
    (f,) = cs["files"]
    assert f["path"] == VALUES
    lines = [ln for ln in f["diff"].splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert lines == [
        "-replicaCount: 3 # the nightly batch needs three",
        "+replicaCount: 5 # the nightly batch needs three",
        '-  tag: "6.14.1" # pinned: bump with the release train',
        '+  tag: "6.15.0" # pinned: bump with the release train',
        "+env:",
        "+  - name: LOG_LEVEL",
        "+    value: debug",
    ]
    body = cs["pullRequest"]["body"]
    assert (
        "**Verification:** helm template re-render: changes exactly these 3 fields of these 1 object; nothing else"
        in body
    )


@pytest.mark.controlplane
def test_capture_script_regenerates_an_equivalent_dump(tmp_path: Path) -> None:
    dump = tmp_path / "live.yaml"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples/helm/capture.py"), "--output", str(dump)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = _plan("--live", str(dump), *FLAGS)
    (cs,) = doc["changesets"]
    assert {d["path"]: d["live"] for d in cs["drifts"]} == PERSON
    assert [f["path"] for f in cs["files"]] == [VALUES]
