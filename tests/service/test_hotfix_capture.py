"""Hotfix capture on the real kube-apiserver: a `kubectl edit` is captured within seconds into the state dir,
and stays there after an `argocd-controller` server-side apply reverts the live object."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.polling import wait_until
from writeback.adapters.hotfix_store import ConfigMapStore, DirectoryStore
from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.watching import WatchingCluster
from writeback.kube.paths import parse_path
from writeback.model import Capture, Decision, Drift, HotfixState, ManagerOperation, Op
from writeback.service.hotfixing import CapturingCluster, HotfixCapturer
from writeback.settings import Policy, Selector

pytestmark = pytest.mark.controlplane


def gitops_manifest(namespace: str, value: str) -> str:
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: ca-bundle, namespace: {namespace}}}
data: {{ca.crt: {value}}}
"""


def gitops_apply(controlplane: Any, namespace: str, value: str) -> None:
    controlplane.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=argocd-controller", "-f", "-",
        input=gitops_manifest(namespace, value),
    )  # fmt: skip


def kubectl_edit(controlplane: Any, tmp_path: Path, namespace: str, new_value: str) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text(f"#!/bin/sh\nsed -i 's/ca.crt: .*/ca.crt: {new_value}/' \"$1\"\n")
    editor.chmod(0o755)
    controlplane.kubectl("edit", "configmap", "ca-bundle", "-n", namespace, env={"EDITOR": str(editor)})


def test_a_kubectl_edit_is_captured_and_survives_the_revert(
    controlplane: Any, k8s: Any, namespace: str, tmp_path: Path
) -> None:
    gitops_apply(controlplane, namespace, "old-ca")
    store = DirectoryStore(state_dir=tmp_path / "state")
    triggered: list[Capture] = []
    fired = threading.Event()

    def on_capture(capture: Capture) -> None:
        triggered.append(capture)
        fired.set()

    capturer = HotfixCapturer(target="prod", policy=Policy(), store=store, on_capture=on_capture)
    cache = WatchingCluster(cluster=KubeCluster(api_client=k8s), api_client=k8s, on_event=capturer)
    selector = Selector.model_validate({"apiVersion": "v1", "kind": "ConfigMap", "namespaces": [namespace]})
    try:
        cache.list_objects(selector=selector)  # informer synced: the GitOps apply is history, not a hotfix
        gitops_apply(controlplane, namespace, "old-ca-2")  # a controller write is never captured
        time.sleep(1.0)
        assert store.load(target="prod") == [] and not triggered

        kubectl_edit(controlplane, tmp_path, namespace, "person-fixed-ca")
        took = wait_until("the capture stored", lambda: bool(store.load(target="prod")), timeout=10, step=0.05)
        assert took < 5 and fired.wait(5)
        capturing = CapturingCluster(cluster=cache, store=store, target="prod", policy=Policy(), ttl_seconds=3600)

        # The controller syncs an unrelated change first: the person's field is still theirs, live is the truth.
        unrelated = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ca-bundle, namespace: {namespace}}}\n"
        unrelated += "data: {x: extra}\n"
        controlplane.kubectl(
            "apply",
            "--server-side",
            "--field-manager=argocd-controller",
            "-f",
            "-",
            input=unrelated,
        )
        wait_until(
            "the unrelated change seen",
            lambda: any("x" in o.body.get("data", {}) for o in cache.list_objects(selector=selector)),
            timeout=10,
            step=0.05,
        )
        capturing.begin_cycle()
        [obj] = [o for o in capturing.list_objects(selector=selector) if o.ref.name == "ca-bundle"]
        assert obj.body["data"] == {"ca.crt": "person-fixed-ca", "x": "extra"} and capturing.reverted() == ()

        gitops_apply(controlplane, namespace, "old-ca-2")  # selfHeal: the controller reverts it
        live = json.loads(controlplane.kubectl("get", "cm", "ca-bundle", "-n", namespace, "-o", "json").stdout)
        assert live["data"]["ca.crt"] == "old-ca-2"
        time.sleep(1.0)  # the revert's watch event has been seen too

        [capture] = store.load(target="prod")
        assert capture.manager == "kubectl-edit" and capture.operation == "Update" and capture.time
        assert capture.body["data"]["ca.crt"] == "person-fixed-ca"  # as the person left it
        managers = {e["manager"] for e in capture.body["metadata"]["managedFields"]}
        assert "kubectl-edit" in managers
        files = list((tmp_path / "state" / "hotfixes").glob("*.json"))
        assert len(files) == 1 and "ConfigMap" in files[0].name
        assert len(triggered) == 1  # one person write, one trigger (the revert does not trigger)

        # A cycle now sees the captured object instead of the reverted one, and knows who reverted it and when.
        capturing.begin_cycle()
        [obj] = [o for o in capturing.list_objects(selector=selector) if o.ref.name == "ca-bundle"]
        assert obj.body["data"]["ca.crt"] == "person-fixed-ca"
        [hotfix] = capturing.reverted()
        assert hotfix.manager == "kubectl-edit" and hotfix.reverted_by == "argocd-controller"
        assert hotfix.reverted_at is not None and hotfix.reverted_at >= (hotfix.time or "")

        # Once Git carries the change and the controller applies it, the capture is done with.
        gitops_apply(controlplane, namespace, "person-fixed-ca")
        wait_until(
            "the controller's apply of the change seen",
            lambda: any(
                o.body["data"]["ca.crt"] == "person-fixed-ca" and o.ref.name == "ca-bundle"
                for o in cache.list_objects(selector=selector)
            ),
            timeout=10,
            step=0.05,
        )
        capturing.list_objects(selector=selector)
        assert store.load(target="prod") == []
    finally:
        cache.stop()


