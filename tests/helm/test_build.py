"""The helm CLI the tests build is the one the image ships, and a build that cannot run says which step failed."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.deploy.test_dockerfile import FINAL, STAGES, _stage_args
from tests.helm.binary import BUILD_SCRIPT, HelmBuildError, build_helm

SCRIPT = BUILD_SCRIPT.read_text()


def _script_value(name: str) -> str:
    found = re.search(rf"^{name}=(\S+)", SCRIPT, re.M)
    assert found, name
    return found.group(1)


def test_the_built_helm_is_the_pinned_version(helm_bin: Path) -> None:
    out = subprocess.run([str(helm_bin), "version", "--short"], capture_output=True, text=True, check=True).stdout
    assert out.startswith(_script_value("HELM_VERSION") + "+") or out.strip() == _script_value("HELM_VERSION")
    assert helm_bin.parent.parent.name == _script_value("HELM_VERSION")  # ~/.cache/writeback/helm/<version>/bin


def test_the_default_kubernetes_version_of_capabilities_is_the_client_gos(helm_bin: Path, tmp_path: Path) -> None:
    chart = tmp_path / "c"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    template = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
    template += "data: {v: {{ .Capabilities.KubeVersion.Version | quote }}}\n"
    (chart / "templates" / "cm.yaml").write_text(template)
    out = subprocess.run([str(helm_bin), "template", str(chart)], capture_output=True, text=True, check=True).stdout
    assert f'v: "v1.{_script_value("K8S_MINOR")}.0"' in out


def test_the_image_builds_the_same_helm_and_puts_it_on_path() -> None:
    builder = next(s for s in STAGES if s.name == "helm")
    args = _stage_args(builder)
    assert args["HELM_VERSION"] == _script_value("HELM_VERSION")
    assert args["HELM_K8S_MINOR"] == _script_value("K8S_MINOR")
    assert any("go install" in v[0] and "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" in v[0] for v in builder.args("RUN"))
    copies = [c for c in FINAL.commands if c.cmd == "COPY" and c.value[-1] == "/usr/local/bin/helm"]
    assert copies and "--from=helm" in copies[0].flags


def test_a_build_without_go_says_which_step_failed_and_how_to_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WRITEBACK_HELM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    if any(os.access(os.path.join(d, "go"), os.X_OK) for d in ("/usr/bin", "/bin")):
        pytest.fail("this test needs a PATH without go; /usr/bin or /bin has one")
    with pytest.raises(HelmBuildError) as e:
        build_helm(timeout=60)
    message = str(e.value)
    assert "helm: FAILED step 'find Go'" in message
    assert "retry with:" in message and "tests/helm/build" in message
