"""Reading an Argo CD Application's Helm source as a release, rule by rule (argo-cd reposerver/repository.go:
helmTemplate, getResolvedValueFiles; util/helm/cmd.go: template)."""

from __future__ import annotations

from typing import Any

import pytest

from writeback.charts import ChartInfo
from writeback.kube.pathtypes import Index, Key, Select
from writeback.sources.helm import Form, LayerKind, Where, releases_from_application
from writeback.sources.helm.layers import effective_values, render_request

CHART = {"charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n", "charts/web/values.yaml": "a: 1\n"}
WHERE = Where(file="apps/web.yaml", document=0)


def app(source: dict[str, Any] | None = None, *, sources: list[Any] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"destination": {"namespace": "prod"}, **spec}
    if sources is not None:
        body["sources"] = sources
    else:
        body["source"] = source
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web", "namespace": "argocd"},
        "spec": body,
    }


def one(application: dict[str, Any], files: dict[str, str] | None = None, **kw: Any) -> Any:
    found = releases_from_application(application, files={**CHART, **(files or {})}, where=WHERE, **kw)
    assert len(found) == 1
    return found[0]


def test_release_name_namespace_and_flags_default_to_the_application_and_its_destination() -> None:
    rel = one(app({"repoURL": "https://g/r.git", "path": "charts/web"}), kube_version="1.30.2", api_versions=["x/v1"])
    assert not rel.merged  # each layer one -f, as Argo CD's repo-server passes them
    assert (rel.name, rel.namespace, rel.chart.path) == ("web", "prod", "charts/web")
    assert (rel.kube_version, rel.api_versions, rel.include_crds, rel.skip_tests) == ("1.30.2", ("x/v1",), True, False)
    assert [layer.kind for layer in rel.layers] == [LayerKind.CHART, LayerKind.INLINE]  # inline: where it would go
    assert rel.own == Where(
        file="apps/web.yaml", document=0, path=(Key("spec"), Key("source"), Key("helm"), Key("valuesObject"))
    )


def test_helm_settings_override_name_namespace_kube_version_api_versions_and_crds() -> None:
    helm = {
        "releaseName": "rel",
        "namespace": "other",
        "kubeVersion": "1.29.0",
        "apiVersions": ["a/v1"],
        "skipCrds": True,
        "skipTests": True,
        "skipSchemaValidation": True,
    }
    rel = one(app({"repoURL": "https://g/r.git", "path": "charts/web", "helm": helm}), kube_version="1.30.2")
    assert (rel.name, rel.namespace, rel.kube_version, rel.api_versions) == ("rel", "other", "1.29.0", ("a/v1",))
    assert (rel.include_crds, rel.skip_tests, rel.skip_schema_validation) == (False, True, True)


def test_value_files_are_relative_to_the_source_path_in_order_and_absolute_ones_to_the_repo_root() -> None:
    files = {"charts/web/values-prod.yaml": "a: 2\n", "envs/common.yaml": "a: 3\n", "charts/web/values.yaml": "a: 1\n"}
    helm = {"valueFiles": ["values.yaml", "values-prod.yaml", "/envs/common.yaml"]}
    rel = one(app({"repoURL": "https://g/r.git", "path": "charts/web", "helm": helm}), files)
    vf = [layer for layer in rel.layers if layer.kind is LayerKind.VALUES_FILE]
    assert [layer.where.file for layer in vf] == [
        "charts/web/values.yaml",
        "charts/web/values-prod.yaml",
        "envs/common.yaml",
    ]
    assert [layer.shared for layer in vf] == [True, False, False]  # the chart's own values.yaml is never edited


def test_a_values_file_that_leaves_the_repo_or_is_a_url_or_missing_cannot_be_read() -> None:
    helm = {"valueFiles": ["../../../etc/passwd", "https://example.com/v.yaml", "nope.yaml"]}
    rel = one(app({"repoURL": "https://g/r.git", "path": "charts/web", "helm": helm}))
    reasons = [layer.unreadable for layer in rel.layers if layer.kind is LayerKind.VALUES_FILE]
    assert reasons == [
        "values file ../../../etc/passwd leaves the repository",
        "values file https://example.com/v.yaml is a URL (not read)",
        "values file charts/web/nope.yaml is not in the repo",
    ]


def test_ignore_missing_value_files_skips_them() -> None:
    helm = {"valueFiles": ["nope.yaml"], "ignoreMissingValueFiles": True}
    rel = one(app({"repoURL": "https://g/r.git", "path": "charts/web", "helm": helm}))
    assert [layer.kind for layer in rel.layers] == [LayerKind.CHART, LayerKind.INLINE]  # inline: where it would go


def test_value_files_may_name_argocd_variables() -> None:
    files = {"charts/web/values-web.yaml": "a: 9\n"}
    helm = {"valueFiles": ["values-$ARGOCD_APP_NAME.yaml", "values-${ARGOCD_APP_REVISION}.yaml"]}
    rel = one(app({"repoURL": "https://g/r.git", "path": "charts/web", "helm": helm}), files)
    vf = [layer for layer in rel.layers if layer.kind is LayerKind.VALUES_FILE]
    assert vf[0].where.file == "charts/web/values-web.yaml"
    assert vf[1].unreadable == "values file values-${ARGOCD_APP_REVISION}.yaml names an unknown variable"


