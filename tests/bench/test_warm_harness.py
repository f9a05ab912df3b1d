"""The warm-cycle benchmark (bench/bench_warm.py) still works: a smoke size, one warm cycle, on both worlds.
Not a timing."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

from tests.controlplane.cp import ControlPlane

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from bench_warm import measure_warm, summarize  # noqa: E402
from worlds import make_world  # noqa: E402


@pytest.mark.controlplane
@pytest.mark.parametrize(
    ("kind", "objects", "lists", "drifts", "written"),
    [
        ("basic", 30, 30, 3, 3),  # 3 kinds x 10 namespaces; one person's edit of each kind, all written back
        ("appliers", 60, 60, 6, 4),  # 6 kinds x 10 namespaces; one edit of each kind, the Role's and
        # RoleBinding's flagged for review
    ],
)
def test_a_warm_cycle_lists_nothing_parses_nothing_and_asks_nothing(
    controlplane: ControlPlane, tmp_path: Path, kind: str, objects: int, lists: int, drifts: int, written: int
) -> None:
    prefix = f"wb-warm-{uuid.uuid4().hex[:6]}"
    world = make_world(kind, objects, namespace_prefix=prefix)
    try:
        world.write_repo(tmp_path / "repo")
        world.load(kubeconfig=controlplane.kubeconfig, kubectl=controlplane.bin_dir / "kubectl", workdir=tmp_path)
        out = measure_warm(world=world, kubeconfig=controlplane.kubeconfig, repo=tmp_path / "repo", rounds=1)
    finally:
        controlplane.kubectl("delete", "namespace", "--wait=false", "--ignore-not-found", *world.namespaces)
    s = summarize(out)
    assert s["cold"]["lists"] == lists  # one list per kind and namespace: the informers' initial lists
    assert s["cold"]["parsed_texts"] >= 10  # the app files, at least once
    assert s["warm_lists"] == [0]
    assert s["warm_parsed_texts"] == [0]
    # the people's edits, found again from the cache (each cycle checked the objects and decisions themselves)
    assert s["decided_objects"] == [drifts]
    assert s["writeback_drifts"] == [written]
    # nothing new: the results of the cold cycle are kept (pipeline.warming), no request at all, no object computed
    assert s["warm_requests"] == {} and s["warm_dry_runs"] == [0]
    assert s["warm_recomputed"] == [0]
    # the baseline is a bare list of the same kinds and namespaces, nothing else
    assert s["warm_cpu"][0] > 0 and s["floor_cpu"][0] > 0 and s["floor_in_process_cpu"][0] > 0
    assert 0 < s["list_cpu"][0] < s["floor_cpu"][0]  # the list alone: its process without start and imports
    assert s["floor_peak_rss_mib"][0] > 10
    assert s["memory_mib"]["VmHWM"] >= s["memory_mib"]["VmRSS"] > 0
    assert json.dumps(s)  # the --json output


@pytest.mark.controlplane
def test_with_churn_each_warm_cycle_sees_the_changed_objects_and_still_lists_nothing(
    controlplane: ControlPlane, tmp_path: Path
) -> None:
    prefix = f"wb-churn-{uuid.uuid4().hex[:6]}"
    world = make_world("basic", 300, namespace_prefix=prefix)  # 1% of 300: three Deployments
    try:
        world.write_repo(tmp_path / "repo")
        world.load(kubeconfig=controlplane.kubeconfig, kubectl=controlplane.bin_dir / "kubectl", workdir=tmp_path)
        out = measure_warm(
            world=world, kubeconfig=controlplane.kubeconfig, repo=tmp_path / "repo", rounds=2, churn_fraction=0.01
        )
    finally:
        controlplane.kubectl("delete", "namespace", "--wait=false", "--ignore-not-found", *world.namespaces)
    s = summarize(out)
    assert s["churned"] == 3
    # each cycle saw all three at the replicas set just before it (6, then 5): the informers delivered them
    assert s["churn_seen"] == [3, 3]
    assert s["warm_lists"] == [0, 0] and s["warm_parsed_texts"] == [0, 0]
    assert s["decided_objects"] == [3, 3]  # the HPA's scaling is still ignored, the people's edits still found
