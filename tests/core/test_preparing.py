"""prepare_object: the per-object work needs_dry_run and compute_drift share gives the same report as redoing it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.support import applied_fields, defaulted_live, deployment_git, desired_obj, entry, k, live_obj, ref_of
from writeback.drift.engine import EngineOptions, compute_drift, needs_dry_run, prepare_object
from writeback.model import Decision, DryRun, DryRunKind


def edited(live: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    live["metadata"]["managedFields"] = [
        entry("argocd-controller", applied_fields(), operation="Apply"),
        entry("kubectl-edit", fields, time="2024-05-02T03:07:00Z"),
    ]
    return live


def image_edit() -> dict[str, Any]:
    live = defaulted_live(deployment_git())
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/shop/web:1.4.3"
    return edited(live, {"f:spec": {"f:template": {"f:spec": {"f:containers": {k(name="web"): {"f:image": {}}}}}}})


def defaults_only() -> dict[str, Any]:
    return edited(defaulted_live(deployment_git()), {})


@pytest.mark.parametrize("offline", [False, True])
@pytest.mark.parametrize("make_live", [image_edit, defaults_only])
def test_a_prepared_object_gives_the_same_report_and_dry_run_answer(offline: bool, make_live: Any) -> None:
    live, desired = live_obj(make_live()), desired_obj(deployment_git())
    options = EngineOptions(offline=offline)
    prep = prepare_object(live=live, desired=desired, options=options)
    assert prep.settled is (make_live is defaults_only)
    assert needs_dry_run(live=live, desired=desired, options=options, prepared=prep) == needs_dry_run(
        live=live, desired=desired, options=options
    )
    dry = {ref_of(deployment_git()).identity: DryRun(kind=DryRunKind.CREATE, body=defaulted_live(deployment_git()))}
    fresh = compute_drift(live=[live], desired=[desired], options=options, dry_run=dry)
    reused = compute_drift(
        live=[live], desired=[desired], options=options, dry_run=dry, prepared={desired.ref.identity: prep}
    )
    assert reused == fresh
    assert reused.dropped  # the defaults (and server-populated fields) are still explained
    if make_live is image_edit:
        assert [d.decision for d in reused.drifts] == [Decision.WRITEBACK]
    else:
        assert reused.drifts == ()


def test_a_preparation_of_other_objects_or_another_mode_is_not_used() -> None:
    desired = desired_obj(deployment_git())
    stale = prepare_object(live=live_obj(defaults_only()), desired=desired, options=EngineOptions())
    current = live_obj(image_edit())
    report = compute_drift(
        live=[current], desired=[desired], options=EngineOptions(), prepared={desired.ref.identity: stale}
    )
    assert [d.decision for d in report.drifts] == [Decision.WRITEBACK]  # not the stale "no drift"
    assert needs_dry_run(live=current, desired=desired, options=EngineOptions(), prepared=stale)
    online = prepare_object(live=current, desired=desired, options=EngineOptions())
    offline = EngineOptions(offline=True)
    report = compute_drift(live=[current], desired=[desired], options=offline, prepared={desired.ref.identity: online})
    assert report == compute_drift(live=[current], desired=[desired], options=offline)
    assert any(d.rule.endswith("(built-in defaults table)") for d in report.dropped)
