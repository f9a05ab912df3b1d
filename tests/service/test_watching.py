"""The informer cache on the real kube-apiserver: warm cycles list nothing, 410 Gone relists, events arrive."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support.polling import wait_until
from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.watching import Gone, Informer, WatchEvent, WatchingCluster
from writeback.kube.refs import ObjectRef
from writeback.settings import Selector

pytestmark = pytest.mark.controlplane


def _configmap(controlplane: Any, namespace: str, name: str, value: str) -> None:
    manifest = controlplane.kubectl(
        "create", "configmap", name, "-n", namespace, f"--from-literal=key={value}", "--dry-run=client", "-o", "yaml"
    ).stdout
    controlplane.kubectl("apply", "--server-side", "--field-manager=tester", "-f", "-", input=manifest)


def test_a_warm_cycle_makes_zero_list_calls(controlplane: Any, k8s: Any, namespace: str) -> None:
    for i in range(3):
        _configmap(controlplane, namespace, f"cm-{i}", f"v{i}")
    verbs: list[str] = []
    cluster = KubeCluster(api_client=k8s)
    cache = WatchingCluster(cluster=cluster, api_client=k8s, on_request=verbs.append)
    selector = Selector.model_validate({"apiVersion": "v1", "kind": "ConfigMap", "namespaces": [namespace]})
    try:
        cold = {o.ref.name for o in cache.list_objects(selector=selector)}
        assert {"cm-0", "cm-1", "cm-2"} <= cold
        assert verbs.count("list") == 1
        lists_after_cold = cache.list_calls

        _configmap(controlplane, namespace, "cm-3", "new")  # arrives through the watch, not a list
        controlplane.kubectl("delete", "configmap", "cm-0", "-n", namespace)
        wait_until(
            "cm-3 through the watch",
            lambda: {o.ref.name for o in cache.list_objects(selector=selector)} >= {"cm-3"},
            timeout=15,
            step=0.05,
        )
        wait_until(
            "cm-0 deleted through the watch",
            lambda: "cm-0" not in {o.ref.name for o in cache.list_objects(selector=selector)},
            timeout=15,
            step=0.05,
        )
        warm = {o.ref.name: o for o in cache.list_objects(selector=selector)}
        assert warm["cm-3"].body["data"] == {"key": "new"}
        # no copies: a cycle reads the cached objects themselves (and no cycle changes them: test_warm_cycles.py),
        # and an unchanged object is the same LiveObject from one cycle to the next
        stored = {o["metadata"]["name"]: o for i in cache.informers for o in i.objects()}
        assert warm["cm-3"].body is stored["cm-3"]
        again = {o.ref.name: o for o in cache.list_objects(selector=selector)}
        assert all(again[name] is warm[name] for name in warm)
        _configmap(controlplane, namespace, "cm-3", "newer")  # the watch replaces the object, never changes it
        wait_until(
            "the watch's newer cm-3",
            lambda: (
                {o.ref.name: o for o in cache.list_objects(selector=selector)}["cm-3"].body["data"]["key"] == "newer"
            ),
            timeout=15,
        )
        assert warm["cm-3"].body["data"] == {"key": "new"}
        later = {o.ref.name: o for o in cache.list_objects(selector=selector)}
        assert later["cm-3"] is not warm["cm-3"] and later["cm-1"] is warm["cm-1"]
        assert cache.list_calls == lists_after_cold  # warm: zero list calls
        assert cluster.list_calls == 0
        assert verbs.count("list") == 1 and verbs.count("watch") >= 1
    finally:
        cache.stop()


def _application(controlplane: Any, namespace: str, name: str) -> None:
    manifest = f"""
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  project: default
  destination: {{server: "https://kubernetes.default.svc", namespace: {namespace}}}
  source: {{repoURL: "https://git.example/repo.git", path: apps}}
