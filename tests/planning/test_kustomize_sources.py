"""Kustomize source kinds: inline and JSON 6902 patches, components, env/file generators, name prefixes.

Each plan is verified by the real ``kustomize build`` of the patched overlay (plan_files with ``repo``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.planning.repos import drift, ref
from tests.support.gitrepos import write_files
from writeback.adapters import kustomize as kustomize_cli
from writeback.kube.pathtypes import Key
from writeback.model import Op
from writeback.pipeline.planning import plan_files
from writeback.pipeline.targets import TargetSpec
from writeback.sources.base import Tools
from writeback.sources.kustomize.model import load_tree
from writeback.sources.locating import locate
from writeback.sources.registry import by_name

BASE = {
    "base/kustomization.yaml": "resources:\n  - app.yaml\n",
    "base/app.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 1
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
        - name: main
          image: busybox:1.36
          args: ["--port", "8080"]
""",
}
OVERLAY = {
    "env/dev/kustomization.yaml": """\
namespace: dev
namePrefix: dev-
resources:
  - ../../base
components:
  - ../../components/probes
patches:
  - target:
      kind: Deployment
      name: app
    patch: |-
      - op: replace
        path: /spec/replicas
        value: 2
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: app
      spec:
        template:
          spec:
            containers:
              - name: main
                args: ["--port", "9090"]
configMapGenerator:
  - name: settings
    envs:
      - settings.env
  - name: files
    files:
      - motd.txt
""",
    "env/dev/settings.env": "# dev settings\nCOLOR=blue\nSIZE=m\n",
    "env/dev/motd.txt": "hello\n",
    "components/probes/kustomization.yaml": """\
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
patches:
  - path: probe.yaml
""",
    "components/probes/probe.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: main
          readinessProbe:
            periodSeconds: 10
""",
}
FILES = {**BASE, **OVERLAY}
APP = ref("Deployment", "dev-app", namespace="dev")
MAIN = "spec.template.spec.containers[name=main]"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    write_files(tmp_path / "repo", FILES)
    return tmp_path / "repo"


def _generated(kustomize_bin: Path, repo: Path, prefix: str) -> str:
    text = kustomize_cli.build(repo / "env/dev", binary=kustomize_bin)
    return next(line.split(": ", 1)[1] for line in text.splitlines() if line.startswith(f"  name: {prefix}"))


def test_tree_resolves_prefix_namespace_component_and_generators() -> None:
    tree = load_tree(FILES, "env/dev")
    names = sorted((o.kind, o.namespace, o.name) for o in tree.origins)
    assert names == [
        ("ConfigMap", "dev", "dev-files"),
        ("ConfigMap", "dev", "dev-settings"),
        ("Deployment", "dev", "dev-app"),
    ]


def test_inline_json6902_inline_smp_component_and_generators(repo: Path, kustomize_bin: Path) -> None:
    settings = ref("ConfigMap", _generated(kustomize_bin, repo, "dev-settings"), namespace="dev", api_version="v1")
    files_cm = ref("ConfigMap", _generated(kustomize_bin, repo, "dev-files"), namespace="dev", api_version="v1")
    drifts = [
        drift(APP, "spec.replicas", live=4, git=2),
        drift(APP, f"{MAIN}.args", live=["--port", "9191"], git=["--port", "9090"]),
        drift(APP, f"{MAIN}.readinessProbe.periodSeconds", live=30, git=10),
        drift(settings, "data.COLOR", live="red", git="blue"),
        drift(settings, "data.SHAPE", op=Op.ADD, live="round"),
        drift(files_cm, 'data["motd.txt"]', live="maintenance tonight\n", git="hello\n"),
    ]
    located = locate(files=FILES, root="env/dev", source=by_name("kustomize"), drifts=drifts, edit_base=True)
    assert located.unresolved == ()
    assert [(loc.file, loc.inline is not None) for loc in located.locations] == [
        ("env/dev/kustomization.yaml", True),
        ("env/dev/kustomization.yaml", True),
        ("components/probes/probe.yaml", False),
        ("env/dev/settings.env", False),
        ("env/dev/settings.env", False),
        ("env/dev/motd.txt", False),
    ]
    spec = TargetSpec(name="dev", path="env/dev", source="kustomize", edit_base=True)
    outcome = plan_files(
        files=FILES, drifts=drifts, spec=spec, repo=repo, tools=Tools(paths={"kustomize": kustomize_bin})
    )
    assert outcome.plan.errors == ()  # the real kustomize build renders every live value
    (cs,) = outcome.plan.changesets
    after = {f.path: f.after for f in cs.files}
    assert after["env/dev/settings.env"] == "# dev settings\nCOLOR=red\nSIZE=m\nSHAPE=round\n"
    assert after["env/dev/motd.txt"] == "maintenance tonight\n"
    assert "        value: 4\n" in after["env/dev/kustomization.yaml"]
    assert 'args: ["--port", "9191"]' in after["env/dev/kustomization.yaml"]
    assert "periodSeconds: 30" in after["components/probes/probe.yaml"]


def test_component_outside_the_overlay_is_not_edited_without_edit_base(repo: Path, kustomize_bin: Path) -> None:
    drifts = [drift(APP, f"{MAIN}.readinessProbe.periodSeconds", live=30, git=10)]
    spec = TargetSpec(name="dev", path="env/dev", source="kustomize")
    outcome = plan_files(
        files=FILES, drifts=drifts, spec=spec, repo=repo, tools=Tools(paths={"kustomize": kustomize_bin})
    )
    assert outcome.plan.errors == ()
    (cs,) = outcome.plan.changesets
    new = next(f for f in cs.files if f.before is None)
    assert new.path == "env/dev/writeback-deployment-app.yaml"
    assert "periodSeconds: 30" in new.after
    located = locate(files=FILES, root="env/dev", source=by_name("kustomize"), drifts=drifts)
    assert located.locations[0].path[-1] == Key("periodSeconds")
