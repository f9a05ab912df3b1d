"""Objects a controller scaled through ``/scale`` on the real kube-apiserver (issue 23 §1's leftover): the settle
stage takes them (their managers: the applier's Apply, the Deployment controller's status and
``kube-controller-manager``'s ``/scale`` Update), with the very report the normal path gives; a service cycle after
such a scale decides that object alone, as a cold cycle does.

Git is committed an hour before the sync, so the applier's Apply is later than Git's last change.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import configmap, sync, write
from tests.planning.test_warm_cycles import World, same_as_cold
from tests.support.gitrepos import git, init_repo
from tests.support.objects import deployment
from writeback.adapters.git import revisions
from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.watching import WatchingCluster
from writeback.bodies import CompactBody
from writeback.drift.engine import (
    EngineOptions,
    GitChanges,
    compute_drift,
    prepare_object,
    report_to_json,
    settle_context,
    settle_first,
)
from writeback.drift.preparing import is_trimmed
from writeback.kube.refs import ObjectRef
from writeback.model import Decision, DesiredObject, LiveObject, Rule
from writeback.pipeline.detecting import detect
from writeback.pipeline.targets import Edges, TargetSpec
from writeback.pipeline.warming import WarmState

pytestmark = pytest.mark.controlplane


def scale(world: World, name: str, replicas: int, *, seen: bool = True) -> None:
    """Scale as the HPA does (``kube-controller-manager`` through /scale); ``seen``: wait for the watch cache."""
    world.controlplane.kubectl("patch", "deployment", name, "-n", world.namespace, "--subresource=scale",
                               "--field-manager=kube-controller-manager", "-p",
                               f'{{"spec":{{"replicas":{replicas}}}}}')  # fmt: skip
    if seen:
        world.seen("deployment", name)


@pytest.fixture
def world(controlplane: Any, k8s: Any, namespace: str, tmp_path: Path) -> Iterator[World]:
    repo = tmp_path / "repo"
    init_repo(repo)
    files = [
        write(repo, "apps/api.yaml", deployment("api", namespace=namespace, replicas=2)),
        write(repo, "apps/cfg.yaml", configmap("cfg", {"k": "v1"})),
    ]
    git("add", "-A", cwd=repo)
    an_hour_ago = {"GIT_COMMITTER_DATE": f"@{int(time.time()) - 3600} +0000"}
    subprocess.run(["git", "commit", "-qm", "apps"], cwd=repo, check=True, env={**os.environ, **an_hour_ago})
    first = revisions.head_commit(repo)
    assert first is not None
    sync(controlplane, "argocd-server-side", namespace, *files)
    cache = WatchingCluster(cluster=KubeCluster(api_client=k8s), api_client=k8s)
    spec = TargetSpec(name="warm", path="apps", namespaces=(namespace,))
    w = World(controlplane=controlplane, namespace=namespace, repo=repo, first=first, cache=cache, spec=spec)
    try:
        scale(w, "api", 4, seen=False)  # before the first cycle starts the watch cache
        w.cycle()
        yield w
    finally:
        cache.stop()


def test_a_deployment_scaled_through_scale_is_settled_with_the_normal_paths_report(world: World) -> None:
    cluster = KubeCluster.connect(kubeconfig=world.controlplane.kubeconfig)
    ref = ObjectRef(api_version="apps/v1", kind="Deployment", namespace=world.namespace, name="api")
    body = cluster.get_object(ref=ref)
    assert body is not None
    managers = {(e["manager"], e["operation"], e.get("subresource", "")) for e in body["metadata"]["managedFields"]}
    assert ("kube-controller-manager", "Update", "scale") in managers, managers
    live = LiveObject(ref=ref, body=body)
    git_body = deployment("api", namespace=world.namespace, replicas=2)
    desired = DesiredObject(ref=ref, body=git_body, file="apps/api.yaml", document=0)
    by_file = revisions.change_times(world.repo, world.first, path="apps", since=int(time.time()) - 7200)
    assert by_file is not None
    settle = settle_context(GitChanges(since=int(time.time()) - 7200, by_file=by_file))
    options = EngineOptions(explain=False)

    prep = prepare_object(live=live, desired=desired, options=options, settle=settle)

    assert prep.by_managers and not prep.settled and prep.live_body is None  # not normalized
    staged = compute_drift(live=[live], desired=[desired], options=options, settle=settle)
    normal = compute_drift(live=[live], desired=[desired], options=options)
    assert staged == normal
    (drift,) = staged.drifts
    assert (drift.decision, drift.rule, drift.live) == (Decision.IGNORE, Rule.CONTROLLER_OWNED, 4)


def test_a_service_cycle_after_a_scale_decides_that_object_alone_as_a_cold_cycle_does(world: World) -> None:
    for replicas in (6, 2, 5):  # 2: Git's value, no drift at all
        scale(world, "api", replicas)
        warm = world.cycle()
        assert world.memo.recomputed == 1
        same_as_cold(warm, world.cold())
        assert warm.detection is not None
        decided = [(d.decision, d.live) for d in warm.detection.report.drifts if d.resource.name == "api"]
        assert decided == ([] if replicas == 2 else [(Decision.IGNORE, replicas)]), decided
    world.cycle()
    assert world.memo.recomputed == 0


def test_a_one_shot_run_keeps_the_scaled_deployment_without_managed_fields_and_reports_as_the_service(
    world: World,
) -> None:
    """A one-shot ``diff`` keeps of the scaled Deployment neither managedFields nor status (its ownership of the one
    replicas line is read already), of the ConfigMap only a compact copy; the service keeps both whole: one report.
    Scaled back to Git's value, the Deployment is settled outright and compact too."""
    for replicas, kept in ((4, dict), (2, CompactBody)):
        scale(world, "api", replicas)
        cluster = KubeCluster.connect(kubeconfig=world.controlplane.kubeconfig)
        one_shot = detect(spec=world.spec, repo=world.repo, edges=Edges(cluster=cluster))
        service = detect(spec=world.spec, repo=world.repo, edges=Edges(cluster=cluster, memo=WarmState()))
        assert report_to_json(one_shot.report) == report_to_json(service.report)
        live = {o.ref.name: o.body for o in one_shot.live}
        assert type(live["api"]) is kept and type(live["cfg"]) is CompactBody
        assert "managedFields" not in live["api"]["metadata"] and "status" not in live["api"]
        assert live["api"]["metadata"]["uid"] and live["api"]["metadata"]["resourceVersion"]
        assert all("managedFields" in o.body["metadata"] for o in service.live)
        decided = [(d.decision, d.rule, d.live) for d in one_shot.report.drifts]
        assert decided == ([(Decision.IGNORE, Rule.CONTROLLER_OWNED, 4)] if replicas == 4 else []), decided


