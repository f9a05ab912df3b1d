"""Cluster faults on a control plane of this module's own (its real kube-apiserver is stopped and started), with
a small HTTPS proxy in front of it for the answers the server sends under load (apiproxy.py).

The apiserver down at the start of a run and stopped in the middle of a paginated list; 429 and 503 with
Retry-After; a continue token that expires during pagination (etcd compacted between two pages: 410) and during
a watch cache's relist; a watch that gets 410 after a healthy period.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import cp
from tests.reliability.apiproxy import ApiProxy, Rule
from tests.reliability.world import World, manifest
from tests.support.gitrepos import git
from tests.support.polling import wait_until
from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.kubeconfigs import ClusterAccess, new_api_client
from writeback.adapters.kube.watching import Informer
from writeback.errors import ClusterError, ClusterUnreachable
from writeback.settings import Selector

pytestmark = pytest.mark.controlplane
NS = "paged"
N = 12  # ConfigMaps in NS, listed 2 a page


@pytest.fixture(scope="module")
def plane(controlplane: cp.ControlPlane) -> Iterator[cp.ControlPlane]:
    """A second real control plane, this module's to break (the session's one serves the healthy target). Its
    watch cache is off: lists and watches read etcd, so an etcd compaction expires them as on a busy cluster."""
    try:
        own = cp.start(bin_dir=controlplane.bin_dir, apiserver_flags=("--watch-cache=false",))
    except cp.ControlPlaneError as exc:
        pytest.fail(f"the fault matrix's own control plane could not start: {exc}", pytrace=False)
    try:
        own.kubectl("create", "namespace", NS)
        items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:02d}", "namespace": NS},
                  "data": {"i": str(i)}} for i in range(N)]  # fmt: skip
        own.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        yield own
    finally:
        own.stop()


@pytest.fixture
def proxy(plane: cp.ControlPlane) -> Iterator[ApiProxy]:
    p = ApiProxy(plane).start()
    try:
        yield p
    finally:
        p.stop()
        if not plane.alive():
            plane.start_apiserver()


SELECTOR = Selector.model_validate({"apiVersion": "v1", "kind": "ConfigMap", "namespaces": [NS]})


def names(objects: list[Any]) -> list[str]:
    return sorted(o.ref.name for o in objects)


def test_429_and_503_with_retry_after_are_retried_within_bounds(proxy: ApiProxy, tmp_path: Path) -> None:
    cluster = KubeCluster.connect(kubeconfig=proxy.kubeconfig(tmp_path))
    proxy.rules += [
        Rule(match=lambda s: s.is_list and not s.continues, status=429, headers={"Retry-After": "1"}, times=2),
        Rule(match=lambda s: s.is_list and s.continues, status=503, headers={"Retry-After": "1"}, times=1),
    ]
    assert len(cluster.list_objects(selector=SELECTOR, page_size=2)) == N
    assert [r.used for r in proxy.rules] == [2, 1]
    proxy.rules[:] = [Rule(match=lambda s: s.is_list, status=503, headers={"Retry-After": "1"}, times=1000)]
    began = time.monotonic()
    with pytest.raises(ClusterError, match=r"HTTP 503 \(after 4 retries\)"):
        cluster.list_objects(selector=SELECTOR, page_size=2)
    assert proxy.rules[0].used == 5 and time.monotonic() - began < 30  # bounded: 1 + 4 attempts


def test_the_apiserver_stops_in_the_middle_of_a_paginated_list(
    plane: cp.ControlPlane, proxy: ApiProxy, tmp_path: Path
) -> None:
    cluster = KubeCluster.connect(kubeconfig=proxy.kubeconfig(tmp_path))
    hold = threading.Event()
    rule = Rule(match=lambda s: s.is_list and s.continues, hold=hold)  # the second page waits
    proxy.rules.append(rule)
    errors: list[BaseException] = []
    worker = threading.Thread(target=lambda: _catch(errors, cluster.list_objects, selector=SELECTOR, page_size=2))
    worker.start()
    assert rule.arrived.wait(30)
    plane.stop_apiserver()  # the real process, between two pages
    hold.set()
    worker.join(60)
    assert len(errors) == 1 and isinstance(errors[0], ClusterUnreachable), errors
    assert "cannot reach the API server" in str(errors[0]) and "list ConfigMap" in str(errors[0])
    plane.start_apiserver()
    assert len(cluster.list_objects(selector=SELECTOR, page_size=2)) == N  # the next cycle lists it all


def _catch(errors: list[BaseException], fn: Any, **kwargs: Any) -> None:
    try:
        fn(**kwargs)
    except BaseException as e:
        errors.append(e)


def test_a_continue_token_that_expires_restarts_the_list(
    plane: cp.ControlPlane, proxy: ApiProxy, tmp_path: Path
) -> None:
    cluster = KubeCluster.connect(kubeconfig=proxy.kubeconfig(tmp_path))
    hold = threading.Event()
    rule = Rule(match=lambda s: s.is_list and s.continues, hold=hold)
    proxy.rules.append(rule)
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(cluster.list_objects(selector=SELECTOR, page_size=2)))
    worker.start()
    assert rule.arrived.wait(30)
    _expire(plane)
    hold.set()
    worker.join(60)
    assert done and len(done[0]) == N, "the list restarted from the first page and is complete"
    firsts = [s for s in proxy.seen if s.is_list and not s.continues]
    assert len(firsts) == 2, [s.query for s in proxy.seen]  # the 410 made it start over, once


def _expire(plane: cp.ControlPlane) -> None:
    """Write, then compact etcd at its head: every earlier list snapshot (continue token) is gone."""
    plane.kubectl("create", "configmap", f"bump-{time.monotonic_ns()}", "-n", "default")
    plane.etcd_compact()


def _informer(proxy: ApiProxy, tmp_path: Path, *, page_size: int = 2) -> Informer:
    api = new_api_client(access=ClusterAccess(kubeconfig=proxy.kubeconfig(tmp_path)))
    res = KubeCluster(api_client=api).resource_for(api_version="v1", kind="ConfigMap")
    return Informer(api_client=api, resource=res, namespace=NS, page_size=page_size, watch_seconds=30)


def test_a_continue_token_that_expires_during_a_watch_relist(
    plane: cp.ControlPlane, proxy: ApiProxy, tmp_path: Path
) -> None:
    hold = threading.Event()
    rule = Rule(match=lambda s: s.is_list and s.continues, hold=hold)
    proxy.rules.append(rule)
    informer = _informer(proxy, tmp_path)
    informer.start()
    try:
        assert rule.arrived.wait(30)
        _expire(plane)
        hold.set()
        informer.wait_synced(timeout=60)
        assert len(informer.objects()) == N
        firsts = [s for s in proxy.seen if s.is_list and not s.continues]
        assert len(firsts) >= 2, "the relist started over after the 410"
    finally:
        informer.stop()


def test_a_watch_that_gets_410_after_a_healthy_period_relists(
    plane: cp.ControlPlane, proxy: ApiProxy, tmp_path: Path
) -> None:
    rule = Rule(match=lambda s: s.is_watch, gone_after_lines=1)  # one healthy event, then 410 Expired
    proxy.rules.append(rule)
    informer = _informer(proxy, tmp_path, page_size=500)
    informer.start()
    try:
        informer.wait_synced(timeout=60)
        assert rule.arrived.wait(30)
        name = f"late-{time.monotonic_ns()}"
        plane.kubectl("create", "configmap", name, "-n", NS)  # the healthy event
        wait_until("the 410 making the informer list again", lambda: informer.relists >= 2, timeout=60)
        assert name in {o["metadata"]["name"] for o in informer.objects()}
        watches = [s for s in proxy.seen if s.is_watch]
        assert len(watches) >= 2, "and watch again from the new list"
    finally:
        informer.stop()
        plane.kubectl("delete", "configmap", "-n", NS, "-l", "!i", "--ignore-not-found")


@pytest.fixture
def cluster_world(tmp_path: Path, controlplane: cp.ControlPlane, plane: cp.ControlPlane) -> Iterator[World]:
    """alpha on the session's control plane, beta on this module's (which the test stops)."""
    w = World.make(tmp_path)
    w.cluster_mode = True
    w.config_overrides["clusters"] = [
        {"name": "healthy", "kubeconfig": controlplane.kubeconfig, "context": cp.CONTEXT},
        {"name": "breakable", "kubeconfig": plane.kubeconfig, "context": cp.CONTEXT},
    ]
    for name, planes in (("alpha", controlplane), ("beta", plane)):
        w.target_overrides[name] = {"cluster": "healthy" if planes is controlplane else "breakable"}
        planes.kubectl("create", "namespace", f"ns-{name}", check=False)
        applied = manifest(name).split("  #")[0] + "\n"
        planes.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=argocd-controller",
                       "-f", "-", input=applied)  # fmt: skip
        planes.kubectl("patch", "configmap", name, "-n", f"ns-{name}", "-p", '{"data":{"setting":"v2"}}')
    try:
        yield w
    finally:
        w.stop()
        if not plane.alive():
            plane.start_apiserver()


def test_the_apiserver_is_down_when_the_run_starts(cluster_world: World, plane: cp.ControlPlane) -> None:
    plane.stop_apiserver()
    done = cluster_world.run()
    [result] = done.of("beta")
    assert result["outcome"] == "failed" and "cannot reach the API server" in result["detail"], result
    assert done.code == 3 and "Traceback" not in done.stderr
    assert done.outcomes("alpha") == ["created"], done
    plane.start_apiserver()
    again = cluster_world.run()
    assert again.outcomes("beta") == ["created"] and again.outcomes("alpha") == ["unchanged"], again
    cluster_world.assert_converged()


def test_an_unknown_kind_is_named_and_the_rest_is_written_back(cluster_world: World) -> None:
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: ns-alpha\nspec: {size: 1}\n"
    seed = cluster_world.root / "alpha-seed"
    (seed / "apps" / "widget.yaml").write_text(widget)
    git("add", "-A", cwd=seed)
    git("-c", "user.email=alice@example.com", "-c", "user.name=Alice", "commit", "-qm", "widget", cwd=seed)
    git("push", "-q", "origin", "HEAD:refs/heads/main", cwd=seed)
    done = cluster_world.run()
    assert done.code == 2, done.stderr[-2000:]
    assert sorted(done.outcomes("alpha")) == ["created", "failed"], done.results
    [bad] = [r for r in done.of("alpha") if r["outcome"] == "failed"]
    assert bad["reason"] == "bad-input" and "Widget" in bad["detail"] and "not served" in bad["detail"], bad
    assert done.outcomes("beta") == ["created"]
    cluster_world.assert_converged()
