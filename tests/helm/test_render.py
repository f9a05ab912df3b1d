"""Rendering with the real helm CLI as Argo CD and Flux do: the values helm sees equal the values the engine
computes; flags, CRDs, hooks, post-renderers, charts from the repo, a chart cache and an HTTP artifact; refusals."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.helm.charts import application, echo_chart, helmrelease, write
from writeback.adapters.git.texts import read_texts
from writeback.adapters.helm import ENV_VAR, HelmCLI, find_helm
from writeback.errors import ToolMissing
from writeback.sources.helm import (
    Artifact,
    ChartInfo,
    ChartRef,
    ChartUnavailable,
    Release,
    RenderedObject,
    RenderFailed,
    Rendering,
    parse_output,
)
from writeback.sources.helm.layers import effective_values, render_request

APP = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  destination: {namespace: prod}
  source:
    repoURL: https://git.example/repo.git
    path: charts/echo
    helm:
      valueFiles: [values-prod.yaml, values-last.yaml]
      valuesObject: {obj: 1, list: [x]}
      parameters:
        - {name: p, value: "5"}
        - {name: s, value: "true", forceString: true}
        - {name: obj, value: "2"}
      fileParameters:
        - {name: f, path: files/f.txt}
      kubeVersion: "1.29.4"
      apiVersions: [example.com/v1]
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    echo_chart(root)
    write(
        root,
        {
            "charts/echo/values-prod.yaml": "a: 2\nlast: prod\nnested: {mm: 1, nn: 1}\n",
            "charts/echo/values-last.yaml": "last: last\nnested: {nn: 2}\n",
            "charts/echo/files/f.txt": "file, content",
        },
    )
    return root


@pytest.fixture
def cli(repo: Path, helm_bin: Path, kustomize_bin: Path) -> Iterator[HelmCLI]:
    with HelmCLI(repo=repo, binary=helm_bin, kustomize_binary=kustomize_bin) as c:
        yield c


def echoed(
    cli: HelmCLI, release: Release, files: Mapping[str, str]
) -> tuple[dict[tuple[str, str], RenderedObject], ChartInfo, Rendering]:
    chart = cli.chart(release.chart)
    out = parse_output(
        cli.render(render_request(release, files=files, chart=chart)),
        namespace=release.namespace,
        post=release.post_render,
    )
    by_kind = {(o.ref.kind, o.ref.name): o for o in out.objects}
    return by_kind, chart, out


def test_argocd_flags_and_layers_render_the_values_the_engine_computes(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/web.yaml", APP)
    objs, chart, _ = echoed(cli, release, files)
    cm = objs[("ConfigMap", "web-echo")].body["data"]
    helm_values = json.loads(cm["values"])
    assert helm_values == effective_values(release, files=files, chart=chart)
    assert helm_values["last"] == "last" and helm_values["nested"] == {"mm": 1, "nn": 2}  # later files win
    assert helm_values["kept"] is True  # values are YAML 1.1 to Helm: `yes` is a boolean
    assert (helm_values["obj"], helm_values["p"], helm_values["s"]) == (2, 5, "true")  # --set over valuesObject
    assert helm_values["f"] == "file, content"  # --set-file, comma kept
    assert (cm["namespace"], cm["kube"], cm["api"]) == ("prod", "v1.29.4", "true")
    assert (
        objs[("CustomResourceDefinition", "widgets.example.com")].template == "echo/crds/widget.yaml"
    )  # --include-crds
    assert ("ConfigMap", "web-hook") in objs  # Argo CD renders hooks
    assert objs[("ConfigMap", "web-echo")].template == "echo/templates/cm.yaml"
    assert objs[("ConfigMap", "web-echo")].ref.namespace == "prod"
    assert objs[("CustomResourceDefinition", "widgets.example.com")].ref.namespace is None


def test_skip_crds_leaves_the_crds_out(repo: Path, cli: HelmCLI) -> None:
    release, files = application(
        repo, "apps/web.yaml", APP.replace("      kubeVersion", "      skipCrds: true\n      kubeVersion")
    )
    objs, _, _ = echoed(cli, release, files)
    assert ("CustomResourceDefinition", "widgets.example.com") not in objs


FLUX = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  targetNamespace: prod
  chart:
    spec:
      chart: ./charts/echo
      sourceRef: {kind: GitRepository, name: repo}
      valuesFiles: [charts/echo/values-prod.yaml]
  valuesFrom:
    - {kind: ConfigMap, name: vals}
  values: {nested: {z: 3}, a: 9}
  postRenderers:
    - kustomize:
        patches:
          - target: {kind: ConfigMap, name: prod-web-echo}
            patch: |
              - op: add
                path: /metadata/annotations
                value: {patched: "yes"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: vals, namespace: apps}
data:
  values.yaml: |
    nested: {nn: 5}
    fromcm: 1
"""


