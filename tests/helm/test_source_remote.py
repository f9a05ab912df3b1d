"""A remote chart through the REAL Flux source-controller: the podinfo chart packaged by the real helm (``helm
package`` + ``helm repo index``) and served by a local HTTP Helm repository; a HelmRepository and the HelmChart that
helm-controller creates for the HelmRelease (``<namespace>-<name>``), reconciled by source-controller into an
artifact; writeback reads the chart from that artifact in cluster mode. Offline, the same release needs the chart
cache (``--chart-cache DIR``, what ``helm pull`` writes): without it the chart is unresolved, with the reason."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import to_yaml
from tests.flux.sync import WATCH_LABEL
from tests.helm.cluster import CONTAINER, apply_object, helm_template, install_as_helm_controller
from tests.support.cli import run_cli
from tests.support.gitrepos import commit, init_repo
from tests.support.polling import wait_until
from tests.support.testdata import CHARTS
from writeback.adapters import helm as helm_adapter

pytestmark = pytest.mark.controlplane

IMAGE = "ghcr.io/stefanprodan/podinfo"


@pytest.fixture(autouse=True)
def _helm(helm_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(helm_adapter.ENV_VAR, str(helm_bin))
    yield


@pytest.fixture
def helm_repository(helm_bin: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A Helm repository over HTTP on loopback: (its URL, the packaged chart)."""
    served = tmp_path / "served"
    served.mkdir()
    home = tmp_path / "helm-home"
    env = {"HOME": str(home), "HELM_CACHE_HOME": str(home / "c"), "HELM_CONFIG_HOME": str(home / "f"),
           "HELM_DATA_HOME": str(home / "d"), "PATH": "/usr/bin:/bin"}  # fmt: skip
    subprocess.run([str(helm_bin), "package", str(CHARTS / "podinfo"), "-d", str(served)], env=env, check=True,
                   capture_output=True)  # fmt: skip
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    subprocess.run([str(helm_bin), "repo", "index", str(served), "--url", url], env=env, check=True,
                   capture_output=True)  # fmt: skip
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield url, served / "podinfo-6.14.1.tgz"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _source(kind: str, name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "labels": WATCH_LABEL}, "spec": spec}  # fmt: skip


def _artifact(controlplane: Any, namespace: str, name: str, timeout: float = 90) -> dict[str, Any]:
    status: dict[str, Any] = {}

    def served() -> bool:
        nonlocal status
        got = controlplane.kubectl("get", "helmcharts.source.toolkit.fluxcd.io", name, "-n", namespace, "-o", "json")
        status = json.loads(got.stdout).get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
        return ready and bool((status.get("artifact") or {}).get("url"))

    wait_until(f"HelmChart {namespace}/{name} Ready with an artifact", served, timeout=timeout, step=0.5,
               context=lambda: f"its status: {status}")  # fmt: skip
    return dict(status["artifact"])


def test_the_chart_comes_from_the_artifact_source_controller_serves(
    controlplane: Any,
    flux: Any,
    namespace: str,
    crds: list[str],
    helm_bin: Path,
    helm_repository: tuple[str, Path],
    tmp_path: Path,
) -> None:
    url, packaged = helm_repository
    apply_object(controlplane, _source("HelmRepository", "podinfo", namespace, {"url": url, "interval": "1m"}))
    # what helm-controller creates for the HelmRelease: the HelmChart <namespace>-<name>
    chart = {"chart": "podinfo", "version": "6.14.x", "interval": "1m",
             "sourceRef": {"kind": "HelmRepository", "name": "podinfo"}}  # fmt: skip
    apply_object(controlplane, _source("HelmChart", f"{namespace}-web", namespace, chart))
    artifact = _artifact(controlplane, namespace, f"{namespace}-web")
    assert artifact["url"].startswith(f"http://{flux.storage_addr}/") and artifact["revision"] == "6.14.1"

    hr = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "interval": "5m",
            "chart": {"spec": {"chart": "podinfo", "version": "6.14.x",
                               "sourceRef": {"kind": "HelmRepository", "name": "podinfo"}}},
            "values": {"replicaCount": 2},
        },
    }  # fmt: skip
    repo = tmp_path / "platform"
    repo.mkdir()
    init_repo(repo)
    commit(repo, "the web release", files={"apps/web.yaml": "# the web release (podinfo from the Helm repository)\n"
                                                            + to_yaml(hr)})  # fmt: skip
    values = tmp_path / "values.json"
    values.write_text(json.dumps(hr["spec"]["values"]))  # type: ignore[index]
    text = helm_template(helm_bin, packaged, release="web", namespace=namespace, values=[values], extra=["--no-hooks"])
    install_as_helm_controller(controlplane, text, namespace=namespace, helmrelease="web", release="web")
    apply_object(controlplane, hr, manager="kustomize-controller")
    k = controlplane.kubectl
    k("set", "image", "deployment/web-podinfo", "-n", namespace, f"podinfo={IMAGE}:6.15.0")
    k("set", "env", "deployment/web-podinfo", "-n", namespace, "FEATURE_X=enabled")
    flags = ("--repo", str(repo), "--flux-helmrelease", f"{namespace}/web")

    code, out, err = run_cli("plan", "-o", "json", "--kubeconfig", controlplane.kubeconfig, *flags)

    assert code == 0, err
    doc = json.loads(out)
    (cs,) = doc["changesets"]
    assert doc["problems"] == [] and cs["unresolved"] == []
    assert {d["path"] for d in cs["drifts"]} == {f"{CONTAINER}.image", f"{CONTAINER}.env[name=FEATURE_X]"}
    (f,) = cs["files"]
    assert f["path"] == "apps/web.yaml"
    assert "+    image:\n+      tag: 6.15.0\n" in f["diff"] and "+      - name: FEATURE_X\n" in f["diff"], f["diff"]
    assert "changes exactly these 2 fields of these 1 object" in cs["pullRequest"]["body"]

    # offline, from a dump: the artifact is not fetched; the chart cache has the chart, else it is unresolved
    dump = tmp_path / "live.yaml"
    dump.write_text(k("get", "deployments,services,helmreleases", "-n", namespace, "-o", "yaml",
                      "--show-managed-fields").stdout)  # fmt: skip
    code, out, _ = run_cli("diff", "-o", "json", "--live", str(dump), *flags)
    assert code == 2
    (problem,) = json.loads(out)["problems"]
    assert problem["file"] == "apps/web.yaml", problem
    message = problem["message"]
    assert "unresolved, not rendered" in message and "no chart cache given (--chart-cache DIR" in message
    cache = tmp_path / "charts"
    cache.mkdir()
    shutil.copy(packaged, cache)
    code, out, err = run_cli("plan", "-o", "json", "--live", str(dump), "--chart-cache", str(cache), *flags)
    assert code == 0, err
    (cs,) = json.loads(out)["changesets"]
    assert [g["diff"] for g in cs["files"]] == [f["diff"]]
