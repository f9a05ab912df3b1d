"""A hotfix capture never stores a sensitive value: the fields at ``policy.sensitive_paths`` are removed before
the capture is written (state file or ConfigMap) and are taken from the live object when the capture is used,
so the person's other changes still reach the PR and the removed fields are no drift."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.objects import container, deployment
from tests.support.polling import wait_until
from writeback.adapters.hotfix_store import ConfigMapStore, DirectoryStore, HotfixStore
from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.watching import WatchingCluster
from writeback.capture.hotfixes import backport_body, redacted_capture
from writeback.capture.redaction import LAST_APPLIED, PLACEHOLDER, restore, scrub
from writeback.drift.engine import EngineOptions, compute_drift
from writeback.kube.paths import format_path, parse_pattern
from writeback.kube.refs import ObjectRef
from writeback.model import Capture, Decision, DesiredObject, ManagerOperation
from writeback.service.hotfixing import CapturingCluster, HotfixCapturer
from writeback.settings import Policy, Selector

SENSITIVE = "spec.template.spec.containers[*].env[name=API_KEY].value"
POLICY = Policy(sensitive_paths=(SENSITIVE,))
API_KEY_PATH = "spec.template.spec.containers[name=web].env[name=API_KEY].value"
REF = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="shop", name="web")


def web_deployment(*, log_level: str, api_key: str, namespace: str = "shop") -> dict[str, Any]:
    """The shop's web Deployment with a sensitive API_KEY and a harmless LOG_LEVEL (and a --token flag that is not
    sensitive: only the policy's paths are)."""
    web = container(
        "web",
        image="registry.example.com/shop/web:1.4.2",
        args=["--token", "not-sensitive"],
        env={"LOG_LEVEL": log_level, "API_KEY": api_key},
    )
    return deployment("web", namespace=namespace, replicas=1, labelled=False, containers=[web])


def _env(body: Any) -> dict[str, Any]:
    return {e["name"]: e.get("value") for e in body["spec"]["template"]["spec"]["containers"][0]["env"]}


# ---------------------------------------------------------------- pure


