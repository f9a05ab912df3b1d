"""The scale benchmark harness (bench/bench_scale.py) still works: a smoke size, one round. Not a timing."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from bench_scale import measure_scale  # noqa: E402


@pytest.mark.controlplane
def test_scale_harness_loads_measures_and_counts_requests(controlplane, tmp_path: Path) -> None:
    prefix = f"wb-scale-{uuid.uuid4().hex[:6]}"
    try:
        result = measure_scale(
            objects=30,
            rounds=1,
            kubeconfig=controlplane.kubeconfig,
            kubectl=controlplane.bin_dir / "kubectl",
            workdir=tmp_path,
            namespace_prefix=prefix,
            warmup=False,
        )
    finally:
        names = [f"{prefix}-{i}" for i in range(10)]
        controlplane.kubectl("delete", "namespace", "--wait=false", "--ignore-not-found", *names)
    # the harness itself checked that every floor run listed all 30 objects and that every diff wrote back
    # exactly the three people's edits; here: what it reports
    assert result.objects == 30
    assert result.edited_files == 3  # one file per changed object
    summary = result.summary()
    assert set(result.runs) == {"floor (diff)", "writeback diff", "floor (plan)", "writeback plan"}
    for name, runs in result.runs.items():
        assert len(runs) == 1, name
        run = runs[0].run
        assert run.wall > 0 and run.cpu > 0 and run.peak_rss > 10 * 2**20, name
    # API requests from the apiserver's own metric: one list per kind and namespace (10 apps in 10 namespaces,
    # one page each), and writeback's dry-runs for the three drifted objects only
    floor = summary["floor (diff)"]["requests_by_kind"]
    assert floor == {"LIST configmaps": 10, "LIST deployments": 10, "LIST services": 10}
    diff = summary["writeback diff"]["requests_by_kind"]
    assert {k: v for k, v in diff.items() if k.startswith("LIST")} == floor
    dry_runs = {k: v for k, v in diff.items() if "dry-run" in k}
    assert dry_runs == {
        "POST deployments (dry-run)": 1,
        "POST configmaps (dry-run)": 1,
        "POST services (dry-run)": 1,
    }
