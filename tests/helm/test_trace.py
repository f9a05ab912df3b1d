"""Tracing drifted fields of the real podinfo chart to the values keys that produce them, with the real helm:
direct, embedded in a string, toYaml structures (an env var, a resource, an annotation), hard-coded fields, the
layer a reviewer would edit, shared charts and values files, the render budget, and the re-render's proof."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helm.charts import application, copy_chart, write
from writeback.adapters.helm import HelmCLI
from writeback.kube.paths import parse_path
from writeback.kube.pathtypes import ABSENT, FieldPath
from writeback.kube.refs import ObjectRef
from writeback.model import Drift, Op
from writeback.sources.helm import HelmEngine

DEPLOY = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="prod", name="web-podinfo")
SERVICE = ObjectRef(api_version="v1", kind="Service", namespace="prod", name="web-podinfo")
C = "spec.template.spec.containers[name=podinfo]"

APP = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  destination: {namespace: prod}
  source:
    repoURL: https://git.example/repo.git
    path: charts/podinfo
    helm:
      valueFiles: [../../envs/prod/values.yaml]
"""
PROD_VALUES = """\
# prod overrides (kept as they are)
replicaCount: 2 # two replicas in prod

image:
  tag: 6.14.1 # pinned
"""


def drift(path: str, op: Op, live: Any = ABSENT, git: Any = ABSENT, resource: ObjectRef = DEPLOY) -> Drift:
    return Drift(resource=resource, path=parse_path(path), op=op, live=live, git=git)