def test_the_configmap_store_keeps_captures_in_the_bots_namespace(k8s: Any, namespace: str) -> None:
    from writeback.kube.refs import ObjectRef

    store = ConfigMapStore(api_client=k8s, configmap=f"{namespace}/writeback-state")
    ref = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="shop", name="web")
    capture = Capture(target="prod", ref=ref, manager="kubectl-edit", operation=ManagerOperation.UPDATE,
                      time="2026-11-30T03:00:05Z", captured_at="2026-11-30T03:00:06Z",
                      body={"spec": {"replicas": 5}})  # fmt: skip
    store.save(capture)
    assert store.load(target="prod") == [capture]
    from kubernetes import client

    cm = client.CoreV1Api(k8s).read_namespaced_config_map(name="writeback-state", namespace=namespace)
    assert cm.data is not None and capture.key in cm.data
    store.discard(capture)
    assert store.load(target="prod") == []


@dataclass(frozen=True, kw_only=True)
class Watched:
    """The service's capture path over the real API server: a watch cache whose events go to a capturer, and the
    capturing cluster a cycle lists through."""

    store: DirectoryStore
    cache: WatchingCluster
    selector: Selector
    capturing: CapturingCluster


@contextlib.contextmanager
def watched(k8s: Any, namespace: str, tmp_path: Path) -> Iterator[Watched]:
    """The ConfigMaps of ``namespace`` watched and captured as the service does for target "prod"."""
    store = DirectoryStore(state_dir=tmp_path / "state")
    capturer = HotfixCapturer(target="prod", policy=Policy(), store=store, on_capture=lambda capture: None)
    cache = WatchingCluster(cluster=KubeCluster(api_client=k8s), api_client=k8s, on_event=capturer)
    selector = Selector.model_validate({"apiVersion": "v1", "kind": "ConfigMap", "namespaces": [namespace]})
    capturing = CapturingCluster(cluster=cache, store=store, target="prod", policy=Policy(), ttl_seconds=3600)
    try:
        cache.list_objects(selector=selector)
        yield Watched(store=store, cache=cache, selector=selector, capturing=capturing)
    finally:
        cache.stop()


def drift_of(capture: Capture) -> Drift:
    """A drift of the captured field, as a plan against the applied Git finds it."""
    return Drift(resource=capture.ref, path=parse_path('data["ca.crt"]'), op=Op.CHANGE, decision=Decision.WRITEBACK)


def edited_and_served(w: Watched, controlplane: Any, tmp_path: Path, namespace: str, value: str) -> None:
    """A person's ``kubectl edit`` to ``value``, captured, then a cycle begun that serves it live."""
    kubectl_edit(controlplane, tmp_path, namespace, value)
    wait_until("the capture stored", lambda: bool(w.store.load(target="prod")), timeout=10, step=0.05)
    w.capturing.begin_cycle()
    wait_until(
        f"the edit to {value} seen",
        lambda: any(o.body["data"]["ca.crt"] == value for o in w.capturing.list_objects(selector=w.selector)),
        timeout=10,
        step=0.05,
    )


