"""Reading a Flux HelmRelease as a release, rule by rule (helm-controller: api/v2 GetReleaseName and
GetReleaseNamespace, internal/release ShortenName, internal/postrender; source-controller: chart valuesFiles;
fluxcd/pkg chartutil: valuesFrom)."""

from __future__ import annotations

from typing import Any

import pytest

from writeback.charts import ChartInfo
from writeback.kube.pathtypes import Key
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import DesiredObject
from writeback.sources.helm import (
    Artifact,
    Form,
    LayerKind,
    Where,
    artifact_of,
    chart_object,
    release_from_helmrelease,
)
from writeback.sources.helm.flux import release_name
from writeback.sources.helm.layers import effective_values, render_request

WHERE = Where(file="apps/web.yaml", document=0)
REPO = "https://git.example/ours.git"


def hr(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "chart": {"spec": {"chart": "./charts/web", "sourceRef": {"kind": "GitRepository", "name": "repo"}}}
    }
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "web", "namespace": "apps"},
        "spec": {**base, **spec},
    }


def objects(*found: DesiredObject) -> Any:
    by = {o.ref.identity: o for o in found}
    return by.get


def obj(api: str, kind: str, ns: str, name: str, body: dict[str, Any], file: str, document: int = 0) -> DesiredObject:
    full = {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns}, **body}
    return DesiredObject(
        ref=ObjectRef(api_version=api, kind=kind, namespace=ns, name=name), body=full, file=file, document=document
    )


GITREPO = obj("source.toolkit.fluxcd.io/v1", "GitRepository", "apps", "repo", {"spec": {"url": REPO}}, "flux/repo.yaml")


@pytest.mark.parametrize(
    ("name", "expected"),
    [  # helm-controller internal/release/name_test.go
        ("release-name", "release-name"),
        (
            "release-name-with-very-long-name-which-is-longer-than-53-characters",
            "release-name-with-very-long-name-which-i-788ca0d0d7b0",
        ),
        (
            "another-release-name-with-very-long-name-which-is-longer-than-53-characters",
            "another-release-name-with-very-long-name-7e72150d5a36",
        ),
    ],
)
def test_a_release_name_past_53_characters_is_shortened_with_a_hash(name: str, expected: str) -> None:
    assert release_name({"metadata": {"name": "x"}, "spec": {"releaseName": name}}) == expected


def test_release_name_and_namespace_follow_target_namespace() -> None:
    rel = release_from_helmrelease(hr(targetNamespace="prod"), files={}, where=WHERE)
    assert (rel.name, rel.namespace, rel.storage_namespace) == ("prod-web", "prod", "apps")
    rel = release_from_helmrelease(hr(targetNamespace="prod", releaseName="r", storageNamespace="s"), files={})
    assert (rel.name, rel.namespace, rel.storage_namespace) == ("r", "prod", "s")
    rel = release_from_helmrelease(hr(), files={})
    assert (rel.name, rel.namespace, rel.merged, rel.no_hooks) == ("web", "apps", True, True)


def test_a_git_repository_chart_is_a_path_of_this_repo_and_another_repo_is_a_problem() -> None:
    rel = release_from_helmrelease(hr(), files={}, find=objects(GITREPO), repo_urls=["https://git.example/ours"])
    assert (rel.chart.path, rel.chart.source, rel.problems) == ("charts/web", "GitRepository/apps/repo", ())
    other = obj("source.toolkit.fluxcd.io/v1", "GitRepository", "apps", "repo", {"spec": {"url": "https://x/y"}}, "f")
    rel = release_from_helmrelease(hr(), files={}, find=objects(other), repo_urls=[REPO])
    assert rel.problems == ("the chart is in GitRepository/apps/repo (https://x/y), not in this repository",)


def test_a_helm_repository_chart_has_its_name_version_and_oci_url() -> None:
    repo = obj(
        "source.toolkit.fluxcd.io/v1",
        "HelmRepository",
        "flux-system",
        "charts",
        {"spec": {"url": "ghcr.io/org/charts", "type": "oci"}},
        "f",
    )
    spec = {
        "chart": "podinfo",
        "version": "6.x",
        "sourceRef": {"kind": "HelmRepository", "name": "charts", "namespace": "flux-system"},
    }
    rel = release_from_helmrelease(hr(chart={"spec": spec}), files={}, find=objects(repo))
    assert (rel.chart.name, rel.chart.version, rel.chart.repo_url) == ("podinfo", "6.x", "oci://ghcr.io/org/charts")
    assert chart_object(hr(chart={"spec": spec}), namespace="apps") == ("HelmChart", "flux-system", "apps-web")


def test_chart_ref_names_the_source_object_whose_artifact_is_the_chart() -> None:
    oci = obj(
        "source.toolkit.fluxcd.io/v1",
        "OCIRepository",
        "apps",
        "podinfo",
        {"spec": {"url": "oci://ghcr.io/stefanprodan/charts/podinfo", "ref": {"tag": "6.14.1"}}},
        "f",
    )
    body = hr(chartRef={"kind": "OCIRepository", "name": "podinfo"})
    del body["spec"]["chart"]
    rel = release_from_helmrelease(body, files={}, find=objects(oci))
    assert (rel.chart.name, rel.chart.version, rel.chart.source) == ("podinfo", "6.14.1", "OCIRepository/apps/podinfo")
    assert chart_object(body, namespace="apps") == ("OCIRepository", "apps", "podinfo")


