"""Optimistic concurrency: every break-glass patch tests metadata.resourceVersion, so a write by someone else
between writeback's read and its patch is never overwritten; writeback reads again and retries."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from tests.support.breakglass_record import record
from tests.support.controllers import AUTOMATED, argocd_app
from tests.support.kube import get
from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.controllers import ControllerObjects
from writeback.breakglass import flow
from writeback.breakglass import record as bg
from writeback.breakglass import start as starting
from writeback.errors import InputError
from writeback.gitops import argocd
from writeback.kube.refs import ObjectRef

pytestmark = pytest.mark.controlplane
APPS = "applications.argoproj.io"


class RacingObjects(ControllerObjects):
    """The real adapter; a person's real kubectl write lands right after the read the patch is computed from."""

    def __init__(self, *, cluster: KubeCluster, controlplane: Any, namespace: str) -> None:
        super().__init__(cluster=cluster)
        self.controlplane, self.namespace, self.gets, self.raced = controlplane, namespace, 0, False

    def get(self, *, ref: ObjectRef) -> dict[str, Any] | None:
        body = super().get(ref=ref)
        self.gets += 1
        if self.gets == 2 and not self.raced:  # start(): 1 = the checks, 2 = the patch's base
            self.raced = True
            self.controlplane.kubectl("annotate", "-n", self.namespace, "application/web", "team=payments")
        return body


def test_a_concurrent_write_is_kept_and_the_patch_retried(controlplane: Any, crds: list[str], namespace: str) -> None:
    argocd_app(controlplane, namespace, "web")
    cluster = KubeCluster.connect(kubeconfig=controlplane.kubeconfig)
    objects = RacingObjects(cluster=cluster, controlplane=controlplane, namespace=namespace)
    ref = argocd.APPLICATION.ref(f"{namespace}/web")
    now = flow.now_utc()
    started = starting.start(objects=objects, ref=ref, reason="race", ttl=timedelta(hours=1), by="alice", now=now)
    assert objects.patch_calls == 2  # the first patch failed its resourceVersion test
    app = get(controlplane, APPS, namespace, "web")
    assert app["metadata"]["annotations"]["team"] == "payments"  # the other writer's change is kept
    assert "automated" not in app["spec"]["syncPolicy"]
    assert record(app) is not None and record(app)["start"] == bg.format_time(started.held.record.start)  # type: ignore[index]

    # a stale view (someone ended and restarted meanwhile: another start time) never restores over the new one
    item = flow.get_held(objects=objects, ref=ref)
    assert item is not None
    stale = flow.Held(ref=ref, kind=item.kind, record=replace(item.record, start=now - timedelta(days=1)))
    with pytest.raises(InputError, match="record changed meanwhile"):
        flow.restore(objects=objects, item=stale)
    assert "automated" not in get(controlplane, APPS, namespace, "web")["spec"]["syncPolicy"]
    flow.restore(objects=objects, item=item)
    app = get(controlplane, APPS, namespace, "web")
    assert app["spec"]["syncPolicy"]["automated"] == AUTOMATED and record(app) is None
