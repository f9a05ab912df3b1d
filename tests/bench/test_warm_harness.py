"""The warm-cycle benchmark (bench/bench_warm.py) still works: a smoke size, one warm cycle. Not a timing."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from bench_warm import measure_warm, summarize  # noqa: E402
from scale_cluster import load_cluster, plan_world, write_repo  # noqa: E402


@pytest.mark.controlplane
def test_a_warm_cycle_lists_nothing_parses_nothing_and_asks_only_the_dry_runs(controlplane, tmp_path: Path) -> None:
    prefix = f"wb-warm-{uuid.uuid4().hex[:6]}"
    world = plan_world(30, namespace_prefix=prefix)
    try:
        write_repo(world, tmp_path / "repo")
        load_cluster(world, kubeconfig=controlplane.kubeconfig, kubectl=controlplane.bin_dir / "kubectl",
                     workdir=tmp_path)  # fmt: skip
        out = measure_warm(world=world, kubeconfig=controlplane.kubeconfig, repo=tmp_path / "repo", rounds=1)
    finally:
        controlplane.kubectl("delete", "namespace", "--wait=false", "--ignore-not-found", *world.namespaces)
    s = summarize(out)
    assert s["cold"]["lists"] == 30  # one list per kind and namespace: the informers' initial lists
    assert s["cold"]["parsed_texts"] >= 10  # the ten app files, at least once
    assert s["warm_lists"] == [0]
    assert s["warm_parsed_texts"] == [0]
    assert s["writeback_drifts"] == [3]  # the three people's edits, found again from the cache
    # nothing but the three dry-runs of the drifted objects (one per object, whichever kind of dry-run)
    assert sum(s["warm_requests"].values()) == 3
    assert all("dry-run" in what for what in s["warm_requests"]), s["warm_requests"]
    assert s["warm_cpu"][0] > 0 and s["floor_cpu"][0] > 0 and s["floor_in_process_cpu"][0] > 0
