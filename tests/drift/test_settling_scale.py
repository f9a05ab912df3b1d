"""The settle stage for objects a controller scaled through ``/scale`` (issue 23 §1's leftover): besides the applier's
Apply and controllers' status, a controller's ``/scale`` write that owns exactly ``spec.replicas`` is allowed, and the
one difference it can make is decided by the same rules as the normal path: the report is the normal path's,
drift for drift. Only without ``--explain`` (whose dropped list stays the normal path's for these objects).
"""

from __future__ import annotations

import copy
from typing import Any

from tests.core.support import deployment_git, desired_obj, entry, live_obj
from tests.drift.test_settling import FILE, applier_live, changes
from writeback.drift.engine import EngineOptions, compute_drift, needs_dry_run, prepare_object, settle_context
from writeback.model import Decision, DryRun, DryRunKind, LiveObject, Rule
from writeback.settings import IgnoreRule

SCALE: dict[str, Any] = {"f:spec": {"f:replicas": {}}}
QUIET = EngineOptions(explain=False)  # plan, run, the service, diff without --explain


def scaled_live(replicas: int = 7, *, manager: str = "kube-controller-manager") -> dict[str, Any]:
    """The applier's object after ``manager`` scaled it through /scale: the Update takes spec.replicas from the
    applier (as the real kube-apiserver does when the value changes)."""
    live = applier_live()
    del live["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:replicas"]
    live["spec"]["replicas"] = replicas
    live["metadata"]["managedFields"].append(entry(manager, copy.deepcopy(SCALE), subresource="scale",
                                                   time="2024-05-02T03:07:00Z"))  # fmt: skip
    return live


def by_stage(live: LiveObject, options: EngineOptions = QUIET, **kw: Any) -> tuple[Any, Any, Any]:
    """The report with the first stage, the one without it, and the stage's preparation."""
    desired = desired_obj(deployment_git(), file=FILE)
    settle = settle_context(changes())
    with_stage = compute_drift(live=[live], desired=[desired], options=options, settle=settle, **kw)
    without = compute_drift(live=[live], desired=[desired], options=options, **kw)
    return with_stage, without, prepare_object(live=live, desired=desired, options=options, settle=settle)


def test_a_controllers_scale_write_is_settled_with_the_normal_paths_ignored_replicas_line() -> None:
    live = live_obj(scaled_live())
    settled, compared, prep = by_stage(live)
    assert prep.by_managers and not prep.settled and prep.live_body is None  # nothing normalized
    assert settled == compared
    (drift,) = settled.drifts
    assert (drift.decision, drift.rule, drift.manager, drift.live, drift.git) == (
        Decision.IGNORE, Rule.CONTROLLER_OWNED, "kube-controller-manager", 7, 3)  # fmt: skip
    assert drift.reason == "owned by kube-controller-manager (scale subresource)"
    desired = desired_obj(deployment_git(), file=FILE)
    assert not needs_dry_run(live=live, desired=desired, options=QUIET, prepared=prep)
    # scaled back to Git's value: no drift, settled whole
    settled, compared, prep = by_stage(live_obj(scaled_live(3)))
    assert prep.settled and prep.by_managers and settled == compared and settled.drifts == ()


def test_an_autoscaled_object_and_a_configured_ignore_rule_decide_as_the_normal_path_does() -> None:
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "web", "namespace": "shop"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}  # fmt: skip
    live = live_obj(scaled_live())
    desired = desired_obj(deployment_git(), file=FILE)
    scaler = live_obj(hpa)
    settle = settle_context(changes())
    with_stage = compute_drift(live=[live, scaler], desired=[desired], options=QUIET, settle=settle)
    without = compute_drift(live=[live, scaler], desired=[desired], options=QUIET)
    assert with_stage == without and [d.rule for d in with_stage.drifts if d.resource.kind == "Deployment"] == [
        Rule.CONTROLLER_OWNED
    ]
    rule = IgnoreRule(paths=("spec.replicas",), reason="the HPA owns replicas", kind="Deployment")
    settled, compared, _ = by_stage(live, EngineOptions(explain=False, ignore=(rule,)))
    assert settled == compared and [(d.rule, d.reason) for d in settled.drifts] == [
        (Rule.IGNORE_RULE, "the HPA owns replicas")
    ]


def test_argo_cd_ignore_differences_or_a_dry_run_send_the_object_the_normal_path() -> None:
    live = live_obj(scaled_live())
    argo = ({"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]},)
    settled, compared, _ = by_stage(live, EngineOptions(explain=False, argocd_ignore=argo))
    assert settled == compared and [d.rule for d in settled.drifts] == [Rule.ARGOCD_IGNORE_DIFFERENCES]
    dry = {live.ref.identity: DryRun(kind=DryRunKind.CREATE, body=copy.deepcopy(scaled_live(7)))}
    settled, compared, _ = by_stage(live, dry_run=dry)
    assert settled == compared


def test_a_persons_scale_a_second_manager_or_explain_are_compared() -> None:
    desired = desired_obj(deployment_git(), file=FILE)
    settle = settle_context(changes())
    person = live_obj(scaled_live(manager="kubectl"))  # a person's kubectl scale
    prep = prepare_object(live=person, desired=desired, options=QUIET, settle=settle)
    assert not prep.by_managers
    settled, compared, _ = by_stage(person)
    assert settled == compared and [d.decision for d in settled.drifts] == [Decision.WRITEBACK]
    # the applier owns replicas too (it applied again since): its ownership is the normal path's to read
    both_own = scaled_live()
    both_own["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:replicas"] = {}
    prep = prepare_object(live=live_obj(both_own), desired=desired, options=QUIET, settle=settle)
    assert not prep.by_managers
    # the /scale entry owns more than replicas
    wider = scaled_live()
    wider["metadata"]["managedFields"][-1]["fieldsV1"] = {"f:spec": {"f:replicas": {}, "f:paused": {}}}
    assert not prepare_object(live=live_obj(wider), desired=desired, options=QUIET, settle=settle).by_managers
    # Git does not declare replicas: the normal path (a scale of replicas nobody owned, a default, ...)
    no_replicas = deployment_git()
    del no_replicas["spec"]["replicas"]
    prep = prepare_object(live=live_obj(scaled_live()), desired=desired_obj(no_replicas, file=FILE), options=QUIET,
                          settle=settle)  # fmt: skip
    assert not prep.by_managers
    # --explain lists the normal path's dropped fields for it
    live = live_obj(scaled_live())
    explained = EngineOptions()
    assert not prepare_object(live=live, desired=desired, options=explained, settle=settle).by_managers
    settled, compared, _ = by_stage(live, explained)
    assert settled == compared