def test_an_argo_cd_ignore_rule_keeps_the_scaled_deployment_whole(world: World) -> None:
    """With an Argo CD (or Flux) ignore rule, which reads the normalized bodies, the /scale write's object is kept
    whole and prepared again; a trimmed one met by such a rule is a bug that raises, never a different report."""
    cluster = KubeCluster.connect(kubeconfig=world.controlplane.kubeconfig)
    ref = ObjectRef(api_version="apps/v1", kind="Deployment", namespace=world.namespace, name="api")
    body = cluster.get_object(ref=ref)
    assert body is not None
    live = LiveObject(ref=ref, body=body)
    desired = DesiredObject(ref=ref, body=deployment("api", namespace=world.namespace, replicas=2),
                            file="apps/api.yaml", document=0)  # fmt: skip
    by_file = revisions.change_times(world.repo, world.first, path="apps", since=int(time.time()) - 7200)
    assert by_file is not None
    settle = settle_context(GitChanges(since=int(time.time()) - 7200, by_file=by_file))
    assert settle is not None
    rules = ({"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]},)
    argo = EngineOptions(explain=False, argocd_ignore=rules)

    whole = settle_first(live=live, desired=desired, options=argo, settle=settle)
    trimmed = settle_first(live=live, desired=desired, options=EngineOptions(explain=False), settle=settle)

    assert whole is not None and trimmed is not None
    assert whole.live is live and not is_trimmed(whole)
    assert is_trimmed(trimmed) and "managedFields" not in trimmed.live.body["metadata"]
    staged = compute_drift(live=[live], desired=[desired], options=argo, prepared={ref.identity: whole})
    assert staged == compute_drift(live=[live], desired=[desired], options=argo)
    (drift,) = staged.drifts
    assert (drift.decision, drift.rule) == (Decision.IGNORE, Rule.ARGOCD_IGNORE_DIFFERENCES), drift
    with pytest.raises(RuntimeError, match="managedFields were let go"):
        compute_drift(live=[trimmed.live], desired=[desired], options=argo, prepared={ref.identity: trimmed})
