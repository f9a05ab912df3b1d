"""Service cycles that keep their results (``pipeline.warming``) on the real control plane: a warm cycle with nothing
new sends no dry-run and computes no object, and every part of an object's key invalidates it. After each change the
warm cycle's report and change sets are those of a cold cycle (no kept results, a fresh direct connection)."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import configmap, sync, write
from tests.support.gitrepos import commit, init_repo
from tests.support.objects import deployment
from tests.support.polling import wait_until
from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.watching import WatchingCluster
from writeback.kube.refs import ObjectRef
from writeback.model import DryRunKind, LiveObject
from writeback.pipeline.planning import PlanOutcome, plan_target
from writeback.pipeline.targets import Edges, TargetSpec
from writeback.pipeline.warming import WarmState
from writeback.settings import Policy

pytestmark = pytest.mark.controlplane

DRY_RUN_VERBS = ("create", "patch")  # a dry-run create of a twin, a server-side-apply dry-run


@dataclass(kw_only=True)
class World:
    controlplane: Any
    namespace: str
    repo: Path
    first: str  # the first commit
    cache: WatchingCluster
    spec: TargetSpec
    memo: WarmState = field(default_factory=WarmState)
    verbs: Counter[str] = field(default_factory=Counter)

    def cycle(self, spec: TargetSpec | None = None) -> PlanOutcome:
        """A service cycle: the watch cache and the kept results."""
        return plan_target(spec=spec or self.spec, repo=self.repo, edges=Edges(cluster=self.cache, memo=self.memo))

    def cold(self, spec: TargetSpec | None = None) -> PlanOutcome:
        """The same cycle from nothing: a fresh direct connection, nothing kept."""
        cluster = KubeCluster.connect(kubeconfig=self.controlplane.kubeconfig)
        return plan_target(spec=spec or self.spec, repo=self.repo, edges=Edges(cluster=cluster))

    def sent(self, cycle: Any) -> Counter[str]:
        """The API requests ``cycle()`` sent."""
        before = Counter(self.verbs)
        cycle()
        return self.verbs - before

    def seen(self, kind: str, name: str) -> None:
        """Wait until the watch cache holds the object's current version."""
        version = self.controlplane.kubectl(
            "get", kind, name, "-n", self.namespace, "-o", "jsonpath={.metadata.resourceVersion}"
        ).stdout.strip()

        def held() -> bool:
            cached = {(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for i in self.cache.informers
                      for o in i.objects()}  # fmt: skip
            return (name, version) in cached

        wait_until(f"the watch cache holding {kind}/{name} at {version}", held, timeout=15, step=0.05)


def same_as_cold(warm: PlanOutcome, cold: PlanOutcome) -> None:
    assert warm.detection is not None and cold.detection is not None
    assert warm.detection.report == cold.detection.report  # drifts, dropped, notes, warnings: all of it
    assert warm.plan == cold.plan  # the change sets: files, texts, fingerprints


@pytest.fixture
def world(controlplane: Any, k8s: Any, namespace: str, tmp_path: Path) -> Iterator[World]:
    repo = tmp_path / "repo"
    init_repo(repo)
    files = [
        write(repo, "apps/web.yaml", deployment("web", namespace=namespace)),
        write(repo, "apps/cfg.yaml", configmap("cfg", {"k": "v1"})),
        write(repo, "apps/other.yaml", configmap("other", {"k": "v1"})),
    ]
    first = commit(repo, "apps")
    sync(controlplane, "argocd-server-side", namespace, *files)
    # the people's changes: an env var on the Deployment, a value of the ConfigMap
    controlplane.kubectl("set", "env", "deployment/web", "-n", namespace, "HOTFIX=1")
    controlplane.kubectl("patch", "configmap", "cfg", "-n", namespace, "-p", '{"data":{"k":"v2"}}')
    verbs: Counter[str] = Counter()
    cache = WatchingCluster(
        cluster=KubeCluster(api_client=k8s), api_client=k8s, on_request=lambda v: verbs.update((v,))
    )
    spec = TargetSpec(name="warm", path="apps", namespaces=(namespace,))
    w = World(controlplane=controlplane, namespace=namespace, repo=repo, first=first, cache=cache, spec=spec,
              verbs=verbs)  # fmt: skip
    try:
        w.sent(w.cycle)  # the first cycle (the informers list): everything computed, kept
        assert w.memo.recomputed == 3
        yield w
    finally:
        cache.stop()


def test_a_warm_cycle_with_nothing_new_sends_no_request_and_computes_nothing(world: World) -> None:
    outcome: list[PlanOutcome] = []
    sent = world.sent(lambda: outcome.append(world.cycle()))

    assert not any(sent[v] for v in DRY_RUN_VERBS), sent  # the first cycle's 2 dry-runs are not sent again
    assert sum(sent.values()) == 0, sent  # no list, no get, no discovery either
    assert world.memo.recomputed == 0
    assert world.memo.git_reused and world.memo.plan_reused
    warm = outcome[0]
    assert warm.detection is not None
    assert {(d.resource.name, d.decision.value) for d in warm.detection.report.drifts if d.decision.written} == {
        ("web", "writeback"),
        ("cfg", "writeback"),
    }
    same_as_cold(warm, world.cold())


def test_a_changed_live_object_is_computed_again_and_only_it(world: World) -> None:
    world.controlplane.kubectl("patch", "configmap", "other", "-n", world.namespace, "-p", '{"data":{"k":"v9"}}')
    world.seen("configmap", "other")
    warm: list[PlanOutcome] = []

    sent = world.sent(lambda: warm.append(world.cycle()))

    assert world.memo.recomputed == 1
    assert sent["create"] == 1 and sent["patch"] == 0, sent  # its dry-run only (a new resourceVersion)
    assert world.memo.git_reused and not world.memo.plan_reused  # new drift: new change sets
    same_as_cold(warm[0], world.cold())


def test_a_new_held_back_drift_is_listed_without_patching_again(world: World) -> None:
    # a controller scales the Deployment (as the HPA does): drift that is ignored, listed as not written back
    world.controlplane.kubectl("patch", "deployment", "web", "-n", world.namespace, "--subresource=scale",
                               "--field-manager=kube-controller-manager", "-p", '{"spec":{"replicas":4}}')  # fmt: skip
    world.seen("deployment", "web")
    warm: list[PlanOutcome] = []

    sent = world.sent(lambda: warm.append(world.cycle()))

    assert world.memo.recomputed == 1
    assert world.memo.plan_reused  # the same written drifts: the change sets are not located or patched again
    assert sent == Counter({"create": 1}), sent  # web's dry-run only: its live resourceVersion is a new one
    cold = world.cold()
    same_as_cold(warm[0], cold)
    assert any("replicas" in str(d.path) for cs in cold.plan.changesets for d in cs.ignored)


def test_a_changed_git_document_is_read_again(world: World) -> None:
    write(world.repo, "apps/other.yaml", configmap("other", {"k": "v1", "added": "in Git"}))
    commit(world.repo, "other: a key")  # also a new applied revision (the head, with no controller): all computed
    warm: list[PlanOutcome] = []

    sent = world.sent(lambda: warm.append(world.cycle()))

    assert not world.memo.git_reused and not world.memo.plan_reused  # a new tree at the path: Git read again
    assert world.memo.recomputed == 3
    # web's and cfg's dry-run answers are kept (the same manifests, live versions and server); other's is new
    assert sent["create"] == 1 and world.memo.dry_runs_reused == 2, sent
    same_as_cold(warm[0], world.cold())
    assert warm[0].detection is not None
    assert any(d.resource.name == "other" and d.path for d in warm[0].detection.report.drifts)
    world.cycle()
    assert (world.memo.git_reused, world.memo.recomputed) == (True, 0)  # read again: this cycle's memo


def test_a_commit_outside_the_path_reads_no_git(world: World) -> None:
    commit(world.repo, "docs", files={"README.md": "the apps\n"})
    warm: list[PlanOutcome] = []

    sent = world.sent(lambda: warm.append(world.cycle()))

    assert world.memo.git_reused  # the same tree at apps/: nothing read or parsed
    assert not world.memo.plan_reused  # the repository's tree changed: change sets built again
    assert world.memo.recomputed == 3  # a new applied revision
    assert sum(sent.values()) == 0, sent
    same_as_cold(warm[0], world.cold())


def test_another_applied_revision_computes_every_object_again(world: World) -> None:
    write(world.repo, "apps/web.yaml", deployment("web", namespace=world.namespace, image="nginx:1.27"))
    commit(world.repo, "web: nginx 1.27")  # not synced: the head is ahead of the applied revision
    at_first = replace(world.spec, revision=world.first)

    warm = world.cycle(at_first)
    assert world.memo.recomputed == 3
    same_as_cold(warm, world.cold(at_first))
    assert warm.detection is not None and warm.detection.report.revision == world.first

    world.cycle(at_first)
    assert world.memo.recomputed == 0 and world.memo.git_reused


def test_another_policy_computes_every_object_again(world: World) -> None:
    flagged = replace(world.spec, policy=Policy(flag_paths=("data.k",)))

    warm = world.cycle(flagged)

    assert world.memo.recomputed == 3
    same_as_cold(warm, world.cold(flagged))
    assert warm.detection is not None
    assert {d.decision.value for d in warm.detection.report.drifts if d.resource.name == "cfg"} == {"flag"}


def test_a_cycle_changes_none_of_the_cached_objects(world: World) -> None:
    held = [o for i in world.cache.informers for o in i.objects()]
    before = copy.deepcopy(held)
    world.memo = WarmState()  # everything computed again, over the very objects of the watch cache

    world.cycle()

    assert held == before
    assert [o for i in world.cache.informers for o in i.objects()] == before


def test_dry_run_answers_are_kept_by_manifest_live_version_and_server_version() -> None:
    memo = WarmState()
    asked: list[str] = []

    def ask() -> dict[str, Any]:
        asked.append("asked")
        return {"answer": len(asked)}

    def live(version: str) -> LiveObject:
        ref = ObjectRef(api_version="v1", kind="ConfigMap", namespace="ns", name="cm")
        return LiveObject(ref=ref, body={"metadata": {"resourceVersion": version}})

    manifest = {"kind": "ConfigMap", "data": {"k": "v1"}}
    first = memo.dry_run(kind=DryRunKind.CREATE, manifest=manifest, live=live("1"), server="v1.36", ask=ask)
    memo.dry_runs_done()
    again = memo.dry_run(kind=DryRunKind.CREATE, manifest=dict(manifest), live=live("1"), server="v1.36", ask=ask)
    memo.dry_runs_done()
    assert again is first and len(asked) == 1
    for changed_manifest, changed_live, changed_server in (
        ({"kind": "ConfigMap", "data": {"k": "v2"}}, live("1"), "v1.36"),
        (manifest, live("2"), "v1.36"),
        (manifest, live("1"), "v1.37"),
    ):
        memo.dry_run(kind=DryRunKind.CREATE, manifest=changed_manifest, live=changed_live, server=changed_server,
                     ask=ask)  # fmt: skip
    assert len(asked) == 4  # each part of the key asks again
    memo.dry_runs_done()
    memo.dry_run(kind=DryRunKind.CREATE, manifest=manifest, live=live("1"), server="v1.36", ask=ask)
    assert len(asked) == 5  # only the answers the last cycle used are kept


def test_live_objects_that_go_or_come_are_decided_and_the_rest_kept_in_the_index(world: World) -> None:
    """The engine's kept index (``drift.indexing``): a deleted object (Git's, now missing) and a person's new one (not
    in Git) are decided, the others' parts kept; each warm report is the cold one."""
    world.controlplane.kubectl("delete", "configmap", "other", "-n", world.namespace)
    held = lambda: all(o["metadata"]["name"] != "other" for i in world.cache.informers for o in i.objects())  # noqa: E731
    wait_until("the watch cache without other", held, timeout=15, step=0.05)
    warm = world.cycle()
    assert world.memo.recomputed == 0  # a missing object is no outcome to compute: its part is made again
    same_as_cold(warm, world.cold())
    assert warm.detection is not None
    assert [d.decision.value for d in warm.detection.report.drifts if d.resource.name == "other"] == ["deleted"]

    world.controlplane.kubectl("create", "configmap", "extra", "-n", world.namespace, "--from-literal=k=v")
    world.seen("configmap", "extra")
    warm = world.cycle()
    assert world.memo.recomputed == 0
    same_as_cold(warm, world.cold())
    assert warm.detection is not None
    assert [d.decision.value for d in warm.detection.report.drifts if d.resource.name == "extra"] == ["new"]

    world.controlplane.kubectl("create", "configmap", "other", "-n", world.namespace, "--from-literal=k=v1")
    world.seen("configmap", "other")
    warm = world.cycle()
    assert world.memo.recomputed == 1  # other is back: decided again, and only it
    same_as_cold(warm, world.cold())
    world.cycle()
    assert world.memo.recomputed == 0