FIVE = [
    drift(f"{C}.image", Op.CHANGE, "ghcr.io/stefanprodan/podinfo:6.15.0", "ghcr.io/stefanprodan/podinfo:6.14.1"),
    drift("spec.replicas", Op.CHANGE, 5, 2),
    drift(f"{C}.env[name=FEATURE_X]", Op.ADD, {"name": "FEATURE_X", "value": "on"}),
    drift(f"{C}.resources.limits.memory", Op.ADD, "512Mi"),
    drift('spec.template.metadata.annotations["team"]', Op.ADD, "payments"),
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    copy_chart(root, "podinfo", "charts/podinfo")
    write(root, {"envs/prod/values.yaml": PROD_VALUES})
    return root


@pytest.fixture
def cli(repo: Path, helm_bin: Path) -> Iterator[HelmCLI]:
    with HelmCLI(repo=repo, binary=helm_bin) as c:
        yield c


def patched(located: Any) -> dict[str, str]:
    return {p.path: p.after for p in located.patches}


def reasons(located: Any) -> dict[FieldPath, str]:
    return {u.path: u.reason for u in located.unresolved}


def test_five_drifted_fields_become_one_values_edit_each_proven_within_the_render_budget(
    repo: Path, cli: HelmCLI
) -> None:
    release, files = application(repo, "apps/web.yaml", APP)
    engine = HelmEngine(cli)
    located = engine.locate(release, files, FIVE)
    assert located.unresolved == ()
    assert patched(located) == {
        "envs/prod/values.yaml": """\
# prod overrides (kept as they are)
replicaCount: 5 # two replicas in prod

image:
  tag: 6.15.0 # pinned
extraEnvs:
  - name: FEATURE_X
    value: "on"
resources:
  limits:
    memory: 512Mi
podAnnotations:
  team: payments
"""
    }
    vias = sorted(e.via for e in located.edits)
    assert vias == [
        "values key extraEnvs in envs/prod/values.yaml",
        "values key image.tag in envs/prod/values.yaml",
        "values key podAnnotations.team in envs/prod/values.yaml",
        "values key replicaCount in envs/prod/values.yaml",
        "values key resources.limits.memory in envs/prod/values.yaml",
    ]
    proof = engine.verify(release, files, located.patches, located.drifts)
    assert proof.ok, proof.reason()
    assert proof.proof is not None
    assert proof.proof.sentence().startswith(
        "helm template re-render: changes exactly these 5 fields of these 1 object; nothing else"
    )
    assert engine.renders <= 3 * len(FIVE) + 1, engine.renders
    assert located.renders <= 3 * len(FIVE) - 1


def test_a_hard_coded_field_is_unresolved_with_its_template(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/web.yaml", APP)
    located = HelmEngine(cli).locate(
        release, files, [drift("spec.strategy.rollingUpdate.maxUnavailable", Op.CHANGE, 2, 1)]
    )
    assert located.patches == () and located.edits == ()
    assert list(reasons(located).values()) == ["set by podinfo/templates/deployment.yaml; no value controls it"]


def test_only_the_part_of_an_image_string_that_a_value_fills_is_written(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/web.yaml", APP)
    image = drift(f"{C}.image", Op.CHANGE, "registry.example/podinfo:6.14.1", "ghcr.io/stefanprodan/podinfo:6.14.1")
    located = HelmEngine(cli).locate(release, files, [image])
    assert [(e.key, e.value) for e in located.edits] == [(("image", "repository"), "registry.example/podinfo")]
    assert (
        "image:\n  tag: 6.14.1 # pinned\n  repository: registry.example/podinfo\n"
        in patched(located)["envs/prod/values.yaml"]
    )


def test_the_highest_layer_that_sets_a_key_is_edited(repo: Path, cli: HelmCLI) -> None:
    app = APP + "      valuesObject:\n        replicaCount: 3\n"
    app += "      parameters:\n        - {name: image.tag, value: 6.14.1}\n"
    release, files = application(repo, "apps/web.yaml", app)
    engine = HelmEngine(cli)
    drifts = [
        drift("spec.replicas", Op.CHANGE, 4, 3),
        drift(f"{C}.image", Op.CHANGE, "ghcr.io/stefanprodan/podinfo:6.16.0", "ghcr.io/stefanprodan/podinfo:6.14.1"),
    ]
    located = engine.locate(release, files, drifts)
    assert located.unresolved == ()
    after = patched(located)
    assert set(after) == {"apps/web.yaml"}  # envs/prod/values.yaml also sets both keys: not touched
    assert "        replicaCount: 4\n" in after["apps/web.yaml"]
    assert "        - {name: image.tag, value: 6.16.0}\n" in after["apps/web.yaml"]
    assert engine.verify(release, files, located.patches, located.drifts).ok


def test_values_given_as_a_string_are_edited_inside_it(repo: Path, cli: HelmCLI) -> None:
    app = APP + "      values: |\n        # inline\n        replicaCount: 3\n"
    release, files = application(repo, "apps/web.yaml", app)
    engine = HelmEngine(cli)
    located = engine.locate(release, files, [drift("spec.replicas", Op.CHANGE, 6, 3)])
    assert patched(located)["apps/web.yaml"].endswith("      values: |\n        # inline\n        replicaCount: 6\n")
    assert engine.verify(release, files, located.patches, located.drifts).ok


def test_a_chart_shared_by_two_releases_changes_only_this_releases_layer(repo: Path, cli: HelmCLI) -> None:
    write(repo, {"envs/common.yaml": "image:\n  tag: 6.14.1\n", "envs/staging/values.yaml": "replicaCount: 1\n"})
    both = "      valueFiles: [../../envs/common.yaml, ../../envs/{env}/values.yaml]\n"
    prod_app = APP.replace("      valueFiles: [../../envs/prod/values.yaml]\n", both.format(env="prod"))
    staging_app = prod_app.replace("web", "web-staging").replace("envs/prod", "envs/staging")
    staging, _ = application(repo, "apps/staging.yaml", staging_app)
    prod, files = application(repo, "apps/web.yaml", prod_app)
    engine = HelmEngine(cli)
    drifts = [
        drift(f"{C}.image", Op.CHANGE, "ghcr.io/stefanprodan/podinfo:6.15.0", "ghcr.io/stefanprodan/podinfo:6.14.1"),
        drift(f"{C}.resources.requests.cpu", Op.CHANGE, "250m", "1m"),
    ]
    located = engine.locate(prod, files, drifts, others=[staging])
    assert located.unresolved == ()
    after = patched(located)
    assert set(after) == {"envs/prod/values.yaml"}  # not the chart's values.yaml, not envs/common.yaml
    assert after["envs/prod/values.yaml"].endswith(
        "image:\n  tag: 6.15.0 # pinned\nresources:\n  requests:\n    cpu: 250m\n"
    )
    assert engine.verify(prod, files, located.patches, located.drifts).ok


def test_a_removed_annotation_removes_its_key(repo: Path, cli: HelmCLI) -> None:
    write(repo, {"envs/prod/values.yaml": PROD_VALUES + "podAnnotations:\n  team: payments\n  tier: web\n"})
    release, files = application(repo, "apps/web.yaml", APP)
    engine = HelmEngine(cli)
    located = engine.locate(release, files, [drift('spec.template.metadata.annotations["tier"]', Op.REMOVE, git="web")])
    assert patched(located)["envs/prod/values.yaml"].endswith("podAnnotations:\n  team: payments\n")
    assert engine.verify(release, files, located.patches, located.drifts).ok


def test_a_value_that_also_moves_other_fields_fails_the_proof_with_both_renders(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/web.yaml", APP)
    engine = HelmEngine(cli)
    port = drift(f"{C}.ports[name=http].containerPort", Op.CHANGE, 8080, 9898)
    located = engine.locate(release, files, [port])
    assert [e.key for e in located.edits] == [("service", "httpPort")]
    proof = engine.verify(release, files, located.patches, located.drifts)
    assert not proof.ok
    reason = proof.reason()
    assert "does not match live exactly" in reason
    assert (
        'Deployment.apps/prod/web-podinfo spec.template.metadata.annotations["prometheus.io/port"]: '
        'expected "9898", re-render has "8080"' in reason
    )
    moved = {str(d.path) for d in proof.differences}
    assert len(moved) >= 4  # the annotation, the port, and the three probes' commands all moved


def test_fields_that_markers_bind_are_left_to_the_markers(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/web.yaml", APP)
    replicas = drift("spec.replicas", Op.CHANGE, 5, 2)
    located = HelmEngine(cli).locate(release, files, [replicas], marked={(DEPLOY.identity, replicas.path)})
    assert located.marked == (replicas,) and located.edits == () and located.renders <= 1


def test_without_the_application_in_the_repo_a_chart_default_cannot_be_overridden(repo: Path, cli: HelmCLI) -> None:
    from writeback.adapters.git.texts import read_texts
    from writeback.sources.helm import releases_from_application
    from writeback.yaml.reading import load_all

    only_chart = APP.replace("    helm:\n      valueFiles: [../../envs/prod/values.yaml]\n", "")
    files = read_texts(repo)
    (release,) = releases_from_application(load_all(only_chart, source="live")[0], files=files)  # read live
    located = HelmEngine(cli).locate(release, files, [drift(f"{C}.resources.requests.cpu", Op.CHANGE, "250m", "1m")])
    assert list(reasons(located).values()) == [
        "resources.requests.cpu is set by charts/podinfo/values.yaml (shared or outside the repo); "
        "Application.argoproj.io argocd/web is not in the repo"
    ]


def test_an_application_read_live_still_has_its_values_files_in_the_repo(repo: Path, cli: HelmCLI) -> None:
    from writeback.adapters.git.texts import read_texts
    from writeback.sources.helm import releases_from_application
    from writeback.yaml.reading import load_all

    files = read_texts(repo)
    (release,) = releases_from_application(load_all(APP, source="live")[0], files=files)
    located = HelmEngine(cli).locate(release, files, [drift("spec.replicas", Op.CHANGE, 4, 2)])
    assert [e.via for e in located.edits] == ["values key replicaCount in envs/prod/values.yaml"]


def test_a_field_of_an_object_the_chart_does_not_render_is_unresolved(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/web.yaml", APP)
    other = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="prod", name="other")
    located = HelmEngine(cli).locate(release, files, [drift("spec.replicas", Op.CHANGE, 5, 2, resource=other)])
    assert list(reasons(located).values()) == ["not rendered by chart charts/podinfo (in the repo)"]


def test_a_sensitive_value_is_never_written(repo: Path, cli: HelmCLI) -> None:
    from dataclasses import replace

    release, files = application(repo, "apps/web.yaml", APP)
    secret_env = replace(drift(f"{C}.env[name=TOKEN]", Op.ADD, {"name": "TOKEN", "value": "s3cr3t"}), sensitive=True)
    located = HelmEngine(cli).locate(release, files, [secret_env])
    assert located.patches == () and list(reasons(located).values()) == ["a sensitive value is never written"]


def test_loading_then_locating_renders_the_git_values_once(repo: Path, cli: HelmCLI) -> None:
    release, files = application(repo, "apps/web.yaml", APP)
    engine = HelmEngine(cli)
    desired = engine.desired(release, files)
    assert [o.ref.name for o in desired.rendering.desired(file="apps/web.yaml")] == ["web-podinfo", "web-podinfo"]
    assert engine.renders == 1
    located = engine.locate(release, files, [drift("spec.replicas", Op.CHANGE, 5, 2)])
    assert located.renders == engine.renders - 1 == 1  # one perturbed render; the Git values' render is reused


def test_a_changed_resource_limit_is_written_where_the_release_sets_it(repo: Path, cli: HelmCLI) -> None:
    write(repo, {"envs/prod/values.yaml": PROD_VALUES + "resources:\n  limits:\n    cpu: 500m # burst\n"})
    release, files = application(repo, "apps/web.yaml", APP)
    engine = HelmEngine(cli)
    located = engine.locate(release, files, [drift(f"{C}.resources.limits.cpu", Op.CHANGE, "1", "500m")])
    assert patched(located)["envs/prod/values.yaml"].endswith('resources:\n  limits:\n    cpu: "1" # burst\n')
    assert engine.verify(release, files, located.patches, located.drifts).ok


def test_an_application_with_no_values_of_its_own_gets_a_values_object(repo: Path, cli: HelmCLI) -> None:
    bare = APP.replace("    helm:\n      valueFiles: [../../envs/prod/values.yaml]\n", "")
    release, files = application(repo, "apps/web.yaml", bare)
    engine = HelmEngine(cli)
    located = engine.locate(release, files, [drift("spec.replicas", Op.CHANGE, 3, 1)], others=[release])
    assert patched(located) == {"apps/web.yaml": bare + "    helm:\n      valuesObject:\n        replicaCount: 3\n"}
    assert engine.verify(release, files, located.patches, located.drifts).ok
