"""Tracing with the real bitnami nginx chart (a library chart, a values schema, image checks that fail on a changed
registry, a generated TLS Secret) and with a Flux HelmRelease (spec.values, a ConfigMap's values, post-rendering)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helm.charts import application, copy_chart, helmrelease, write
from tests.helm.test_trace import drift, patched, reasons
from writeback.adapters.helm import HelmCLI
from writeback.kube.refs import ObjectRef
from writeback.model import DesiredObject, Op
from writeback.sources.helm import HelmEngine
from writeback.yaml.reading import load_all

NGINX_APP = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  destination: {namespace: prod}
  source:
    repoURL: https://git.example/repo.git
    path: charts/nginx
    helm:
      valueFiles: [../../envs/prod.yaml]
"""
OLD, NEW = "docker.io/bitnami/nginx:1.29.1-debian-12-r0", "docker.io/bitnami/nginx:1.29.2-debian-12-r1"
NGINX = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="prod", name="web-nginx")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    copy_chart(root, "nginx", "charts/nginx")
    copy_chart(root, "podinfo", "charts/podinfo")
    write(root, {"envs/prod.yaml": "# prod\nreplicaCount: 2\n"})
    return root


@pytest.fixture
def cli(repo: Path, helm_bin: Path, kustomize_bin: Path) -> Iterator[HelmCLI]:
    with HelmCLI(repo=repo, binary=helm_bin, kustomize_binary=kustomize_bin) as c:
        yield c


