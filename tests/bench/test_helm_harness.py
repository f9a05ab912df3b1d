"""bench/bench_helm.py at a small size: it counts the renders of a cold and a warm plan and checks the plan."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from bench_helm import PODINFO_CHANGES, Scenario, measure  # noqa: E402

pytestmark = pytest.mark.controlplane


def test_the_harness_counts_renders_within_the_budget(helm_bin: Path) -> None:
    podinfo = Scenario(name="podinfo", chart="podinfo", deployment="deployment/web-podinfo",
                       values="replicaCount: 2\n", changes=PODINFO_CHANGES)  # fmt: skip
    (f,) = measure([(podinfo, 2)])
    assert (f.fields, f.budget, f.cold_load) == (2, 7, 1)
    assert 2 <= f.cold_total <= f.budget and f.cold_locate_and_proof == f.cold_total - 1
    assert f.warm_total == 0 and f.within_budget