def test_scrub_removes_the_value_everywhere_and_restore_takes_it_from_live() -> None:
    body = web_deployment(log_level="debug", api_key="person-s3cret")
    applied = web_deployment(log_level="debug", api_key="person-s3cret")
    body["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(applied) + "\n"}

    done = scrub(body, patterns=[parse_pattern(SENSITIVE)], kind="Deployment")

    assert "person-s3cret" not in json.dumps(done.body)
    assert [format_path(p) for p in done.removed] == [API_KEY_PATH]
    assert [format_path(p) for p in done.removed_last_applied] == [API_KEY_PATH]
    assert _env(done.body) == {"LOG_LEVEL": "debug", "API_KEY": None}  # the item (and its key) stays
    assert done.body["spec"]["template"]["spec"]["containers"][0]["args"] == ["--token", "not-sensitive"]
    assert "person-s3cret" in json.dumps(body)  # the input is not changed

    live = web_deployment(log_level="info", api_key="live-key")
    live["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(web_deployment(log_level="info", api_key="live-key"))}
    back = restore(done.body, live=live, removed=done.removed, removed_last_applied=done.removed_last_applied)
    assert _env(back) == {"LOG_LEVEL": "debug", "API_KEY": "live-key"}
    assert _env(json.loads(back["metadata"]["annotations"][LAST_APPLIED])) == _env(back)

    # The person added the sensitive item: live has none, a placeholder keeps it sensitive (report-only).
    without = web_deployment(log_level="info", api_key="x")
    without["spec"]["template"]["spec"]["containers"][0]["env"].pop()
    assert _env(restore(done.body, live=without, removed=done.removed))["API_KEY"] == PLACEHOLDER


def test_scrub_keeps_a_body_without_sensitive_fields_and_never_shows_a_value_in_a_path() -> None:
    body = web_deployment(log_level="debug", api_key="k")
    assert scrub(body, patterns=[], kind="Deployment").body == body
    assert scrub(body, patterns=[parse_pattern("spec.template.spec.volumes")], kind="Deployment").removed == ()

    # A whole item of an atomic list (addressed by position) takes the whole list out, by its key.
    done = scrub(body, patterns=[parse_pattern("spec.template.spec.containers[*].args[1]")], kind="Deployment")
    assert [format_path(p) for p in done.removed] == ["spec.template.spec.containers[name=web].args"]
    assert "not-sensitive" not in json.dumps(done.body)

    # When the list key itself is sensitive the item is named by position, so the path holds no value.
    done = scrub(body, patterns=[parse_pattern("spec.template.spec.containers[*].env[*].name")], kind="Deployment")
    assert [format_path(p) for p in done.removed] == [
        "spec.template.spec.containers[name=web].env[0].name",
        "spec.template.spec.containers[name=web].env[1].name",
    ]


def test_a_stored_capture_holds_no_sensitive_value_and_builds_the_backport(tmp_path: Path) -> None:
    person = web_deployment(log_level="debug", api_key="person-s3cret")
    capture = Capture(target="prod", ref=REF, manager="kubectl-patch", operation=ManagerOperation.UPDATE,
                      time="2026-11-30T03:00:05Z", captured_at="2026-11-30T03:00:06Z", body=person)  # fmt: skip
    clean = redacted_capture(capture, policy=POLICY)
    assert clean.redacted == (API_KEY_PATH,) and redacted_capture(clean, policy=POLICY) is clean
    store = DirectoryStore(state_dir=tmp_path)
    store.save(clean)
    [file] = (tmp_path / "hotfixes").glob("*.json")
    assert "person-s3cret" not in file.read_text() and API_KEY_PATH in file.read_text()
    [loaded] = store.load(target="prod")
    assert loaded == clean
    live = web_deployment(log_level="info", api_key="git-key")
    assert _env(backport_body(loaded, live=live)) == {"LOG_LEVEL": "debug", "API_KEY": "git-key"}


# ---------------------------------------------------------------- the real control plane


def _apply_as_gitops(controlplane: Any, body: dict[str, Any]) -> None:
    controlplane.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=argocd-controller", "-f", "-",
        input=yaml.safe_dump(body),
    )  # fmt: skip


def _stored_text(kind: str, *, tmp_path: Path, k8s: Any, namespace: str) -> str:
    """Everything the store wrote, as stored (the state files, or the ConfigMap's data)."""
    if kind == "directory":
        return "".join(p.read_text() for p in sorted((tmp_path / "state" / "hotfixes").glob("*.json")))
    from kubernetes import client

    cm = client.CoreV1Api(k8s).read_namespaced_config_map(name="writeback-state", namespace=namespace)
    return "".join(f"{k}\n{v}" for k, v in sorted((cm.data or {}).items()))


@pytest.mark.controlplane
@pytest.mark.parametrize("store_kind", ["directory", "configmap"])
def test_a_captured_hotfix_never_stores_the_sensitive_value(
    store_kind: str, controlplane: Any, k8s: Any, namespace: str, tmp_path: Path
) -> None:
    git = web_deployment(log_level="info", api_key="git-key-0001", namespace=namespace)
    _apply_as_gitops(controlplane, git)
    store: HotfixStore = (
        DirectoryStore(state_dir=tmp_path / "state")
        if store_kind == "directory"
        else ConfigMapStore(api_client=k8s, configmap=f"{namespace}/writeback-state")
    )
    fired = threading.Event()

    def on_capture(capture: Capture) -> None:
        fired.set()

    capturer = HotfixCapturer(target="prod", policy=POLICY, store=store, on_capture=on_capture)
    cache = WatchingCluster(cluster=KubeCluster(api_client=k8s), api_client=k8s, on_event=capturer)
    selector = Selector.model_validate({"apiVersion": "apps/v1", "kind": "Deployment", "namespaces": [namespace]})
    try:
        cache.list_objects(selector=selector)
        env = [{"name": "LOG_LEVEL", "value": "debug"}, {"name": "API_KEY", "value": "person-s3cret-9f2"}]
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "web", "env": env}]}}}}
        controlplane.kubectl("patch", "deployment", "web", "-n", namespace, "-p", json.dumps(patch))
        assert fired.wait(10)
        wait_until("the capture stored", lambda: bool(store.load(target="prod")), timeout=10, step=0.05)

        stored = _stored_text(store_kind, tmp_path=tmp_path, k8s=k8s, namespace=namespace)
        assert "person-s3cret-9f2" not in stored and "git-key-0001" not in stored
        assert '"debug"' in stored  # the person's other change is kept
        [capture] = store.load(target="prod")
        assert capture.redacted == (API_KEY_PATH,) and capture.manager == "kubectl-patch"

        _apply_as_gitops(controlplane, git)  # the controller reverts both changes
        wait_until(
            "the controller's revert seen",
            lambda: all(_env(o.body)["LOG_LEVEL"] == "info" for o in cache.list_objects(selector=selector)),
            timeout=10,
            step=0.05,
        )
        time.sleep(0.5)
        capturing = CapturingCluster(cluster=cache, store=store, target="prod", policy=POLICY, ttl_seconds=3600)
        capturing.begin_cycle()
        [obj] = capturing.list_objects(selector=selector)
        assert [h.reverted_by for h in capturing.reverted()] == ["argocd-controller"]
        assert _env(obj.body) == {"LOG_LEVEL": "debug", "API_KEY": "git-key-0001"}  # the value is live's

        desired = DesiredObject(ref=obj.ref, body=git, file="apps/web.yaml")
        report = compute_drift(live=[obj], desired=[desired], options=EngineOptions(policy=POLICY, offline=True))
        by_path = {format_path(d.path): d for d in report.drifts}
        log_level = by_path["spec.template.spec.containers[name=web].env[name=LOG_LEVEL].value"]
        assert log_level.decision is Decision.WRITEBACK and log_level.live == "debug" and not log_level.sensitive
        assert not [p for p in by_path if "API_KEY" in p]  # the removed field is no drift
        assert "person-s3cret-9f2" not in _stored_text(store_kind, tmp_path=tmp_path, k8s=k8s, namespace=namespace)
    finally:
        cache.stop()


