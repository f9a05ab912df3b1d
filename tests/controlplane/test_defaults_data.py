"""The committed offline defaults data is what the real API server fills in (regenerated on the control plane)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.controlplane import defaults_gen
from tests.controlplane.defaults_gen import GenerationError, consolidate, target_file
from writeback.kube.kinds import KUBERNETES_MINOR
from writeback.kube.pathtypes import Index, Key


def _entries(data: dict[str, Any]) -> set[str]:
    out = {
        f"scope {group or 'core'}/{kind}={ns}" for group, kinds in data["scopes"].items() for kind, ns in kinds.items()
    }
    for kind, body in data["kinds"].items():
        out |= {f"{kind} {f['path']} = {json.dumps(f.get('value', f.get('derived')))}" for f in body["fields"]}
        out |= {f"{kind} {i['path']} item {json.dumps(i['item'], sort_keys=True)}" for i in body["items"]}
    return out


@pytest.mark.controlplane
def test_the_committed_data_is_what_the_api_server_fills_in(controlplane: Any) -> None:
    fresh = defaults_gen.generate(controlplane)
    minor = ".".join(fresh["kubernetes"].lstrip("v").split(".")[:2])
    assert minor == KUBERNETES_MINOR, (
        f"the control plane runs {fresh['kubernetes']}, the data is for {KUBERNETES_MINOR}"
    )
    committed = json.loads(target_file(fresh["kubernetes"]).read_text(encoding="utf-8"))
    if fresh != committed:
        new, old = _entries(fresh), _entries(committed)
        lines = [f"+ {e}" for e in sorted(new - old)] + [f"- {e}" for e in sorted(old - new)]
        pytest.fail(
            f"{target_file(fresh['kubernetes'])} differs from what {fresh['kubernetes']} fills in "
            f"(regenerate: .venv/bin/python {defaults_gen.GENERATOR}):\n" + "\n".join(lines[:60]),
            pytrace=False,
        )
    # the data answers what issue 9 found missing
    fields = {(k, f["path"]) for k, b in committed["kinds"].items() for f in b["fields"]}
    for kind, path in (
        ("MutatingWebhookConfiguration", "webhooks[*].matchPolicy"),
        ("MutatingWebhookConfiguration", "webhooks[*].reinvocationPolicy"),
        ("ValidatingWebhookConfiguration", "webhooks[*].rules[*].scope"),
        ("ValidatingWebhookConfiguration", "webhooks[*].clientConfig.service.port"),
        ("Deployment", "spec.template.spec.containers[*].env[*].valueFrom.resourceFieldRef.divisor"),
        ("PersistentVolume", "spec.volumeMode"),
        ("PersistentVolume", "spec.hostPath.type"),
    ):
        assert (kind, path) in fields


def _seen(kind: str, path: str, value: Any, ancestors: tuple[Any, ...] = ()) -> defaults_gen.Seen:
    segs = tuple(Index(0) if s == "[*]" else Key(s) for s in path.replace("[*]", ".[*]").split("."))
    return defaults_gen.Seen(kind=kind, path=segs, value=value, ancestors=ancestors)


def test_a_value_that_varies_without_a_derived_rule_is_refused() -> None:
    with pytest.raises(GenerationError, match=r"Deployment spec.replicas: the value varies"):
        consolidate([_seen("Deployment", "spec.replicas", 1), _seen("Deployment", "spec.replicas", 2)])


def test_a_value_that_breaks_its_derived_rule_is_refused() -> None:
    port = {"port": 80, "targetPort": 81}
    with pytest.raises(GenerationError, match=r"breaks the derived rule 'same-as-port'"):
        consolidate([_seen("Service", "spec.ports[*].targetPort", 81, (port,))])


def test_constants_rules_and_items_are_recorded() -> None:
    port = {"port": 80, "targetPort": 80}
    toleration = {"key": "k", "operator": "Exists"}
    item = defaults_gen.Seen(kind="Pod", path=(Key("spec"), Key("tolerations"), Index(0)), value=toleration, item=True)
    kinds = consolidate(
        [
            _seen("Deployment", "spec.replicas", 1),
            _seen("Deployment", "spec.replicas", 1),
            _seen("Service", "spec.ports[*].targetPort", 80, (port,)),
            item,
        ]
    )
    assert kinds == {
        "Deployment": {"fields": [{"path": "spec.replicas", "value": 1}], "items": []},
        "Service": {"fields": [{"path": "spec.ports[*].targetPort", "derived": "same-as-port"}], "items": []},
        "Pod": {"fields": [], "items": [{"path": "spec.tolerations[*]", "item": toleration}]},
    }
