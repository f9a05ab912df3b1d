"""A sensitive path below the drift's own path (a whole env item, a new object) redacts the drift's value."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.core.support import applied_fields, defaulted_live, deployment_git, desired_obj, entry, k, live_obj
from writeback.drift.engine import REDACTED, EngineOptions, compute_drift, report_to_json
from writeback.drift.subtree_matching import matches_within
from writeback.kube.paths import parse_path, parse_pattern
from writeback.kube.pathtypes import ABSENT
from writeback.model import Decision
from writeback.settings import Policy

ENV_VALUE = parse_pattern("spec.template.spec.containers[*].env[name=API_KEY].value")
OPTIONS = EngineOptions(policy=Policy(sensitive_paths=("spec.template.spec.containers[*].env[name=API_KEY].value",)))


def test_is_sensitive_looks_inside_added_values() -> None:
    item = parse_path("spec.template.spec.containers[name=web].env[name=API_KEY]")
    assert matches_within([ENV_VALUE], path=item, values=({"name": "API_KEY", "value": "s3cr3t"}, ABSENT))
    assert not matches_within([ENV_VALUE], path=item, values=({"name": "API_KEY"}, ABSENT))
    container = parse_path("spec.template.spec.containers[name=web]")
    added = {"name": "web", "env": [{"name": "MODE", "value": "x"}, {"name": "API_KEY", "value": "s3cr3t"}]}
    assert matches_within([ENV_VALUE], path=container, values=(added, ABSENT))
    assert not matches_within([ENV_VALUE], path=container, values=({"name": "web", "env": [{"name": "MODE"}]},))
    assert matches_within([ENV_VALUE], path=(*item, *parse_path("value")), values=("s3cr3t", ABSENT))


def test_an_added_env_item_holding_a_sensitive_value_is_redacted() -> None:
    live = defaulted_live(deployment_git())
    live["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "API_KEY", "value": "s3cr3t"})
    fields: dict[str, Any] = {"f:spec": {"f:template": {"f:spec": {"f:containers": {k(name="web"): {"f:env": {
        k(name="API_KEY"): {".": {}, "f:name": {}, "f:value": {}}}}}}}}}  # fmt: skip
    live["metadata"]["managedFields"] = [
        entry("argocd-controller", applied_fields(), operation="Apply"),
        entry("kubectl-edit", fields, time="2024-05-02T03:07:00Z"),
    ]

    report = compute_drift(live=[live_obj(live)], desired=[desired_obj(deployment_git())], options=OPTIONS)

    (drift,) = report.drifts
    assert drift.decision is Decision.WRITEBACK and drift.sensitive and drift.live == REDACTED
    assert "s3cr3t" not in json.dumps(report_to_json(report))


def test_a_new_object_holding_a_sensitive_value_is_redacted() -> None:
    live = defaulted_live(deployment_git())
    live["metadata"]["name"] = "other"
    live["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "API_KEY", "value": "s3cr3t"})
    live["metadata"]["managedFields"] = [entry("kubectl-create", {"f:spec": {}}, time="2024-05-02T03:07:00Z")]

    report = compute_drift(
        live=[live_obj(live), live_obj(copy.deepcopy(defaulted_live(deployment_git())))],
        desired=[desired_obj(deployment_git())],
        options=OPTIONS,
    )

    (new,) = [d for d in report.drifts if d.decision is Decision.NEW]
    assert new.sensitive and "s3cr3t" not in json.dumps(report_to_json(report))


def test_a_flag_path_inside_an_added_item_needs_security_review() -> None:
    from writeback.drift.diffing import Leaf
    from writeback.drift.security import security_flag
    from writeback.kube.refs import ObjectRef
    from writeback.model import Explanation, Op, Rule

    ref = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="shop", name="web")
    flag = [parse_pattern("spec.template.spec.containers[*].env[name=LD_PRELOAD]")]
    path = parse_path("spec.template.spec.containers[name=debug]")
    added = Leaf(path=path, op=Op.ADD, live={"name": "debug", "env": [{"name": "LD_PRELOAD", "value": "/x.so"}]})
    plain = Leaf(path=path, op=Op.ADD, live={"name": "debug", "image": "registry.example.com/shop/web:1"})

    assert security_flag(ref=ref, leaf=added, policy=Policy(), flag_patterns=flag) == Explanation(
        Rule.FLAG_PATH, "matches a configured flag path: needs security review"
    )
    assert security_flag(ref=ref, leaf=plain, policy=Policy(), flag_patterns=flag) is None
