"""Helm as a source kind on the real control plane, for an Argo CD Application: the real podinfo chart rendered by
the real helm and applied as ``argocd-controller``, a person's changes by the real kubectl, then ``writeback diff``
and ``plan --argocd-app NS/NAME`` (the Helm source chosen by the Application itself) write the values edit a
reviewer would write, proven by rendering the edited values again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import by_path, diff_json, drifts_of, to_yaml
from tests.helm.cluster import (
    CONTAINER,
    PODINFO,
    apply_as_argocd,
    apply_object,
    argocd_application,
    helm_template,
    new_repo,
)
from tests.support.cli import run_cli
from tests.support.gitrepos import commit
from writeback.adapters import helm as helm_adapter

pytestmark = pytest.mark.controlplane

PROD_VALUES = """\
# prod overrides (reviewed by the platform team)
replicaCount: 2 # two replicas in prod

image:
  tag: 6.14.1 # pinned
"""
IMAGE = "ghcr.io/stefanprodan/podinfo"
DEPLOY = "deployment/web-podinfo"


@pytest.fixture(autouse=True)
def _helm(helm_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(helm_adapter.ENV_VAR, str(helm_bin))
    yield


def _install(controlplane: Any, helm_bin: Path, repo: Path, namespace: str, *, values: list[str], **app: Any) -> str:
    sha = commit(repo, "sync point") if (repo / ".git").is_dir() else ""
    text = helm_template(
        helm_bin,
        repo / app.get("path", PODINFO),
        release="web",
        namespace=namespace,
        values=[repo / v for v in values],
        sets=app.pop("sets", ()),
    )
    apply_as_argocd(controlplane, text, namespace=namespace)
    return sha


def _flags(controlplane: Any, repo: Path, namespace: str, app: str = "web") -> tuple[str, ...]:
    return ("--repo", str(repo), "--kubeconfig", controlplane.kubeconfig, "--argocd-app", f"{namespace}/{app}")


def _plan(*flags: str) -> dict[str, Any]:
    code, out, err = run_cli("plan", "-o", "json", *flags)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_five_kubectl_changes_become_one_values_edit_proven_by_a_re_render(
    controlplane: Any, namespace: str, crds: list[str], helm_bin: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "platform"
    values = "envs/prod/values.yaml"
    app = argocd_application("web", namespace=namespace, value_files=["../../envs/prod/values.yaml"])
    sha = new_repo(repo, {values: PROD_VALUES, "apps/web.yaml": to_yaml(app)})
    text = helm_template(helm_bin, repo / PODINFO, release="web", namespace=namespace, values=[repo / values])
    apply_as_argocd(controlplane, text, namespace=namespace)
    apply_object(
        controlplane,
        argocd_application("web", namespace=namespace, revision=sha, value_files=["../../envs/prod/values.yaml"]),
    )
    k = controlplane.kubectl
    # the 3 AM hotfixes, with the real kubectl
    k("set", "image", DEPLOY, "-n", namespace, f"podinfo={IMAGE}:6.15.0")
    k("scale", DEPLOY, "-n", namespace, "--replicas=5")
    k("set", "env", DEPLOY, "-n", namespace, "FEATURE_X=enabled")
    k("set", "resources", DEPLOY, "-n", namespace, "-c", "podinfo", "--limits=memory=512Mi")
    k("patch", DEPLOY, "-n", namespace, "-p", '{"spec":{"template":{"metadata":{"annotations":{"team":"payments"}}}}}')
    flags = _flags(controlplane, repo, namespace)

    _, doc = diff_json(*flags)

    assert doc["problems"] == [] and doc["revision"] == sha
    web = by_path(drifts_of(doc, kind="Deployment", name="web-podinfo"))
    wanted = {
        f"{CONTAINER}.image": f"{IMAGE}:6.15.0",
        "spec.replicas": 5,
        f"{CONTAINER}.env[name=FEATURE_X]": {"name": "FEATURE_X", "value": "enabled"},
        f"{CONTAINER}.resources.limits.memory": "512Mi",
        "spec.template.metadata.annotations.team": "payments",
    }
    assert {p: (d["live"], d["decision"]) for p, d in web.items()} == {p: (v, "writeback") for p, v in wanted.items()}
    assert [d for d in doc["drifts"] if d["decision"] != "ignore" and d["resource"]["name"] != "web-podinfo"] == []

    plan = _plan(*flags)

    (cs,) = plan["changesets"]
    assert plan["problems"] == [] and cs["unresolved"] == []
    assert [f["path"] for f in cs["files"]] == [values]
    after = (repo / values).read_text()  # plan commits nothing
    assert after == PROD_VALUES
    diff = cs["files"][0]["diff"]
    assert "-replicaCount: 2 # two replicas in prod\n+replicaCount: 5 # two replicas in prod" in diff
    assert "-  tag: 6.14.1 # pinned\n+  tag: 6.15.0 # pinned" in diff
    added = "+podAnnotations:\n+  team: payments\n+extraEnvs:\n+  - name: FEATURE_X\n+    value: enabled\n"
    assert added + "+resources:\n+  limits:\n+    memory: 512Mi\n" in diff, diff
    body = cs["pullRequest"]["body"]
    assert "helm template re-render: changes exactly these 5 fields of these 1 object; nothing else" in body


def test_a_hard_coded_field_is_unresolved_and_an_hpa_owns_replicas(
    controlplane: Any, namespace: str, crds: list[str], helm_bin: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "platform"
    values = "envs/prod/values.yaml"
    hpa = PROD_VALUES.replace("replicaCount: 2 # two replicas in prod\n", "hpa:\n  enabled: true\n")
    app = argocd_application("web", namespace=namespace, value_files=["../../envs/prod/values.yaml"])
    sha = new_repo(repo, {values: hpa, "apps/web.yaml": to_yaml(app)})
    apply_as_argocd(
        controlplane,
        helm_template(helm_bin, repo / PODINFO, release="web", namespace=namespace, values=[repo / values]),
        namespace=namespace,
    )
    apply_object(controlplane, {**app, "status": {"sync": {"status": "Synced", "revision": sha}}})
    k = controlplane.kubectl
    k("scale", DEPLOY, "-n", namespace, "--replicas=7")  # the chart's HPA scales it: not a person's value
    k("patch", DEPLOY, "-n", namespace, "-p", '{"spec":{"template":{"spec":{"terminationGracePeriodSeconds":90}}}}')
    flags = _flags(controlplane, repo, namespace)

    _, doc = diff_json(*flags)

    web = by_path(drifts_of(doc, kind="Deployment", name="web-podinfo"))
    assert web["spec.replicas"]["decision"] == "ignore"
    assert "HorizontalPodAutoscaler" in web["spec.replicas"]["reason"]
    assert web["spec.template.spec.terminationGracePeriodSeconds"]["decision"] == "writeback"

    plan = _plan(*flags)

    (cs,) = plan["changesets"]
    assert cs["files"] == []
    (u,) = cs["unresolved"]
    assert u["path"] == "spec.template.spec.terminationGracePeriodSeconds"
    assert u["reason"] == "set by podinfo/templates/deployment.yaml; no value controls it"


def test_the_higher_layer_is_edited_and_a_shared_chart_keeps_its_values(
    controlplane: Any, namespace: str, crds: list[str], helm_bin: Path, tmp_path: Path
) -> None:
    """Two environments share the chart: a key only the chart sets goes to this environment's layer; a key both
    the common values file and this Application's valuesObject set goes to the valuesObject (the higher)."""
    repo = tmp_path / "platform"
    common = "envs/common.yaml"
    apps = {
        env: argocd_application(
            f"web-{env}",
            namespace=namespace,
            value_files=["../../envs/common.yaml"],
            values_object={"replicaCount": 3 if env == "prod" else 1},
        )
        for env in ("dev", "prod")
    }
    files = {common: "# shared by dev and prod\nreplicaCount: 2\nimage:\n  tag: 6.14.1\n"}
    files |= {f"apps/{env}.yaml": to_yaml(a) for env, a in apps.items()}
    sha = new_repo(repo, files)
    text = helm_template(
        helm_bin,
        repo / PODINFO,
        release="web-prod",
        namespace=namespace,
        values=[repo / common],
        sets=["replicaCount=3"],
    )
    apply_as_argocd(controlplane, text, namespace=namespace)
    apply_object(controlplane, {**apps["prod"], "status": {"sync": {"status": "Synced", "revision": sha}}})
    k = controlplane.kubectl
    k("scale", "deployment/web-prod-podinfo", "-n", namespace, "--replicas=4")
    k("set", "image", "deployment/web-prod-podinfo", "-n", namespace, f"podinfo={IMAGE}:6.15.0")
    k(
        "patch",
        "deployment/web-prod-podinfo",
        "-n",
        namespace,
        "-p",
        '{"spec":{"template":{"metadata":{"annotations":{"team":"payments"}}}}}',
    )

    plan = _plan(*_flags(controlplane, repo, namespace, app="web-prod"))

    (cs,) = plan["changesets"]
    assert cs["unresolved"] == [] and plan["problems"] == []
    assert [f["path"] for f in cs["files"]] == ["apps/prod.yaml"]  # never the shared common.yaml, never dev
    diff = cs["files"][0]["diff"]
    assert "-        replicaCount: 3\n+        replicaCount: 4\n" in diff, diff
    assert "+        image:\n+          tag: 6.15.0\n" in diff and "+          team: payments\n" in diff
    assert (repo / common).read_text().endswith("tag: 6.14.1\n")
    assert "changes exactly these 3 fields of these 1 object" in cs["pullRequest"]["body"]