"""
    controlplane.kubectl("apply", "--server-side", "--field-manager=tester", "-f", "-", input=manifest)


def test_a_too_old_resource_version_is_gone_and_the_informer_relists(
    controlplane: Any, k8s: Any, crds: list[str], namespace: str
) -> None:
    # The CRD's watch cache starts at the resourceVersion of its installation: "1" is older, so 410 Gone.
    _application(controlplane, namespace, "before")
    res = KubeCluster(api_client=k8s).resource_for(api_version="argoproj.io/v1alpha1", kind="Application")
    probe = Informer(api_client=k8s, resource=res, namespace=namespace, resource_version="1", watch_seconds=5)
    with pytest.raises(Gone):
        probe.watch()

    events: list[WatchEvent] = []
    informer = Informer(
        api_client=k8s, resource=res, namespace=namespace, resource_version="1", on_event=events.append, watch_seconds=5
    )
    informer.start()
    try:
        wait_until(
            "a relist after 410 Gone", lambda: informer.relists >= 1, timeout=15, step=0.05
        )  # 410 -> list again from scratch
        assert informer.list_calls >= 1
        assert "before" in {o["metadata"]["name"] for o in informer.objects()}
        assert any(e.initial and e.object["metadata"]["name"] == "before" for e in events)
        _application(controlplane, namespace, "after")
        wait_until(
            "the watch event of after",
            lambda: any(not e.initial and e.object["metadata"]["name"] == "after" for e in events),
            timeout=15,
            step=0.05,
        )
        assert int(informer.resource_version or 0) > 1
    finally:
        informer.stop()


def test_stop_ends_a_blocked_watch_promptly(k8s: Any, namespace: str) -> None:
    res = KubeCluster(api_client=k8s).resource_for(api_version="v1", kind="ConfigMap")
    informer = Informer(api_client=k8s, resource=res, namespace=namespace, watch_seconds=300)
    informer.start()
    informer.wait_synced(timeout=30)
    wait_until("a watch call", lambda: informer.watch_calls >= 1, timeout=15, step=0.05)
    started = time.monotonic()
    informer.stop(timeout=10)
    assert time.monotonic() - started < 5
    assert not any(t.name.startswith("informer ") and t.is_alive() for t in threading.enumerate())


def test_a_failing_list_is_reported_at_once_naming_the_kind(k8s: Any, namespace: str) -> None:
    from writeback.errors import ClusterError

    cache = WatchingCluster(cluster=KubeCluster(api_client=k8s), api_client=k8s, sync_timeout=30)
    # the configuration refuses this selector when it loads; built unchecked here, the API server refuses it
    bad = Selector.model_construct(
        api_version="v1", kind="ConfigMap", namespaces=(namespace,), label_selector="app in (a"
    )
    started = time.monotonic()
    try:
        with pytest.raises(ClusterError, match=f"list ConfigMap \\(v1\\) in namespace {namespace}: HTTP 400"):
            cache.list_objects(selector=bad)
        assert time.monotonic() - started < 10
        with pytest.raises(ClusterError, match="not served"):
            cache.list_objects(selector=Selector.model_validate({"apiVersion": "example.com/v1", "kind": "Nope"}))
    finally:
        cache.stop()


def test_without_the_watch_cache_every_cycle_lists_and_is_counted(k8s: Any, namespace: str) -> None:
    from writeback.adapters.kube.counting import CountingCluster

    verbs: list[str] = []
    counted = CountingCluster(cluster=KubeCluster(api_client=k8s), count=verbs.append)
    selector = Selector.model_validate({"apiVersion": "v1", "kind": "ConfigMap", "namespaces": [namespace]})
    for _ in range(3):
        counted.list_objects(selector=selector, page_size=1)
    assert verbs.count("list") >= 3
    assert counted.get_object(ref=ObjectRef(api_version="v1", kind="ConfigMap", namespace=namespace, name="no")) is None
    assert verbs[-1] == "get"