def test_a_whole_sensitive_item_comes_back_from_live_in_place() -> None:
    body = web_deployment(log_level="debug", api_key="person-s3cret")
    item = [parse_pattern("spec.template.spec.containers[*].env[name=API_KEY]")]
    done = scrub(body, patterns=item, kind="Deployment")
    assert [format_path(p) for p in done.removed] == ["spec.template.spec.containers[name=web].env[name=API_KEY]"]
    assert _env(done.body) == {"LOG_LEVEL": "debug"}
    live = web_deployment(log_level="info", api_key="live-key")
    live["spec"]["template"]["spec"]["containers"][0]["env"].reverse()  # API_KEY first in the live object
    back = restore(done.body, live=live, removed=done.removed)
    assert back["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "API_KEY", "value": "live-key"},
        {"name": "LOG_LEVEL", "value": "debug"},
    ]


@pytest.mark.controlplane
def test_a_capture_stored_with_a_value_is_cleaned_when_used(k8s: Any, namespace: str, tmp_path: Path) -> None:
    from kubernetes import client

    client.AppsV1Api(k8s).create_namespaced_deployment(  # a manifest dict: the client sends it as is
        namespace=namespace,
        body=web_deployment(log_level="info", api_key="git-key", namespace=namespace),  # type: ignore[arg-type]
    )
    cluster = KubeCluster(api_client=k8s)
    selector = Selector.model_validate({"apiVersion": "apps/v1", "kind": "Deployment", "namespaces": [namespace]})
    [live] = cluster.list_objects(selector=selector)
    old = web_deployment(log_level="debug", api_key="old-s3cret", namespace=namespace)  # as an older version stored it
    store = DirectoryStore(state_dir=tmp_path)
    store.save(Capture(target="prod", ref=live.ref, manager="kubectl-edit", operation=ManagerOperation.UPDATE,
                       time="2026-11-30T03:00:05Z", captured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       body=old))  # fmt: skip
    [file] = (tmp_path / "hotfixes").glob("*.json")
    assert "old-s3cret" in file.read_text()

    CapturingCluster(cluster=cluster, store=store, target="prod", policy=POLICY, ttl_seconds=3600).list_objects(
        selector=selector
    )

    assert "old-s3cret" not in file.read_text()
    [capture] = store.load(target="prod")
    assert capture.redacted == (API_KEY_PATH,) and _env(capture.body)["LOG_LEVEL"] == "debug"
