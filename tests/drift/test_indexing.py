"""The engine's kept index (``drift.indexing``, issue 23 §2): advanced to the next cycle's objects, it names the
identities to decide again, and the report assembled from its kept parts is the one computed from nothing, after
every kind of change; where it cannot follow a change exactly it is built anew."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from tests.core.support import deployment_git, desired_obj, live_obj
from tests.drift.test_settling import applier_live, changes
from writeback.drift.engine import DriftReport, EngineOptions, compute_drift, settle_context
from writeback.drift.indexing import Index, advance, build
from writeback.model import DesiredObject, LiveObject, Rule

OPTIONS = EngineOptions(explain=False)


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "shop"}, "data": data}


def secret(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "shop"}, "data": {}}


def hpa() -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}  # fmt: skip


class Cycles:
    """A service's cycles over one Git side: each with the kept index, checked against a report from nothing."""

    def __init__(self, desired: Sequence[DesiredObject]) -> None:
        self.desired = tuple(desired)
        self.kept: Index | None = None
        self._decided: frozenset[Any] | None = None

    def decided(self) -> frozenset[Any] | None:
        """The identities the last cycle decided again; None when it had no kept index (a method: each call reads
        the last cycle's)."""
        return self._decided

    def cycle(self, live: Sequence[LiveObject]) -> DriftReport:
        settle = settle_context(changes())
        index = None
        if self.kept is not None:
            index = advance(self.kept, live=live, desired=self.desired, head=None, include_secrets=False)
        self._decided = index.changed if index is not None else None

        def keep(new: Index) -> None:
            self.kept = new

        warm = compute_drift(live=live, desired=self.desired, options=OPTIONS, settle=settle, index=index, keep=keep)
        cold = compute_drift(live=live, desired=self.desired, options=OPTIONS, settle=settle)
        assert warm == cold
        return warm


def test_only_objects_that_came_or_went_are_decided_again_and_the_report_is_the_whole_one() -> None:
    web = live_obj(applier_live())
    cfg, extra = live_obj(configmap("cfg", k="v2")), live_obj(configmap("extra", k="v"))
    git = [desired_obj(deployment_git()), desired_obj(configmap("cfg", k="v1"), file="apps/cfg.yaml"),
           desired_obj(configmap("gone", k="v1"), file="apps/gone.yaml")]  # fmt: skip
    cycles = Cycles(git)
    first = cycles.cycle([web, cfg])
    assert {d.resource.name for d in first.drifts} == {"cfg", "gone"}
    cycles.cycle([web, cfg])
    assert cycles.decided() == frozenset()  # the very objects: nothing to decide
    cfg3 = live_obj(configmap("cfg", k="v3"))  # replaced by the watch
    cycles.cycle([web, cfg3])
    assert cycles.decided() == frozenset({cfg.ref.identity})
    gone = live_obj(configmap("gone", k="v1"))
    report = cycles.cycle([gone, web, cfg3, extra])  # one of Git's comes back, one Git lacks comes
    assert cycles.decided() == frozenset({gone.ref.identity, extra.ref.identity})
    assert {d.resource.name for d in report.drifts} == {"cfg", "extra"}
    cycles.cycle([web, extra])  # two go
    assert cycles.decided() == frozenset({gone.ref.identity, cfg.ref.identity})
    # objects Git lacks, made by someone unknown (no managedFields): their notes in the live objects' order
    for n in (3, 20):
        others = [live_obj(configmap(f"new-{n}-{i}", k="v")) for i in range(n)]
        report = cycles.cycle([others[-1], web, *others[:-1], extra])
        assert sum("could not tell who created it" in x for x in report.notes) == n + 1  # and extra


def test_an_autoscaler_that_comes_decides_its_target_again() -> None:
    scaled = applier_live()
    del scaled["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:replicas"]
    scaled["spec"]["replicas"] = 7
    scaled["metadata"]["managedFields"].append({"manager": "kube-controller-manager", "operation": "Update",
                                                "subresource": "scale", "apiVersion": "apps/v1",
                                                "fieldsType": "FieldsV1", "time": "2024-05-02T03:07:00Z",
                                                "fieldsV1": {"f:spec": {"f:replicas": {}}}})  # fmt: skip
    web = live_obj(scaled)
    cycles = Cycles([desired_obj(deployment_git())])
    cycles.cycle([web])
    scaler = live_obj(hpa())
    report = cycles.cycle([web, scaler])
    # its autoscaler is part of its outcome's inputs
    assert cycles.decided() == frozenset({web.ref.identity, scaler.ref.identity})
    assert [d.rule for d in report.drifts] == [Rule.CONTROLLER_OWNED]


def test_secrets_an_identity_twice_or_other_git_objects_are_followed_or_built_anew() -> None:
    web = live_obj(applier_live())
    cycles = Cycles([desired_obj(deployment_git()), desired_obj(secret("token"), file="apps/token.yaml")])
    first = cycles.cycle([web])
    assert "1 Secret(s) not compared" in " ".join(first.notes)
    report = cycles.cycle([web, live_obj(secret("other"))])
    assert cycles.decided() == frozenset() and "2 Secret(s) not compared" in " ".join(report.notes)
    twice = live_obj(copy.deepcopy(applier_live()))
    cycles.cycle([web, twice])  # the same identity twice: the whole path, which keeps the first
    assert cycles.decided() is None
    assert cycles.kept is not None and not cycles.kept.exact
    cycles.cycle([web])
    assert cycles.decided() is None  # an index that held an identity twice is never advanced
    cycles.cycle([web])
    assert cycles.decided() == frozenset()
    other_git = Cycles([desired_obj(deployment_git())])
    other_git.kept = cycles.kept
    other_git.cycle([web])
    assert other_git.decided() is None  # Git's objects differ: built anew


def test_a_new_index_decides_everything() -> None:
    web = live_obj(applier_live())
    index = build(live=[web], desired=[desired_obj(deployment_git())], head=None, include_secrets=False)
    assert index.changed is None and index.exact and not index.parts


def test_an_index_nothing_follows_holds_no_positions_and_is_built_anew_if_advanced() -> None:
    """A one-shot run's index (``followed=False``) keeps neither ``by_id`` nor ``positions`` (two dicts of every
    object); its report is the followed one's (dropped fields and notes in Git's order too), and advancing it
    builds a new index rather than guessing."""
    web = live_obj(applier_live())
    desired = [desired_obj(configmap("zz", level="1"), file="apps/zz.yaml"), desired_obj(deployment_git()),
               desired_obj(configmap("aa", level="1"), file="apps/aa.yaml")]  # fmt: skip
    live = [web, live_obj(configmap("aa", level="9")), live_obj(configmap("zz", level="8"))]
    once = build(live=live, desired=desired, head=None, include_secrets=False, followed=False)
    assert once.by_id is None and once.positions is None
    later = advance(once, live=live, desired=desired, head=None, include_secrets=False)
    assert later.changed is None and later.by_id is not None and later.positions is not None
    options = EngineOptions(explain=True)
    followed: list[Index] = []
    one_shot = compute_drift(live=live, desired=desired, options=options)
    service = compute_drift(live=live, desired=desired, options=options, keep=followed.append)
    assert one_shot == service and len(one_shot.drifts) == 2 and one_shot.dropped and one_shot.notes
    assert followed[0].positions is not None and followed[0].by_id is not None