def test_values_object_wins_over_values_and_comes_after_every_file_then_parameters() -> None:
    files = {"charts/web/values-prod.yaml": "a: 2\nb: 2\n"}
    helm = {
        "valueFiles": ["values-prod.yaml"],
        "values": "a: 5\n",
        "valuesObject": {"a": 3, "c": 3},
        "parameters": [{"name": "c", "value": "4"}, {"name": "s", "value": "true", "forceString": True}],
        "fileParameters": [{"name": "f", "path": "values-prod.yaml"}],
    }
    rel = one(app({"repoURL": "https://g/r.git", "path": "charts/web", "helm": helm}), files)
    kinds = [layer.kind for layer in rel.layers]
    assert kinds == [
        LayerKind.CHART,
        LayerKind.VALUES_FILE,
        LayerKind.INLINE,
        LayerKind.PARAMETER,
        LayerKind.STRING_PARAMETER,
        LayerKind.FILE_PARAMETER,
    ]
    inline = rel.layers[2]
    assert inline.name == "helm.valuesObject" and inline.where.form is Form.MAPPING
    param = rel.layers[3]
    assert param.where.path == (
        Key("spec"),
        Key("source"),
        Key("helm"),
        Key("parameters"),
        Select((("name", "c"),)),
        Key("value"),
    )
    chart = ChartInfo(name="web", version="1.0.0", digest="d", values="a: 1\nz: 0\n")
    merged = {**CHART, **files}  # the Application is read from the object itself (not in these files)
    assert effective_values(rel, files=merged, chart=chart) == {
        "a": 3,
        "b": 2,
        "c": 4,
        "s": "true",
        "z": 0,
        "f": "a: 2\nb: 2\n",
    }
    req = render_request(rel, files=merged, chart=chart)
    assert [v.name for v in req.values] == ["values-prod.yaml", "helm.valuesObject"]
    assert (req.set, req.set_string, req.set_file) == ((("c", "4"),), (("s", "true"),), (("f", "a: 2\nb: 2\n"),))


def test_values_string_is_an_inline_layer_edited_as_text() -> None:
    rel = one(app({"repoURL": "https://g/r.git", "path": "charts/web", "helm": {"values": "a: 5\n"}}))
    inline = rel.layers[-1]
    assert (inline.name, inline.where.form) == ("helm.values", Form.TEXT)
    assert rel.own == inline.where


def test_a_chart_of_a_helm_repository_reads_its_value_files_from_the_chart() -> None:
    source = {
        "repoURL": "https://charts.example",
        "chart": "podinfo",
        "targetRevision": "6.14.1",
        "helm": {"valueFiles": ["values-prod.yaml"]},
    }
    rel = one(app(source))
    assert (rel.chart.repo_url, rel.chart.name, rel.chart.version, rel.chart.path) == (
        "https://charts.example",
        "podinfo",
        "6.14.1",
        None,
    )
    vf = rel.layers[1]
    assert (vf.chart_file, vf.where, vf.shared) == ("values-prod.yaml", None, True)


def test_multi_source_ref_value_files_resolve_in_the_referenced_repository() -> None:
    files = {"envs/prod/values.yaml": "a: 7\n"}
    sources = [
        {
            "repoURL": "https://charts.example",
            "chart": "web",
            "targetRevision": "1.0.0",
            "helm": {"valueFiles": ["$values/envs/prod/values.yaml", "$other/x.yaml"]},
        },
        {"repoURL": "https://git.example/ours.git", "targetRevision": "main", "ref": "values"},
        {"repoURL": "https://git.example/theirs.git", "ref": "other"},
    ]
    rel = one(app(sources=sources), files, repo_urls=["https://git.example/ours"])
    vf = [layer for layer in rel.layers if layer.kind is LayerKind.VALUES_FILE]
    assert vf[0].where == Where(file="envs/prod/values.yaml")
    assert vf[1].unreadable == "values file $other/x.yaml is in another repository (https://git.example/theirs.git)"
    assert rel.own.path[:3] == (Key("spec"), Key("sources"), Index(0))


def test_a_chart_path_in_another_repository_is_a_problem() -> None:
    rel = one(
        app({"repoURL": "https://git.example/theirs.git", "path": "charts/web"}), repo_urls=["git@git.example:ours.git"]
    )
    assert rel.problems == ("the chart is in another repository (https://git.example/theirs.git)",)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://GitHub.com/Org/Repo.git", "https://github.com/org/repo"),
        ("git@github.com:org/repo.git", "https://github.com/org/repo/"),
    ],
)
def test_repository_urls_compare_as_argocd_normalizes_them(a: str, b: str) -> None:
    from writeback.sources.helm import normalize_repo_url

    assert normalize_repo_url(a) == normalize_repo_url(b)


def test_a_source_that_is_not_helm_gives_no_release() -> None:
    plain = app({"repoURL": "https://g/r.git", "path": "manifests"})
    assert releases_from_application(plain, files={"manifests/a.yaml": "kind: ConfigMap\n"}) == ()
