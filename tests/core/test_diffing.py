"""Leaf diff: keyed lists matched by key (never by position), atomic lists by index."""

from __future__ import annotations

from typing import Any

import pytest

from writeback.drift.diffing import diff
from writeback.drift.listkeys import resolver
from writeback.kube.paths import format_path, lookup_as_served, parse_path
from writeback.kube.pathtypes import ABSENT
from writeback.model import Op

KEYS = resolver(kind="Deployment", learned={})


def pod(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": list(containers)}}}}


def leaves(live: Any, git: Any, kind: str = "Deployment") -> list[tuple[str, Op, Any, Any]]:
    found = diff(live=live, git=git, keys=resolver(kind=kind, learned={}))
    return [(format_path(x.path), x.op, x.live, x.git) for x in found]


def test_reordered_containers_are_no_drift() -> None:
    a = {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}
    b = {"name": "b", "image": "b:1"}
    a_reordered = {**a, "env": list(reversed(a["env"]))}
    assert leaves(pod(a, b), pod(b, a_reordered)) == []


def test_keyed_items_are_addressed_by_key() -> None:
    live = pod({"name": "b", "image": "b:2"}, {"name": "a", "image": "a:1", "env": [{"name": "NEW", "value": "1"}]})
    git = pod({"name": "a", "image": "a:1", "env": [{"name": "OLD", "value": "0"}]}, {"name": "b", "image": "b:1"})
    assert leaves(live, git) == [
        ("spec.template.spec.containers[name=b].image", Op.CHANGE, "b:2", "b:1"),
        ("spec.template.spec.containers[name=a].env[name=NEW]", Op.ADD, {"name": "NEW", "value": "1"}, ABSENT),
        ("spec.template.spec.containers[name=a].env[name=OLD]", Op.REMOVE, ABSENT, {"name": "OLD", "value": "0"}),
    ]


def test_ports_match_with_the_protocol_default() -> None:
    live = pod(
        {"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}]}
    )
    git = pod({"name": "a", "ports": [{"containerPort": 53, "protocol": "UDP"}, {"containerPort": 80}]})
    assert leaves(live, git) == [
        ("spec.template.spec.containers[name=a].ports[containerPort=80,protocol=TCP].protocol", Op.ADD, "TCP", ABSENT)
    ]


def test_service_ports_are_keyed_by_port_and_protocol() -> None:
    live = {"spec": {"ports": [{"port": 443, "targetPort": 8443}, {"port": 80, "targetPort": 8081}]}}
    git = {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}]}}
    assert leaves(live, git, kind="Service") == [("spec.ports[port=80,protocol=TCP].targetPort", Op.CHANGE, 8081, 8080)]


def test_atomic_lists_diff_by_index() -> None:
    live = pod({"name": "a", "args": ["--port", "9100", "--verbose"]})
    git = pod({"name": "a", "args": ["--port", "9200"]})
    assert leaves(live, git) == [
        ("spec.template.spec.containers[name=a].args[1]", Op.CHANGE, "9100", "9200"),
        ("spec.template.spec.containers[name=a].args[2]", Op.ADD, "--verbose", ABSENT),
    ]


def test_learned_keys_take_precedence() -> None:
    keys = resolver(kind="Widget", learned={"spec.rules": ("host",)})
    live = {"spec": {"rules": [{"host": "b", "x": 1}, {"host": "a", "x": 1}]}}
    git = {"spec": {"rules": [{"host": "a", "x": 1}, {"host": "b", "x": 2}]}}
    assert [format_path(x.path) for x in diff(live=live, git=git, keys=keys)] == ["spec.rules[host=b].x"]


def test_duplicate_keys_fall_back_to_positions() -> None:
    live = pod({"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "X", "value": "2"}]})
    git = pod({"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "X", "value": "3"}]})
    assert [x[0] for x in leaves(live, git)] == ["spec.template.spec.containers[name=a].env[1].value"]


@pytest.mark.parametrize("empty", [None, {}, []])
def test_absent_null_and_empty_are_the_same(empty: Any) -> None:
    assert leaves({"spec": {"securityContext": empty, "x": 1}}, {"spec": {"x": 1}}) == []
    assert leaves({"spec": {"x": 1}}, {"spec": {"securityContext": empty, "x": 1}}) == []


def test_one_sided_maps_expand_to_leaves_and_null_stays_a_value() -> None:
    live = {"spec": {"securityContext": {"privileged": True, "capabilities": {"add": ["NET_ADMIN"]}}}}
    assert leaves(live, {"spec": {"securityContext": None}}) == [
        ("spec.securityContext.privileged", Op.ADD, True, ABSENT),
        ("spec.securityContext.capabilities.add", Op.ADD, ["NET_ADMIN"], ABSENT),
    ]
    assert leaves({"data": {}}, {"data": {"k": None, "j": "v"}}) == [("data.j", Op.REMOVE, ABSENT, "v")]
    assert leaves({"spec": {"v": None}}, {"spec": {"v": "x"}}) == [("spec.v", Op.REMOVE, None, "x")]


def test_type_changes_are_changes() -> None:
    assert leaves({"spec": {"x": "1"}}, {"spec": {"x": 1}}) == [("spec.x", Op.CHANGE, "1", 1)]
    assert leaves({"spec": {"x": [1]}}, {"spec": {"x": {"a": 1}}}) == [("spec.x", Op.CHANGE, [1], {"a": 1})]


def test_get_at_follows_selectors() -> None:
    body = pod({"name": "a", "ports": [{"containerPort": 80}]})
    assert lookup_as_served(
        body, parse_path("spec.template.spec.containers[name=a].ports[containerPort=80,protocol=TCP]")
    ) == {"containerPort": 80}
    assert lookup_as_served(body, parse_path("spec.template.spec.containers[name=zz]")) is ABSENT
    assert lookup_as_served(body, parse_path("spec.template.spec.containers[3]")) is ABSENT
