"""A run that renders no chart imports nothing of the Helm engine, and a run on plain manifests nothing of the
Kustomize engine: the source registry lists each source kind by its light module (its name, flags and config keys,
and which paths or controller objects it claims), and the engine, its adapter and its model are imported when a
target of that kind runs (issue 23: a one-shot `diff` pays no import it does not use). A fresh interpreter, as a
command starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = (
    "writeback.sources.helm.engine", "writeback.sources.helm.running", "writeback.adapters.helm",
    "writeback.sources.helm.model", "writeback.sources.helm.argocd", "writeback.charts",
)  # fmt: skip
KUSTOMIZE_ENGINE = ("writeback.sources.kustomize.model", "writeback.sources.kustomize.overlay",
                    "writeback.adapters.kustomize")  # fmt: skip
PROBE = """
import json, sys
import writeback.cli
code = writeback.cli.main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": sorted(m for m in sys.modules if m.startswith("writeback."))}))
"""
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  namespace: shop
data:
  mode: %s
"""


def _run(*args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                          check=False, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return {**found, "out": done.stdout}


def test_a_plain_diff_imports_nothing_of_the_helm_or_kustomize_engine(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "web.yaml").write_text(CONFIGMAP % "strict")
    dump = tmp_path / "live.yaml"
    dump.write_text(CONFIGMAP % "relaxed")

    found = _run("diff", "-o", "json", "--live", str(dump), "--repo", str(repo))

    assert found["code"] == 0 and '"relaxed"' in str(found["out"])  # the drift was found: the run did its work
    loaded = found["loaded"]
    assert isinstance(loaded, list)
    assert "writeback.sources.helm.source" in loaded and "writeback.sources.kustomize.source" in loaded  # registered
    assert [m for m in HEAVY + KUSTOMIZE_ENGINE if m in loaded] == []


def test_a_kustomize_diff_imports_the_kustomize_build_it_runs(tmp_path: Path, kustomize_bin: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "web.yaml").write_text(CONFIGMAP % "strict")
    (repo / "kustomization.yaml").write_text("resources:\n  - web.yaml\n")
    dump = tmp_path / "live.yaml"
    dump.write_text(CONFIGMAP % "relaxed")

    env = {**os.environ, "WRITEBACK_KUSTOMIZE": str(kustomize_bin)}
    found = _run("diff", "-o", "json", "--live", str(dump), "--repo", str(repo), env=env)

    assert found["code"] == 0 and '"relaxed"' in str(found["out"])  # found through `kustomize build`
    loaded = found["loaded"]
    assert isinstance(loaded, list)
    assert "writeback.adapters.kustomize" in loaded  # a diff builds; the overlay model is imported by a plan
    assert [m for m in HEAVY if m in loaded] == []
