"""docs/scale.md's measuring scripts still work: bench/scale_model.py splits one real `diff` by stage and counts
what the model needs; bench/scale_fit.py turns two such points into the model's tables. A smoke size, not a
timing."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from worlds import make_world  # noqa: E402


@pytest.mark.controlplane
def test_the_model_inputs_of_a_small_world_and_its_fitted_tables(controlplane: Any, tmp_path: Path) -> None:
    prefix = f"wb-model-{uuid.uuid4().hex[:6]}"
    world = make_world("basic", 30, namespace_prefix=prefix)
    try:
        world.write_repo(tmp_path / "repo")
        world.load(kubeconfig=str(controlplane.kubeconfig), kubectl=controlplane.bin_dir / "kubectl", workdir=tmp_path)
        out = tmp_path / "model.json"
        subprocess.run(
            [sys.executable, str(BENCH / "scale_model.py"), "--kubeconfig", str(controlplane.kubeconfig),
             "--repo", str(tmp_path / "repo"), "--path", "apps", "--json", str(out)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    finally:
        names = [f"{prefix}-{i}" for i in range(10)]
        controlplane.kubectl("delete", "namespace", "--wait=false", "--ignore-not-found", *names)
    got = json.loads(out.read_text())
    assert got["absent"] == []  # every stage the model splits was found and wrapped
    assert got["live"] == got["desired"] == 30
    counts = got["counts"]
    assert counts["list_pages"] == 30  # 3 kinds x 10 namespaces, one page each
    assert counts["list_bytes"] > 30 * 500
    assert counts["dry_runs"] == 3  # the three people's edits
    assert counts.get("prepare_settled", 0) + counts.get("prepare_other", 0) == 30
    assert counts["prepare_other"] >= 3
    assert set(got["rss_after_mib"]) >= {"git_side", "snapshot", "compute_drift"}
    assert got["peak_rss_mib"] >= got["rss_after_mib"]["snapshot"] >= got["rss_imported_mib"] > 10
    nested = ("list_requests_and_json", "settle_in_snapshot")  # inside `snapshot`: not added twice
    assert got["cycle_cpu"] >= sum(v for k, v in got["stages_cpu"].items() if k not in nested) * 0.99
    # the fit from the same point twice: fixed costs only, and the whole cycle predicted exactly
    tables = subprocess.run(
        [sys.executable, str(BENCH / "scale_fit.py"), "--model", str(out), str(out)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    assert "| git_side | N |" in tables and "| Git side |" in tables
    row = next(line for line in tables.splitlines() if line.startswith("| 30 |"))
    predicted, measured = row.split("|")[2].split("/")
    assert abs(float(predicted) - float(measured)) < 0.01
