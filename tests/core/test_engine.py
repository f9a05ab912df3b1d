"""The engine entry points: pending sync, offline defaults, dry-run results, new/deleted, secrets, JSON."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.core.support import applied_fields, defaulted_live, deployment_git, desired_obj, entry, k, live_obj, ref_of
from writeback.drift.engine import (
    REDACTED,
    DriftReport,
    EngineOptions,
    compute_drift,
    drift_to_json,
    needs_dry_run,
    report_to_json,
)
from writeback.errors import InputError
from writeback.kube.paths import format_path
from writeback.model import Decision, Drift, DryRun, DryRunKind, Op, Rule
from writeback.settings import Policy

CONTAINER = "spec.template.spec.containers[name=web]"


def by_path(report: DriftReport) -> dict[str, Drift]:
    return {format_path(d.path): d for d in report.drifts}


def edited(live: dict[str, Any], fields: dict[str, Any], manager: str = "kubectl-edit") -> dict[str, Any]:
    live["metadata"]["managedFields"] = [
        entry("argocd-controller", applied_fields(), operation="Apply"),
        entry(manager, fields, time="2024-05-02T03:07:00Z"),
    ]
    return live


def image_edit() -> dict[str, Any]:
    live = defaulted_live(deployment_git())
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/shop/web:1.4.3"
    return edited(live, {"f:spec": {"f:template": {"f:spec": {"f:containers": {k(name="web"): {"f:image": {}}}}}}})


def test_defaults_are_not_drift_and_are_explained() -> None:
    live = edited(defaulted_live(deployment_git()), {})
    report = compute_drift(live=[live_obj(live)], desired=[desired_obj(deployment_git())], options=EngineOptions())
    assert report.drifts == ()
    rules = {format_path(d.path): d.rule for d in report.dropped}
    assert rules["spec.strategy.type"] == "defaulted by the API server"
    assert rules[f"{CONTAINER}.terminationMessagePath"] == "defaulted by the API server"
    assert rules[f"{CONTAINER}.ports[containerPort=8080,protocol=TCP].protocol"] == "defaulted by the API server"
    assert rules["status"] == "server-populated: status"
    assert report.mode == "cluster"


def test_offline_without_managed_fields_says_what_it_could_not_judge() -> None:
    live = defaulted_live(deployment_git())
    live["spec"]["replicas"] = 45
    live["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "NEW", "value": "1"})
    report = compute_drift(
        live=[live_obj(live)], desired=[desired_obj(deployment_git())], options=EngineOptions(offline=True)
    )
    assert report.mode == "offline"
    drifts = by_path(report)
    assert set(drifts) == {"spec.replicas", f"{CONTAINER}.env[name=NEW]"}  # defaults still dropped (table)
    assert all(d.manager is None and "manager is unknown" in d.reason for d in drifts.values())
    assert {(d.decision, d.rule) for d in drifts.values()} == {(Decision.UNATTRIBUTED, Rule.NO_MANAGED_FIELDS)}
    assert any("no managedFields" in n and "Deployment.apps shop/web" in n for n in report.notes)
    assert any("offline mode" in n for n in report.notes)
    assert any(d.rule == "defaulted by the API server (built-in defaults table)" for d in report.dropped)


def test_offline_with_managed_fields_decides_like_cluster_mode() -> None:
    live = image_edit()
    live["spec"]["replicas"] = 45
    live["metadata"]["managedFields"].append(
        entry("kube-controller-manager", {"f:spec": {"f:replicas": {}}}, subresource="scale")
    )
    cluster = by_path(
        compute_drift(live=[live_obj(live)], desired=[desired_obj(deployment_git())], options=EngineOptions())
    )
    offline = by_path(
        compute_drift(
            live=[live_obj(live)], desired=[desired_obj(deployment_git())], options=EngineOptions(offline=True)
        )
    )
    assert {p: d.decision for p, d in cluster.items()} == {p: d.decision for p, d in offline.items()}
    assert offline["spec.replicas"].decision is Decision.IGNORE
    assert offline[f"{CONTAINER}.image"].decision is Decision.WRITEBACK


def test_git_ahead_of_live_is_pending_not_drift() -> None:
    revision = deployment_git()
    head = deployment_git()
    head["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/shop/web:1.5.0"
    live = edited(defaulted_live(revision), {})
    report = compute_drift(
        live=[live_obj(live)],
        desired=[desired_obj(revision)],
        head=[desired_obj(head)],
        options=EngineOptions(),
        revision="a1b2c3",
    )
    assert report.drifts == () and report.revision == "a1b2c3"
    # A person touched the same field in the meantime: Git's pending commit decides it, not writeback.
    live = image_edit()
    live["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "debug"
    live["metadata"]["managedFields"][1]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"][k(name="web")][
        "f:env"
    ] = {k(name="LOG_LEVEL"): {"f:value": {}}}
    drifts = by_path(
        compute_drift(
            live=[live_obj(live)],
            desired=[desired_obj(revision)],
            head=[desired_obj(head)],
            options=EngineOptions(),
            revision="a1b2c3",
        )
    )
    assert drifts[f"{CONTAINER}.image"].decision is Decision.PENDING
    assert "a1b2c3" in drifts[f"{CONTAINER}.image"].reason
    assert drifts[f"{CONTAINER}.env[name=LOG_LEVEL].value"].decision is Decision.WRITEBACK


def test_dry_run_result_settles_what_the_api_server_would_store() -> None:
    git = deployment_git()
    git["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "EMPTY", "value": ""})
    git["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "0.5"}}
    git["spec"]["template"]["spec"]["containers"][0]["imagePullPolice"] = "Always"  # a typo: the server drops it
    live = edited(defaulted_live(deployment_git()), {})
    live["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "EMPTY"})
    live["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "500m"}}
    without = by_path(compute_drift(live=[live_obj(live)], desired=[desired_obj(git)], options=EngineOptions()))
    # quantities compare by value, and an empty string field is unset; only the server knows it drops the typo
    assert set(without) == {f"{CONTAINER}.imagePullPolice"}
    dry = copy.deepcopy(live)
    with_dry = compute_drift(
        live=[live_obj(live)],
        desired=[desired_obj(git)],
        options=EngineOptions(),
        dry_run={ref_of(git).identity: DryRun(kind=DryRunKind.APPLY, body=dry)},
    )
    assert with_dry.drifts == ()
    assert any(d.rule == "the API server stores it as live has it" for d in with_dry.dropped)


def test_client_side_apply_defaults_are_told_from_fields_a_person_applied() -> None:
    git: dict[str, Any] = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "shop"},
        "spec": {"size": 3, "color": "red"},
    }
    live = copy.deepcopy(git)
    live["spec"]["mode"] = "auto"  # a CRD schema default, unknown to the built-in table
    applied: dict[str, Any] = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 3, "color": "red"},
    }
    live["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied)}
    live["metadata"]["managedFields"] = [
        entry(
            "kubectl-client-side-apply",
            {
                "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}},
                "f:spec": {"f:size": {}, "f:color": {}, "f:mode": {}},
            },  # as the API server records a client-side apply: the annotation is the applier's too
            api_version="example.com/v1",
        )
    ]
    report = compute_drift(live=[live_obj(live)], desired=[desired_obj(git)], options=EngineOptions())
    assert report.drifts == ()
    assert any(format_path(d.path) == "spec.mode" and "last-applied" in d.rule for d in report.dropped)
    applied["spec"]["mode"] = "auto"  # this time the person applied the field on purpose
    live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(applied)
    d = by_path(compute_drift(live=[live_obj(live)], desired=[desired_obj(git)], options=EngineOptions()))["spec.mode"]
    assert (d.op, d.decision, d.manager) == (Op.ADD, Decision.WRITEBACK, "kubectl-client-side-apply")


def configmap(name: str, *, managers: list[dict[str, Any]] | None = None, **meta: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "shop", **meta},
        "data": {"a": "1"},
    }
    if managers is not None:
        body["metadata"]["managedFields"] = managers
    return body


def test_new_and_deleted_objects() -> None:
    declared = configmap("declared")
    person = configmap(
        "debug-settings",
        managers=[entry("kubectl-create", {"f:data": {"f:a": {}}}, api_version="v1", time="2024-05-02T03:00:00Z")],
    )
    by_controller = configmap(
        "kube-root-ca.crt", managers=[entry("kube-controller-manager", {"f:data": {}}, api_version="v1")]
    )
    owned = configmap(
        "owned",
        managers=[entry("kubectl-create", {}, api_version="v1")],
        ownerReferences=[{"apiVersion": "v1", "kind": "Foo", "name": "x", "uid": "1", "controller": True}],
    )
    other_kind = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "svc",
            "namespace": "shop",
            "managedFields": [entry("kubectl-create", {}, api_version="v1")],
        },
    }
    missing = configmap("missing")
    report = compute_drift(
        live=[live_obj(x) for x in (declared, person, by_controller, owned, other_kind)],
        desired=[desired_obj(declared), desired_obj(missing, file="cm/missing.yaml")],
        options=EngineOptions(),
    )
    got = {(d.resource.name, d.decision) for d in report.drifts}
    assert got == {("debug-settings", Decision.NEW), ("missing", Decision.DELETED)}
    new = next(d for d in report.drifts if d.decision is Decision.NEW)
    assert (new.op, new.manager, new.time, new.rule) == (Op.ADD, "kubectl-create", "2024-05-02T03:00:00Z",
                                                         Rule.CREATED_LIVE)  # fmt: skip
    deleted = next(d for d in report.drifts if d.decision is Decision.DELETED)
    assert (deleted.op, deleted.rule) == (Op.REMOVE, Rule.MISSING_LIVE) and "cm/missing.yaml" in deleted.reason
    wider = compute_drift(
        live=[live_obj(declared), live_obj(other_kind)],
        desired=[desired_obj(declared)],
        options=EngineOptions(new_kinds=frozenset({("", "Service")})),
    )
    assert [(d.resource.name, d.decision) for d in wider.drifts] == [("svc", Decision.NEW)]


def secret(value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "shop"},
        "data": {"password": value},
    }


def test_secrets_are_excluded_by_default_and_redacted_when_included() -> None:
    live = secret("aHVudGVyMg==")
    live["metadata"]["managedFields"] = [entry("kubectl-edit", {"f:data": {"f:password": {}}}, api_version="v1")]
    git = secret("c2VjcmV0")
    excluded = compute_drift(live=[live_obj(live)], desired=[desired_obj(git)], options=EngineOptions())
    assert excluded.drifts == () and any("Secret" in n for n in excluded.notes)
    report = compute_drift(
        live=[live_obj(live)], desired=[desired_obj(git)], options=EngineOptions(policy=Policy(include_secrets=True))
    )
    (d,) = report.drifts
    assert d.sensitive and d.live == REDACTED and d.git == REDACTED and "report-only" in d.reason
    text = json.dumps(report_to_json(report, explain=True))
    assert "aHVudGVyMg" not in text and "c2VjcmV0" not in text
    assert drift_to_json(d)["live"] == "changed (value redacted)"


def test_sensitive_paths_are_redacted() -> None:
    live = edited(configmap("cfg"), {"f:data": {"f:a": {}}})
    live["data"]["a"] = "token-123"
    report = compute_drift(
        live=[live_obj(live)],
        desired=[desired_obj(configmap("cfg"))],
        options=EngineOptions(policy=Policy(sensitive_paths=("data.*",))),
    )
    (d,) = report.drifts
    assert d.sensitive and "token-123" not in json.dumps(report_to_json(report))


def test_json_shape_leaves_out_absent_sides_and_keeps_null() -> None:
    drifts = by_path(
        compute_drift(
            live=[live_obj(image_edit())],
            desired=[desired_obj(deployment_git())],
            options=EngineOptions(),
            revision="a1b2c3",
        )
    )
    out = drift_to_json(drifts[f"{CONTAINER}.image"])
    assert out == {
        "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "web"},
        "path": f"{CONTAINER}.image",
        "op": "change",
        "live": "registry.example.com/shop/web:1.4.3",
        "git": "registry.example.com/shop/web:1.4.2",
        "manager": "kubectl-edit",
        "operation": "Update",
        "time": "2024-05-02T03:07:00Z",
        "decision": "writeback",
        "reason": "kubectl-edit (Update) changed a field Git declares at 2024-05-02T03:07:00Z",
    }
    git = configmap("cfg")
    git["data"]["b"] = "x"
    live = edited(configmap("cfg"), {})
    live["data"]["b"] = None
    (d,) = compute_drift(live=[live_obj(live)], desired=[desired_obj(git)], options=EngineOptions()).drifts
    out = drift_to_json(d)
    assert out["op"] == "remove" and out["live"] is None and out["git"] == "x"
    added = drift_to_json(
        compute_drift(
            live=[live_obj(git)], desired=[desired_obj(configmap("cfg"))], options=EngineOptions(offline=True)
        ).drifts[0]
    )
    assert "git" not in added and added["live"] == "x"


def test_report_json_with_explain() -> None:
    report = compute_drift(
        live=[live_obj(image_edit())], desired=[desired_obj(deployment_git())], options=EngineOptions(), revision="r1"
    )
    out = report_to_json(report, explain=True)
    assert out["mode"] == "cluster" and out["revision"] == "r1" and len(out["drifts"]) == 1
    assert {"resource", "path", "rule", "side"} <= set(out["dropped"][0])
    assert "dropped" not in report_to_json(report)
    json.dumps(out)


def test_needs_dry_run_only_for_objects_with_undecided_drift() -> None:
    quiet = edited(defaulted_live(deployment_git()), {})
    quiet["spec"]["replicas"] = 45
    quiet["metadata"]["managedFields"].append(
        entry("kube-controller-manager", {"f:spec": {"f:replicas": {}}}, subresource="scale")
    )
    assert not needs_dry_run(live=live_obj(quiet), desired=desired_obj(deployment_git()), options=EngineOptions())
    assert needs_dry_run(live=live_obj(image_edit()), desired=desired_obj(deployment_git()), options=EngineOptions())


def test_an_object_declared_twice_is_an_input_error_naming_both_files() -> None:
    with pytest.raises(InputError, match=r"a\.yaml.*b\.yaml"):
        compute_drift(
            live=[],
            desired=[desired_obj(configmap("x"), file="a.yaml"), desired_obj(configmap("x"), file="b.yaml")],
            options=EngineOptions(),
        )


def test_objects_added_or_removed_at_the_head_are_pending() -> None:
    kept, added, removed = configmap("kept"), configmap("added-at-head"), configmap("removed-at-head")
    person = [entry("kubectl-create", {"f:data": {"f:a": {}}}, api_version="v1")]
    report = compute_drift(
        live=[live_obj(kept), live_obj(configmap("added-at-head", managers=person))],
        desired=[desired_obj(kept), desired_obj(removed)],
        head=[desired_obj(kept), desired_obj(added)],
        options=EngineOptions(),
        revision="r1",
    )
    got = {(d.resource.name, d.op, d.decision) for d in report.drifts}
    assert got == {("added-at-head", Op.ADD, Decision.PENDING), ("removed-at-head", Op.REMOVE, Decision.PENDING)}
    assert all("after the applied revision r1" in d.reason for d in report.drifts)
    assert {d.rule for d in report.drifts} == {Rule.PENDING_SYNC}