def test_a_cycle_that_sees_the_edit_still_live_keeps_the_capture_for_the_revert_that_follows(
    controlplane: Any, k8s: Any, namespace: str, tmp_path: Path
) -> None:
    """The order a real controller gives (Flux reverts on its next interval, seconds after writeback's debounced
    cycle): the cycle sees the person's change live, and the capture must outlive that cycle."""
    gitops_apply(controlplane, namespace, "old-ca")
    with watched(k8s, namespace, tmp_path) as w:
        store, selector, capturing = w.store, w.selector, w.capturing

        def served() -> dict[str, Any]:
            capturing.begin_cycle()
            [obj] = [o for o in capturing.list_objects(selector=selector) if o.ref.name == "ca-bundle"]
            return dict(obj.body)

        kubectl_edit(controlplane, tmp_path, namespace, "person-fixed-ca")
        wait_until("the capture stored", lambda: bool(store.load(target="prod")), timeout=10, step=0.05)
        wait_until(
            "the edit served", lambda: served()["data"]["ca.crt"] == "person-fixed-ca", timeout=10, step=0.05
        )  # the cycle before the revert
        [capture] = store.load(target="prod")
        capturing.settle(drifts=[drift_of(capture)])  # its plan: a drift against the applied Git
        assert capturing.reverted() == () and store.load(target="prod") == [capture]  # kept

        time.sleep(1.0)  # the revert lands in a later second than the edit, as it does with a real interval
        gitops_apply(controlplane, namespace, "old-ca")  # the controller's next reconcile reverts it
        wait_until(
            "the revert seen while the capture is served",
            lambda: served()["data"]["ca.crt"] == "person-fixed-ca" and bool(capturing.reverted()),
            timeout=10,
            step=0.05,
        )
        [hotfix] = capturing.reverted()
        assert hotfix.manager == "kubectl-edit" and hotfix.reverted_by == "argocd-controller"


def test_a_capture_that_git_already_carries_is_done_with_after_the_cycle(
    controlplane: Any, k8s: Any, namespace: str, tmp_path: Path
) -> None:
    """The person made by hand the change a pending commit makes (Flux suspended, then resumed): the applied Git
    has it and the controller never writes the object, so only the cycle's plan (no drift) can tell."""
    gitops_apply(controlplane, namespace, "old-ca")
    with watched(k8s, namespace, tmp_path) as w:
        store, capturing = w.store, w.capturing
        edited_and_served(w, controlplane, tmp_path, namespace, "person-fixed-ca")
        capturing.settle(drifts=[])  # the plan found no drift of it: the applied Git has the person's value
        assert store.load(target="prod") == []
        capturing.settle(drifts=[])  # settling twice, or with nothing served live, discards nothing more


def test_settling_keeps_a_newer_capture_of_the_object_made_during_the_cycle(
    controlplane: Any, k8s: Any, namespace: str, tmp_path: Path
) -> None:
    """The cycle saw the first edit live (and Git carries it); the person edits again before the cycle ends: that
    second capture is not one the plan judged, so the object's captures stay until the next cycle judges them all
    (then the first is replaced by the second, and Git carries the second)."""
    gitops_apply(controlplane, namespace, "old-ca")
    with watched(k8s, namespace, tmp_path) as w:
        store, capturing = w.store, w.capturing
        edited_and_served(w, controlplane, tmp_path, namespace, "person-fixed-ca")
        kubectl_edit(controlplane, tmp_path, namespace, "person-fixed-ca-again")  # during the cycle
        values = ["person-fixed-ca", "person-fixed-ca-again"]
        wait_until(
            "both edits captured",
            lambda: sorted(c.body["data"]["ca.crt"] for c in store.load(target="prod")) == values,
            timeout=10,
            step=0.05,
        )
        both = store.load(target="prod")
        capturing.settle(drifts=[])
        assert store.load(target="prod") == both
        capturing.begin_cycle()
        capturing.list_objects(selector=w.selector)
        [replaced] = [h for h in capturing.reverted() if h.state is HotfixState.REPLACED]
        assert (replaced.manager, replaced.replaced_by) == ("kubectl-edit", "kubectl-edit")
        capturing.settle(drifts=[])
        assert store.load(target="prod") == []