def test_nginx_image_tag_of_both_containers_and_replicas(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/web.yaml", NGINX_APP)
    engine = HelmEngine(cli)
    drifts = [
        drift("spec.template.spec.containers[name=nginx].image", Op.CHANGE, NEW, OLD, resource=NGINX),
        drift(
            "spec.template.spec.initContainers[name=preserve-logs-symlinks].image", Op.CHANGE, NEW, OLD, resource=NGINX
        ),
        drift("spec.replicas", Op.CHANGE, 4, 2, resource=NGINX),
    ]
    located = engine.locate(release, files, drifts)
    assert located.unresolved == ()
    assert patched(located) == {"envs/prod.yaml": "# prod\nreplicaCount: 4\nimage:\n  tag: 1.29.2-debian-12-r1\n"}
    proof = engine.verify(release, files, located.patches, located.drifts)
    assert proof.ok, proof.reason()
    assert proof.proof is not None
    assert proof.proof.sentence() == (
        "helm template re-render: changes exactly these 3 fields of these 1 object; nothing else "
        "(besides 3 generated fields that differ on every render)"  # the chart's self-signed TLS Secret
    )
    assert engine.renders <= 3 * len(drifts) + 1


def test_nginx_a_tag_changed_in_one_container_only_fails_the_proof(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/web.yaml", NGINX_APP)
    engine = HelmEngine(cli)
    located = engine.locate(
        release, files, [drift("spec.template.spec.containers[name=nginx].image", Op.CHANGE, NEW, OLD, resource=NGINX)]
    )
    assert [e.key for e in located.edits] == [("image", "tag")]
    proof = engine.verify(release, files, located.patches, located.drifts)
    assert not proof.ok
    assert (
        'spec.template.spec.initContainers[name=preserve-logs-symlinks].image: expected "docker.io/bitnami/nginx:'
        '1.29.1-debian-12-r0", re-render has "docker.io/bitnami/nginx:1.29.2-debian-12-r1"' in proof.reason()
    )
    assert "Secret" not in proof.reason()  # generated content is not a difference (and Secret values never shown)


FLUX = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  targetNamespace: prod
  chart:
    spec:
      chart: ./charts/podinfo
      sourceRef: {kind: GitRepository, name: repo}
  valuesFrom:
    - kind: ConfigMap
      name: web-values
  values:
    replicaCount: 2 # prod
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-values, namespace: apps}
data:
  values.yaml: |
    # the image, owned by the release team
    image:
      tag: 6.14.1
"""
PODINFO = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="prod", name="prod-web-podinfo")
C = "spec.template.spec.containers[name=podinfo]"


def test_flux_edits_spec_values_and_the_config_maps_values_where_each_key_is_set(repo: Path, cli: HelmCLI) -> None:
    body = load_all(FLUX, source="x")[1]
    cm = DesiredObject(
        ref=ObjectRef(api_version="v1", kind="ConfigMap", namespace="apps", name="web-values"),
        body=body,
        file="apps/web.yaml",
        document=1,
    )
    release, files = helmrelease(repo, "apps/web.yaml", FLUX, find={cm.ref.identity: cm}.get)
    engine = HelmEngine(cli)
    loaded = engine.desired(release, files)
    deploy = loaded.rendering.find(PODINFO.identity)
    assert deploy is not None and deploy.body["metadata"]["labels"]["helm.toolkit.fluxcd.io/name"] == "web"
    drifts = [
        drift(
            f"{C}.image",
            Op.CHANGE,
            "ghcr.io/stefanprodan/podinfo:6.15.0",
            "ghcr.io/stefanprodan/podinfo:6.14.1",
            PODINFO,
        ),
        drift("spec.replicas", Op.CHANGE, 3, 2, PODINFO),
        drift(f"{C}.env[name=DEBUG]", Op.ADD, {"name": "DEBUG", "value": "1"}, resource=PODINFO),
    ]
    located = engine.locate(release, files, drifts)
    assert located.unresolved == ()
    assert patched(located)["apps/web.yaml"] == FLUX.replace(
        "replicaCount: 2 # prod", 'replicaCount: 3 # prod\n    extraEnvs:\n      - name: DEBUG\n        value: "1"'
    ).replace("tag: 6.14.1", "tag: 6.15.0")
    proof = engine.verify(release, files, located.patches, located.drifts)
    assert proof.ok, proof.reason()
    assert engine.renders <= 3 * len(drifts) + 1


def test_flux_values_from_a_secret_are_never_read(repo: Path, cli: HelmCLI) -> None:
    text = FLUX.replace(
        "    - kind: ConfigMap\n      name: web-values\n", "    - kind: Secret\n      name: web-secret\n"
    )
    release, files = helmrelease(repo, "apps/web.yaml", text)
    located = HelmEngine(cli).locate(release, files, [drift("spec.replicas", Op.CHANGE, 3, 2, PODINFO)])
    assert list(reasons(located).values()) == [
        "HelmRelease.helm.toolkit.fluxcd.io apps/web: values from Secret apps/web-secret are never read"
    ]


MULTI = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  destination: {namespace: prod}
  sources:
    - repoURL: https://stefanprodan.github.io/podinfo
      chart: podinfo
      targetRevision: 6.x
      helm:
        valueFiles: [$values/envs/prod.yaml]
    - repoURL: https://git.example/ours.git
      targetRevision: main
      ref: values
"""


def test_a_chart_from_the_chart_cache_with_values_from_a_ref_source(repo: Path, helm_bin: Path, tmp_path: Path) -> None:
    import subprocess

    cache = tmp_path / "chart-cache"
    subprocess.run(
        [str(helm_bin), "package", str(repo / "charts/podinfo"), "-d", str(cache)],
        check=True,
        capture_output=True,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    release, files = application(repo, "apps/web.yaml", MULTI, repo_urls=["https://git.example/ours"])
    with HelmCLI(repo=repo, binary=helm_bin, chart_cache=cache) as cli:
        engine = HelmEngine(cli)
        assert engine.chart(release).version == "6.14.1"
        pod = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="prod", name="web-podinfo")
        located = engine.locate(release, files, [drift("spec.replicas", Op.CHANGE, 3, 2, pod)])
        assert patched(located) == {"envs/prod.yaml": "# prod\nreplicaCount: 3\n"}
        assert engine.verify(release, files, located.patches, located.drifts).ok


def test_a_helmrelease_with_no_values_of_its_own_gets_spec_values(repo: Path, cli: HelmCLI) -> None:
    bare = FLUX.split("---\n")[0].replace("  valuesFrom:\n    - kind: ConfigMap\n      name: web-values\n", "")
    bare = bare.replace("  values:\n    replicaCount: 2 # prod\n", "")
    release, files = helmrelease(repo, "apps/web.yaml", bare)
    engine = HelmEngine(cli)
    located = engine.locate(release, files, [drift("spec.replicas", Op.CHANGE, 2, 1, PODINFO)])
    assert patched(located) == {"apps/web.yaml": bare + "  values:\n    replicaCount: 2\n"}
    assert engine.verify(release, files, located.patches, located.drifts).ok


def test_nginx_an_added_env_var_and_pod_annotation_go_to_its_extra_env_vars_and_pod_annotations(
    repo: Path, cli: HelmCLI
) -> None:
    release, files = application(repo, "apps/web.yaml", NGINX_APP)
    engine = HelmEngine(cli)
    drifts = [
        drift(
            "spec.template.spec.containers[name=nginx].env[name=FOO]",
            Op.ADD,
            {"name": "FOO", "value": "bar"},
            resource=NGINX,
        ),
        drift('spec.template.metadata.annotations["team"]', Op.ADD, "blue", resource=NGINX),
    ]
    located = engine.locate(release, files, drifts)
    assert sorted(e.via for e in located.edits) == [
        "values key extraEnvVars in envs/prod.yaml",
        "values key podAnnotations.team in envs/prod.yaml",
    ]
    proof = engine.verify(release, files, located.patches, located.drifts)
    assert proof.ok, proof.reason()
    assert engine.renders <= 4  # the load, one tracing round, the proof and its second render (the TLS Secret)
