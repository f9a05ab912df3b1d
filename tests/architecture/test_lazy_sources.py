"""A run that renders no chart imports nothing of the Helm engine: the source registry lists the Helm source kind by
its light module (its name, flags and config keys, and which controller objects it claims), and the engine, the
helm adapter and the tracer are imported when a Helm target runs. A fresh interpreter, as a command starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("writeback.sources.helm.engine", "writeback.sources.helm.running", "writeback.adapters.helm")
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


def _run(*args: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return {**found, "out": done.stdout}


def test_a_plain_diff_imports_nothing_of_the_helm_engine(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "web.yaml").write_text(CONFIGMAP % "strict")
    dump = tmp_path / "live.yaml"
    dump.write_text(CONFIGMAP % "relaxed")

    found = _run("diff", "-o", "json", "--live", str(dump), "--repo", str(repo))

    assert found["code"] == 0 and '"relaxed"' in str(found["out"])  # the drift was found: the run did its work
    loaded = found["loaded"]
    assert isinstance(loaded, list)
    assert "writeback.sources.helm.source" in loaded  # registered
    assert [m for m in HEAVY if m in loaded] == []