def test_flux_merges_values_replaces_chart_values_drops_hooks_and_post_renders(repo: Path, cli: HelmCLI) -> None:
    from writeback.kube.refs import ObjectRef
    from writeback.model import DesiredObject
    from writeback.yaml.reading import load_all

    write(repo, {"apps/web.yaml": FLUX})
    cm_body = load_all(FLUX, source="x")[1]
    cm = DesiredObject(
        ref=ObjectRef(api_version="v1", kind="ConfigMap", namespace="apps", name="vals"),
        body=cm_body,
        file="apps/web.yaml",
        document=1,
    )
    release, files = helmrelease(repo, "apps/web.yaml", FLUX, find={cm.ref.identity: cm}.get)
    objs, chart, _ = echoed(cli, release, files)
    echo = objs[("ConfigMap", "prod-web-echo")]
    helm_values = json.loads(echo.body["data"]["values"])
    assert helm_values == effective_values(release, files=files, chart=chart)
    assert helm_values == {"a": 9, "last": "prod", "nested": {"mm": 1, "nn": 5, "z": 3}, "fromcm": 1}  # no "kept"
    assert ("ConfigMap", "prod-web-hook") not in objs  # hooks are not part of the release's manifest
    assert echo.body["metadata"]["annotations"] == {  # the Kustomize post-renderer ran; then Helm's install
        "patched": "yes",
        "meta.helm.sh/release-name": "prod-web",
        "meta.helm.sh/release-namespace": "prod",
    }
    assert echo.body["metadata"]["labels"] == {
        "helm.toolkit.fluxcd.io/name": "web",
        "helm.toolkit.fluxcd.io/namespace": "apps",
        "app.kubernetes.io/managed-by": "Helm",
    }
    assert echo.template == "echo/templates/cm.yaml"  # kept through the post-renderer
    assert echo.body["data"]["namespace"] == "prod"