def test_values_files_replace_the_chart_values_and_values_from_and_spec_values_merge_on_top() -> None:
    files = {
        "charts/web/values.yaml": "a: 1\nkept: no\n",
        "charts/web/values-prod.yaml": "a: 2\nb: {xx: 1, yy: 1}\n",
    }
    cm = obj("v1", "ConfigMap", "apps", "vals", {"data": {"values.yaml": "b: {yy: 2}\nc: 1\n", "tag": "v9"}}, "cm.yaml")
    spec = {
        "chart": "./charts/web",
        "sourceRef": {"kind": "GitRepository", "name": "repo"},
        "valuesFiles": ["charts/web/values-prod.yaml"],
    }
    body = hr(
        chart={"spec": spec},
        values={"c": 3, "d": 4},
        valuesFrom=[
            {"kind": "ConfigMap", "name": "vals"},
            {"kind": "ConfigMap", "name": "vals", "valuesKey": "tag", "targetPath": "image.tag"},
            {"kind": "ConfigMap", "name": "missing", "optional": True},
        ],
    )
    rel = release_from_helmrelease(body, files=files, where=WHERE, find=objects(GITREPO, cm))
    kinds = [(layer.kind, layer.chart_values) for layer in rel.layers]
    assert kinds == [
        (LayerKind.VALUES_FILE, True),
        (LayerKind.CONFIGMAP, False),
        (LayerKind.CONFIGMAP, False),
        (LayerKind.INLINE, False),
    ]
    text, scalar = rel.layers[1].where, rel.layers[2].where
    assert text is not None and scalar is not None
    assert (text.file, text.path, text.form) == ("cm.yaml", (Key("data"), Key("values.yaml")), Form.TEXT)
    assert (scalar.path, scalar.form) == ((Key("data"), Key("tag")), Form.SCALAR)
    chart = ChartInfo(name="web", version="1", digest="d", values=files["charts/web/values.yaml"])
    eff = effective_values(rel, files=files, chart=chart)
    assert eff == {"a": 2, "b": {"xx": 1, "yy": 2}, "c": 3, "d": 4, "image": {"tag": "v9"}}  # "kept" is gone
    req = render_request(rel, files=files, chart=chart)
    assert req.chart_values is not None and '"kept"' not in req.chart_values
    assert [v.name for v in req.values] == ["values"] and req.no_hooks


def test_a_secret_is_never_read_and_a_missing_config_map_is_unreadable() -> None:
    body = hr(valuesFrom=[{"kind": "Secret", "name": "creds"}, {"kind": "ConfigMap", "name": "gone"}])
    rel = release_from_helmrelease(body, files={}, find=objects())
    assert [layer.unreadable for layer in rel.layers[1:]] == [
        "values from Secret apps/creds are never read",
        "ConfigMap apps/gone is not in the repo",
    ]


def test_post_renderers_common_metadata_and_origin_labels() -> None:
    patch = {"patch": "- op: add\n  path: /metadata/annotations/x\n  value: y\n", "target": {"kind": "Deployment"}}
    body = hr(
        postRenderers=[{"kustomize": {"patches": [patch], "images": [{"name": "a", "newTag": "2"}]}}],
        commonMetadata={"labels": {"team": "a"}, "annotations": {"note": "n"}},
    )
    rel = release_from_helmrelease(body, files={})
    post = rel.post_render
    assert post is not None
    assert post.kustomize[0].patches == (patch,) and post.kustomize[0].images == ({"name": "a", "newTag": "2"},)
    assert post.labels == {
        "team": "a",
        "helm.toolkit.fluxcd.io/name": "web",
        "helm.toolkit.fluxcd.io/namespace": "apps",
        "app.kubernetes.io/managed-by": "Helm",  # what Helm's install adds
    }
    assert post.annotations == {
        "note": "n",
        "meta.helm.sh/release-name": "web",
        "meta.helm.sh/release-namespace": "apps",
    }


def test_install_crds_skip_and_schema_validation() -> None:
    rel = release_from_helmrelease(hr(install={"crds": "Skip", "disableSchemaValidation": True}), files={})
    assert (rel.include_crds, rel.skip_schema_validation) == (False, True)


def test_the_own_layer_is_spec_values_of_the_manifest() -> None:
    rel = release_from_helmrelease(hr(), files={}, where=WHERE, namespace="ignored")
    assert rel.own == Where(file="apps/web.yaml", document=0, path=(Key("spec"), Key("values")))
    assert rel.owner.identity == Identity("helm.toolkit.fluxcd.io", "HelmRelease", "apps", "web")


def test_the_artifact_is_read_from_the_source_objects_status() -> None:
    chart = {
        "kind": "HelmChart",
        "status": {
            "artifact": {
                "url": "http://source-controller/helmchart/a/b/web-1.0.0.tgz",
                "digest": "sha256:ab",
                "revision": "1.0.0",
            }
        },
    }
    assert artifact_of(chart) == Artifact(
        url="http://source-controller/helmchart/a/b/web-1.0.0.tgz", digest="sha256:ab", revision="1.0.0"
    )
    assert artifact_of({"kind": "HelmChart", "status": {}}) is None
