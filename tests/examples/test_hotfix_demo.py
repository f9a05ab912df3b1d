"""The README's first command: the offline demo of the 3 AM hotfix shows exactly the person's changes.

Also checks that the README still runs that command, and that examples/hotfix/capture.py regenerates an
equivalent dump from the real control plane.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
DEMO = ["--live", "examples/hotfix/live.yaml", "--repo", ".", "--path", "examples/hotfix/gitops"]
PERSON = {
    ("ConfigMap", 'data["ca.crt"]', "change"),
    ("Deployment", "spec.template.spec.containers[name=app].env[name=PAYMENT_TIMEOUT_MS]", "add"),
}
NOT_WRITTEN = {
    "spec.replicas": "kube-controller-manager",
    "spec.template.spec.containers[name=istio-proxy]": "webhook",
    "spec.template.spec.initContainers[name=istio-init]": "webhook",
    'spec.template.metadata.annotations["sidecar.istio.io/status"]': "webhook",
}


def _run(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    monkeypatch.chdir(ROOT)
    code, out, _ = run_cli(*args)
    return code, out


def _decisions(out: dict[str, Any]) -> tuple[set[tuple[str, str, str]], dict[str, str]]:
    person = {(d["resource"]["kind"], d["path"], d["op"]) for d in out["drifts"] if d["decision"] == "writeback"}
    ignored = {d["path"]: d["reason"] for d in out["drifts"] if d["decision"] == "ignore"}
    return person, ignored


def test_readme_runs_the_demo() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"```sh\n(python3 -m venv .*writeback plan [^\n]*)\n```", readme)
    assert first is not None, "the README's first command must run `writeback plan` on the demo"
    assert " ".join(DEMO) in first.group(1)


def test_plan_shows_exactly_the_persons_changes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, text = _run(monkeypatch, "plan", *DEMO, "--output", "json")
    assert code == 0
    (cs,) = json.loads(text)["changesets"]
    assert cs["review"] == "standard" and cs["unresolved"] == []
    assert {(d["resource"]["kind"], d["path"], d["op"]) for d in cs["drifts"]} == PERSON
    assert sorted(f["path"] for f in cs["files"]) == [
        "examples/hotfix/gitops/apps/checkout/configmap.yaml",
        "examples/hotfix/gitops/apps/checkout/deployment.yaml",
    ]
    lines = [ln for f in cs["files"] for ln in f["diff"].splitlines() if not ln.startswith(("+++", "---"))]
    added = [ln for ln in lines if ln.startswith("+")]
    removed = [ln for ln in lines if ln.startswith("-")]
    assert removed == []  # the hotfix only adds: the new CA appended to the bundle, the env var
    assert '+              value: "5000"' in added and "+            - name: PAYMENT_TIMEOUT_MS" in added
    assert sum("-----BEGIN CERTIFICATE-----" in ln for ln in added) == 1  # one new CA, the old one untouched

    code, text = _run(monkeypatch, "plan", *DEMO)
    assert code == 0
    assert "  title:     writeback(" in text and "offline dump live.yaml" in text
    assert "owned by kube-controller-manager (scale subresource)" in text
    assert "injected by a mutating webhook (istio preset)" in text


def test_diff_decides_the_hpa_and_the_sidecar_are_not_the_persons(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, text = _run(monkeypatch, "diff", *DEMO, "--output", "json", "--exit-code")
    assert code == 1  # writeback drift exists
    out = json.loads(text)
    assert out["mode"] == "offline"
    person, ignored = _decisions(out)
    assert person == PERSON
    for path, why in NOT_WRITTEN.items():
        assert why in ignored[path]


@pytest.mark.controlplane
def test_capture_script_regenerates_an_equivalent_dump(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = tmp_path / "live.yaml"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples/hotfix/capture.py"), "--output", str(dump)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    args = ["--live", str(dump), "--repo", ".", "--path", "examples/hotfix/gitops", "--output", "json"]
    code, text = _run(monkeypatch, "diff", *args)
    assert code == 0
    person, ignored = _decisions(json.loads(text))
    assert person == PERSON
    for path, why in NOT_WRITTEN.items():
        assert why in ignored[path]