def test_values_go_to_a_private_directory_and_the_repo_is_untouched(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/web.yaml", APP)
    before = read_texts(repo)
    echoed(cli, release, files)
    assert read_texts(repo) == before
    assert not any(p.name.startswith("values-0") for p in repo.rglob("*"))


def test_renders_are_cached_by_chart_digest_and_request(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/web.yaml", APP)
    chart = cli.chart(release.chart)
    request = render_request(release, files=files, chart=chart)
    first = cli.render(request)
    assert cli.render(request) is first and (cli.runs, cli.hits) == (1, 1)
    cli.render(render_request(release, files=files, chart=chart, attempt=1))
    assert cli.runs == 2
    write(repo, {"charts/echo/templates/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n"})
    assert "name: extra" in cli.render(request).text and cli.runs == 3  # the chart changed: its digest too


def test_a_failing_render_says_why_without_private_paths(repo: Path, cli: HelmCLI) -> None:
    write(repo, {"charts/echo/templates/bad.yaml": '{{ fail "no good" }}\n'})
    release, files = application(repo, "apps/web.yaml", APP)
    with pytest.raises(RenderFailed, match="no good") as e:
        echoed(cli, release, files)
    assert str(repo) not in str(e.value) and "writeback-helm-" not in str(e.value)


def test_a_chart_that_leads_outside_the_repo_is_refused(tmp_path: Path, repo: Path, cli: HelmCLI) -> None:
    outside = tmp_path / "outside"
    echo_chart(outside, path="chart")
    (repo / "charts/linked").symlink_to(outside / "chart")
    with pytest.raises(ChartUnavailable, match="leads outside the repository"):
        cli.chart(ChartRef(path="charts/linked"))
    (outside / "secret.txt").write_text("s3cr3t")
    (repo / "charts/echo/templates/leak.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ChartUnavailable, match=r"templates/leak\.txt is a symlink that leads outside"):
        cli.chart(ChartRef(path="charts/echo"))
    with pytest.raises(ChartUnavailable, match="no such directory"):
        cli.chart(ChartRef(path="charts/none"))
    (repo / "charts/echo/templates/leak.txt").unlink()
    (repo / "charts/echo/templates/loop.yaml").symlink_to("loop.yaml")  # a loop: refused, never a crash
    with pytest.raises(ChartUnavailable, match=r"templates/loop\.yaml is a broken symlink or a symlink loop"):
        cli.chart(ChartRef(path="charts/echo"))


def _package(helm_bin: Path, chart: Path, dest: Path, version: str) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(helm_bin), "package", str(chart), "--version", version, "-d", str(dest)],
        check=True,
        capture_output=True,
        env={**os.environ, "HOME": str(dest)},
    )
    return dest / f"echo-{version}.tgz"


def test_a_remote_chart_comes_from_the_chart_cache_by_version_or_range(
    tmp_path: Path, repo: Path, helm_bin: Path
) -> None:
    cache = tmp_path / "cache"
    for v in ("0.1.0", "0.2.0", "1.0.0"):
        _package(helm_bin, repo / "charts/echo", cache, v)
    with HelmCLI(repo=repo, binary=helm_bin, chart_cache=cache) as cli:
        assert cli.chart(ChartRef(repo_url="https://c", name="echo", version="0.x")).version == "0.2.0"
        assert cli.chart(ChartRef(repo_url="https://c", name="echo", version="1.0.0")).version == "1.0.0"
        assert cli.chart(ChartRef(repo_url="https://c", name="echo")).version == "1.0.0"
        with pytest.raises(ChartUnavailable, match=r"versions there: 0\.1\.0, 0\.2\.0, 1\.0\.0"):
            cli.chart(ChartRef(repo_url="https://c", name="echo", version="2.x"))
    with HelmCLI(repo=repo, binary=helm_bin) as cli, pytest.raises(ChartUnavailable, match="no chart cache given"):
        cli.chart(ChartRef(repo_url="https://c", name="echo", version="0.1.0"))


def test_in_cluster_mode_the_chart_is_fetched_from_its_artifact_url(tmp_path: Path, repo: Path, helm_bin: Path) -> None:
    tgz = _package(helm_bin, repo / "charts/echo", tmp_path / "served", "0.3.0")
    data = tgz.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/helmchart/apps/apps-web/echo-0.3.0.tgz"
        good = Artifact(url=url, digest="sha256:" + hashlib.sha256(data).hexdigest())
        with HelmCLI(repo=repo, binary=helm_bin, fetch_artifacts=True) as cli:
            assert cli.chart(ChartRef(name="echo", artifact=good)).version == "0.3.0"
            bad = Artifact(url=url + "?x", digest="sha256:" + "0" * 64)
            with pytest.raises(ChartUnavailable, match="digest"):
                cli.chart(ChartRef(name="echo", artifact=bad))
        with HelmCLI(repo=repo, binary=helm_bin) as cli, pytest.raises(ChartUnavailable, match="cluster mode"):
            cli.chart(ChartRef(name="echo", artifact=good))
    finally:
        server.shutdown()


def test_helm_comes_from_the_environment_or_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, helm_bin: Path
) -> None:
    monkeypatch.setenv(ENV_VAR, str(helm_bin))
    assert find_helm() == helm_bin
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nope"))
    with pytest.raises(ToolMissing, match="WRITEBACK_HELM"):
        find_helm()
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing, match="helm is not on PATH"):
        find_helm()
