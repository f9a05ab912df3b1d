"""The tracer's harder paths, each on a tiny real chart with the real helm: a flag found by halving, a candidate
whose perturbation breaks the chart, a values schema that forbids a perturbation, a field the post-renderers set,
and a field of an object whose name a perturbation changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helm.charts import application, helmrelease, write
from tests.helm.test_trace import drift, reasons
from writeback.adapters.helm import HelmCLI
from writeback.kube.refs import ObjectRef
from writeback.model import Op
from writeback.sources.helm import HelmEngine

APP = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: t, namespace: argocd}
spec:
  destination: {namespace: ns}
  source:
    repoURL: https://git.example/repo.git
    path: charts/t
    helm: {valueFiles: [values-prod.yaml]}
"""
DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Values.name | quote }}
spec:
  replicas: {{ .Values.count }}
  template:
    spec:
      containers:
        - name: app
          image: {{ .Values.image | quote }}
          securityContext:
            readOnlyRootFilesystem: {{ .Values.ro }}
            privileged: {{ .Values.other }}
"""
CHECKS = """\
{{- if not (regexMatch "^[0-9]+\\\\.[0-9]+$" .Values.version) }}{{ fail "version must look like 1.0" }}{{ end }}
"""
SCHEMA = '{"type": "object", "properties": {"limit": {"type": "integer", "maximum": 5}}}'
T = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="ns", name="t")
C = "spec.template.spec.containers[name=app]"
VALUES = "name: t\ncount: 2\nimage: '1.0'\nversion: '1.0'\nro: true\nother: true\nlimit: 2\n"


def chart(root: Path, values: str) -> None:
    write(
        root,
        {
            "charts/t/Chart.yaml": "apiVersion: v2\nname: t\nversion: 0.1.0\n",
            "charts/t/values.yaml": values,
            "charts/t/values-prod.yaml": "# prod\n",
            "charts/t/templates/deploy.yaml": DEPLOY,
            "charts/t/templates/checks.yaml": CHECKS,
        },
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    chart(root, VALUES)
    return root


@pytest.fixture
def cli(repo: Path, helm_bin: Path, kustomize_bin: Path) -> Iterator[HelmCLI]:
    with HelmCLI(repo=repo, binary=helm_bin, kustomize_binary=kustomize_bin) as c:
        yield c


def test_a_flag_is_found_by_flipping_its_candidates_and_halving(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/t.yaml", APP)
    engine = HelmEngine(cli)
    ro = drift(f"{C}.securityContext.readOnlyRootFilesystem", Op.CHANGE, False, True, T)
    located = engine.locate(release, files, [ro])
    assert [(e.key, e.value) for e in located.edits] == [(("ro",), False)]
    assert engine.verify(release, files, located.patches, located.drifts).ok
    assert engine.renders <= 4


def test_a_candidate_whose_perturbation_breaks_the_chart_is_left_out(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/t.yaml", APP)
    located = HelmEngine(cli).locate(release, files, [drift(f"{C}.image", Op.CHANGE, "2.0", "1.0", T)])
    assert [(e.key, e.value) for e in located.edits] == [(("image",), "2.0")]  # not "version", which must be N.N
    assert located.renders == 3  # the load; both perturbed (the chart fails); each alone: "image" found first


def test_the_values_schema_keeps_a_perturbation_the_chart_would_refuse(repo: Path, cli: HelmCLI) -> None:
    values = VALUES.replace("count: 2", "count: 3").replace("limit: 2", "limit: 3")
    write(repo, {"charts/t/values.schema.json": SCHEMA, "charts/t/values.yaml": values})
    release, files = application(repo, "apps/t.yaml", APP)
    located = HelmEngine(cli).locate(release, files, [drift("spec.replicas", Op.CHANGE, 4, 3, T)])
    assert [(e.key, e.value) for e in located.edits] == [(("count",), 4)]
    assert located.renders == 2  # no failed render: "limit" (also 3) has no sentinel within its maximum


def test_an_object_renamed_by_a_perturbation_is_still_found(repo: Path, cli: HelmCLI) -> None:
    write(repo, {"charts/t/values.yaml": VALUES.replace("name: t", "name: '2'").replace("count: 2", "count: '2'")})
    release, files = application(repo, "apps/t.yaml", APP)
    two = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="ns", name="2")
    located = HelmEngine(cli).locate(release, files, [drift("spec.replicas", Op.CHANGE, 5, 2, two)])
    assert [(e.key, e.value) for e in located.edits] == [(("count",), "5")]


FLUX = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: t, namespace: ns}
spec:
  releaseName: t
  chart:
    spec:
      chart: ./charts/t
      sourceRef: {kind: GitRepository, name: repo}
  values: {count: 2}
  postRenderers:
    - kustomize:
        patches:
          - target: {kind: Deployment}
            patch: |
              - op: add
                path: /spec/minReadySeconds
                value: 10
"""


def test_a_field_the_post_renderers_set_is_unresolved_saying_so(repo: Path, cli: HelmCLI) -> None:
    release, files = helmrelease(repo, "apps/t.yaml", FLUX)
    located = HelmEngine(cli).locate(release, files, [drift("spec.minReadySeconds", Op.CHANGE, 20, 10, T)])
    assert list(reasons(located).values()) == [
        "set by the release's post-rendering (a postRenderers patch or label); no value controls it"
    ]
