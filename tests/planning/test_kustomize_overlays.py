"""A prod hotfix lands in the prod overlay only; the real ``kustomize build`` proves it (prod live, staging same)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.planning.repos import KUSTOMIZE_REPO, WEB, drift, ref
from tests.support.gitrepos import write_files
from writeback.adapters import kustomize as kustomize_cli
from writeback.errors import ToolMissing
from writeback.model import Drift, Op
from writeback.pipeline.planning import plan_files
from writeback.pipeline.targets import TargetSpec
from writeback.sources.base import Tools
from writeback.sources.changesets import plan_changesets
from writeback.sources.live_values import find_rendered, mismatches
from writeback.sources.locating import locate
from writeback.sources.registry import by_name

IMAGE = "spec.template.spec.containers[name=app].image"


def _objects(text: str) -> list[dict[str, Any]]:
    return [d for d in YAML(typ="safe", pure=True).load_all(text) if isinstance(d, dict)]


def _configmap_name(kustomize_bin: Path, repo: Path, overlay: str) -> str:
    objs = _objects(kustomize_cli.build(repo / overlay, binary=kustomize_bin))
    return next(str(o["metadata"]["name"]) for o in objs if o["kind"] == "ConfigMap")


def _hotfix(cm_name: str) -> list[Drift]:
    cm = ref("ConfigMap", cm_name, api_version="v1")
    return [
        drift(WEB, IMAGE, live="registry.example.com/web:1.0.4", git="registry.example.com/web:1.0.3"),
        drift(WEB, "spec.replicas", live=5, git=3),
        drift(
            WEB,
            "spec.template.spec.containers[name=app].env[name=DEBUG]",
            op=Op.ADD,
            live={"name": "DEBUG", "value": "1"},
        ),
        drift(WEB, "spec.template.spec.containers[name=app].env[name=MODE].value", live="safe", git="normal"),
        drift(WEB, "spec.template.spec.containers[name=app].resources.limits.memory", live="512Mi", git="256Mi"),
        drift(cm, "data.LOG_LEVEL", live="error", git="warn"),
        drift(cm, "data.FEATURE_X", live="on", git="off"),
        drift(
            ref("Service", "web", api_version="v1"), "spec.ports[port=80,protocol=TCP].targetPort", live=8081, git=8080
        ),
    ]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write_files(root, KUSTOMIZE_REPO)
    return root


def test_prod_hotfix_lands_in_prod_overlay_only(repo: Path, kustomize_bin: Path) -> None:
    staging_before = kustomize_cli.build(repo / "overlays/staging", binary=kustomize_bin)
    prod_before = _objects(kustomize_cli.build(repo / "overlays/prod", binary=kustomize_bin))
    drifts = _hotfix(_configmap_name(kustomize_bin, repo, "overlays/prod"))
    assert len(mismatches(prod_before, drifts)) == len(drifts)  # every drifted field differs before patching

    located = locate(files=KUSTOMIZE_REPO, root="overlays/prod", source=by_name("kustomize"), drifts=drifts)
    assert located.unresolved == ()
    plan = plan_changesets(target="prod", files=KUSTOMIZE_REPO, drifts=drifts, located=located)
    assert plan.errors == ()
    (cs,) = plan.changesets
    touched = {f.path for f in cs.files}
    assert touched == {
        "overlays/prod/kustomization.yaml",
        "overlays/prod/resources-patch.yaml",
        "overlays/prod/writeback-service-web.yaml",
    }
    new = next(f for f in cs.files if f.path.endswith("writeback-service-web.yaml"))
    assert new.before is None

    changes = {f.path: f.after for f in cs.files}
    prod_after = _objects(
        kustomize_cli.build_patched(repo, path="overlays/prod", changes=changes, binary=kustomize_bin)
    )
    assert mismatches(prod_after, drifts) == []
    # untouched prod fields keep their values (the base's MODE env stays alongside DEBUG, labels stay)
    deploy = find_rendered(prod_after, WEB)
    assert deploy is not None
    env = deploy["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env] == ["MODE", "DEBUG"] or sorted(e["name"] for e in env) == ["DEBUG", "MODE"]
    assert deploy["metadata"]["labels"]["env"] == "prod"

    staging_after = kustomize_cli.build_patched(repo, path="overlays/staging", changes=changes, binary=kustomize_bin)
    assert staging_after == staging_before


def test_kustomization_edits_keep_comments_and_quotes(repo: Path) -> None:
    drifts = _hotfix("app-config-abcdef1234")[:2]
    located = locate(files=KUSTOMIZE_REPO, root="overlays/prod", source=by_name("kustomize"), drifts=drifts)
    (cs,) = plan_changesets(target="prod", files=KUSTOMIZE_REPO, drifts=drifts, located=located).changesets
    (patch,) = cs.files
    before, after = (patch.before or "").splitlines(), patch.after.splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [
        ('    newTag: "1.0.3"  # pinned by the release train', '    newTag: "1.0.4"  # pinned by the release train'),
        ("    count: 3", "    count: 5"),
    ]


def test_edit_base_changes_the_shared_base(repo: Path, kustomize_bin: Path) -> None:
    drifts = [drift(WEB, "spec.template.spec.containers[name=app].env[name=MODE].value", live="safe", git="normal")]
    spec = TargetSpec(name="prod", path="overlays/prod", source="kustomize", edit_base=True)
    outcome = plan_files(
        files=KUSTOMIZE_REPO, drifts=drifts, spec=spec, repo=repo, tools=Tools(paths={"kustomize": kustomize_bin})
    )
    (cs,) = outcome.plan.changesets
    assert [f.path for f in cs.files] == ["base/deployment.yaml"]
    assert "value: safe  # the default mode" in cs.files[0].after
    assert outcome.plan.errors == ()  # verified by the real kustomize build of prod


def test_base_only_field_without_overlay_patch_gets_a_new_patch_file() -> None:
    files = dict(KUSTOMIZE_REPO)
    drifts = [
        drift(ref("Deployment", "stg-web", namespace="staging"), IMAGE.replace("image", "env[name=MODE]"), op=Op.REMOVE)
    ]
    located = locate(files=files, root="overlays/staging", source=by_name("kustomize"), drifts=drifts)
    (cs,) = plan_changesets(target="staging", files=files, drifts=drifts, located=located).changesets
    new = next(f for f in cs.files if f.before is None)
    assert new.path == "overlays/staging/writeback-deployment-web.yaml"
    assert "$patch: delete" in new.after and "name: MODE" in new.after
    kust = next(f for f in cs.files if f.path == "overlays/staging/kustomization.yaml")
    assert kust.after.endswith("patches:\n  - path: writeback-deployment-web.yaml\n")


def test_removed_base_env_renders_without_it(repo: Path, kustomize_bin: Path) -> None:
    drifts = [drift(WEB, "spec.template.spec.containers[name=app].env[name=MODE]", op=Op.REMOVE)]
    spec = TargetSpec(name="prod", path="overlays/prod", source="kustomize")
    outcome = plan_files(
        files=KUSTOMIZE_REPO, drifts=drifts, spec=spec, repo=repo, tools=Tools(paths={"kustomize": kustomize_bin})
    )
    assert outcome.plan.errors == ()
    (cs,) = outcome.plan.changesets
    assert [f.path for f in cs.files] == ["overlays/prod/resources-patch.yaml"]


def test_missing_kustomize_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(kustomize_cli.ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing, match="neither kustomize nor kubectl is on PATH"):
        kustomize_cli.find_kustomize()
    monkeypatch.setenv(kustomize_cli.ENV_VAR, str(tmp_path / "nope"))
    with pytest.raises(ToolMissing, match="WRITEBACK_KUSTOMIZE"):
        kustomize_cli.find_kustomize()


def test_labels_entry_and_image_name_are_edited_where_kustomize_sets_them(repo: Path, kustomize_bin: Path) -> None:
    drifts = [
        drift(WEB, 'metadata.labels["env"]', live="production", git="prod"),
        drift(WEB, IMAGE, live="mirror.example.com/web:1.0.3", git="registry.example.com/web:1.0.3"),
    ]
    spec = TargetSpec(name="prod", path="overlays/prod", source="kustomize")
    outcome = plan_files(
        files=KUSTOMIZE_REPO, drifts=drifts, spec=spec, repo=repo, tools=Tools(paths={"kustomize": kustomize_bin})
    )
    assert outcome.plan.errors == ()  # the real kustomize build renders both live values
    (cs,) = outcome.plan.changesets
    (patch,) = cs.files
    assert patch.path == "overlays/prod/kustomization.yaml"
    assert "      env: production\n" in patch.after
    assert "    newName: mirror.example.com/web\n" in patch.after


def test_file_based_strategic_merge_and_json6902_patches(tmp_path: Path, kustomize_bin: Path) -> None:
    files = {
        "base/kustomization.yaml": KUSTOMIZE_REPO["base/kustomization.yaml"],
        "base/deployment.yaml": KUSTOMIZE_REPO["base/deployment.yaml"],
        "base/service.yaml": KUSTOMIZE_REPO["base/service.yaml"],
        "qa/kustomization.yaml": (
            "namespace: qa\nresources:\n  - ../base\npatchesStrategicMerge:\n  - smp.yaml\n"
            "patchesJson6902:\n  - target: {group: apps, version: v1, kind: Deployment, name: web}\n"
            "    path: ops.yaml\n"
        ),
        "qa/smp.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  minReadySeconds: 5\n",
        "qa/ops.yaml": "- op: replace\n  path: /spec/replicas\n  value: 2  # qa runs two\n",
    }
    write_files(tmp_path / "repo", files)
    web = ref("Deployment", "web", namespace="qa")
    drifts = [drift(web, "spec.minReadySeconds", live=9, git=5), drift(web, "spec.replicas", live=3, git=2)]
    spec = TargetSpec(name="qa", path="qa", source="kustomize")
    outcome = plan_files(
        files=files, drifts=drifts, spec=spec, repo=tmp_path / "repo", tools=Tools(paths={"kustomize": kustomize_bin})
    )
    assert outcome.plan.errors == ()
    (cs,) = outcome.plan.changesets
    after = {f.path: f.after for f in cs.files}
    assert after == {
        "qa/smp.yaml": files["qa/smp.yaml"].replace("5", "9"),
        "qa/ops.yaml": files["qa/ops.yaml"].replace("value: 2", "value: 3"),
    }


@pytest.mark.parametrize(
    ("target", "lands_in_patch"),
    [
        ("labelSelector: app in (web, api)", True),  # set-based, as kustomize (apimachinery) reads it
        ("labelSelector: app notin (web)", False),
        ("labelSelector: '!canary'", True),
        ("annotationSelector: team=shop", True),
        ("annotationSelector: team=other", False),
    ],
)
def test_a_patch_target_selects_with_the_label_selector_grammar(
    tmp_path: Path, kustomize_bin: Path, target: str, lands_in_patch: bool
) -> None:
    annotated = "  labels:\n    app: web\n  annotations:\n    team: shop\n"
    base = KUSTOMIZE_REPO["base/deployment.yaml"].replace("  labels:\n    app: web\n", annotated, 1)
    files = {
        "base/kustomization.yaml": KUSTOMIZE_REPO["base/kustomization.yaml"],
        "base/deployment.yaml": base,
        "base/service.yaml": KUSTOMIZE_REPO["base/service.yaml"],
        "qa/kustomization.yaml": (
            "namespace: qa\nresources:\n  - ../base\n"
            f"patches:\n  - path: ops.yaml\n    target:\n      kind: Deployment\n      {target}\n"
        ),
        "qa/ops.yaml": "- op: replace\n  path: /spec/replicas\n  value: 2  # qa runs two\n",
    }
    write_files(tmp_path / "repo", files)
    web = ref("Deployment", "web", namespace="qa")
    git_replicas = 2 if lands_in_patch else 1  # what kustomize renders: the patch applies only where it selects
    spec = TargetSpec(name="qa", path="qa", source="kustomize")
    outcome = plan_files(files=files, drifts=[drift(web, "spec.replicas", live=3, git=git_replicas)], spec=spec,
                         repo=tmp_path / "repo", tools=Tools(paths={"kustomize": kustomize_bin}))  # fmt: skip
    assert outcome.plan.errors == ()
    (cs,) = outcome.plan.changesets
    after = {f.path: f.after for f in cs.files}
    if lands_in_patch:
        assert after == {"qa/ops.yaml": files["qa/ops.yaml"].replace("value: 2", "value: 3")}
    else:
        assert "qa/ops.yaml" not in after and set(after) != set(), after
