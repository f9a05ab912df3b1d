"""deploy/monitoring/ rendered by the real kustomize: it fits the base, and the base stays free of the CRD kinds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.support import DEPLOY, documents, find, render

MONITORING = DEPLOY / "monitoring"


@pytest.fixture(scope="module")
def rendered(kustomize_bin: Path) -> list[dict[str, Any]]:
    done = subprocess.run([str(kustomize_bin), "build", str(MONITORING)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"kustomize build {MONITORING} failed:\n{done.stderr}"
    return documents(done.stdout)


@pytest.fixture(scope="module")
def base(kustomize_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return documents(render(kustomize=kustomize_bin, workdir=tmp_path_factory.mktemp("deploy")))


def test_the_base_needs_no_prometheus_operator_crds(base: list[dict[str, Any]]) -> None:
    assert base and not [d for d in base if d["apiVersion"].startswith("monitoring.coreos.com/")]


def test_the_service_monitor_scrapes_the_base_metrics_port(
    rendered: list[dict[str, Any]], base: list[dict[str, Any]]
) -> None:
    (service,) = find(base, "Service")
    (monitor,) = find(rendered, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"]  # no namespaceSelector needed
    wanted = monitor["spec"]["selector"]["matchLabels"]
    assert wanted.items() <= service["metadata"]["labels"].items()
    others = [d for d in base if d["kind"] == "Service" and d is not service]
    assert not others  # the selector matches this Service only
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]} and endpoint["path"] == "/metrics"


def test_rules_and_dashboard_are_in_the_writeback_namespace(rendered: list[dict[str, Any]]) -> None:
    (rule,) = find(rendered, "PrometheusRule")
    (dashboard,) = find(rendered, "ConfigMap", "writeback-dashboard")
    assert {d["metadata"]["namespace"] for d in rendered} == {"writeback"}
    assert rule["spec"]["groups"][0]["rules"]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"  # the Grafana sidecar's label
    assert json.loads(dashboard["data"]["writeback.json"]) == json.loads((MONITORING / "dashboard.json").read_text())
