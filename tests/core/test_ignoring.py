"""Ignore rules: configured rules, webhook presets (on and off), Argo CD ignoreDifferences, Flux annotations."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.support import applied_fields, defaulted_live, deployment_git, desired_obj, entry, k, live_obj
from writeback.drift.engine import EngineOptions, compute_drift
from writeback.drift.ignores.rules import build_ignores
from writeback.kube.paths import format_path
from writeback.model import Decision, Drift, Rule
from writeback.settings import IgnoreRule, Policy

CONTAINER = "spec.template.spec.containers[name=web]"


def run(
    live: dict[str, Any], git: dict[str, Any] | None = None, **options: Any
) -> tuple[dict[str, Drift], tuple[str, ...]]:
    report = compute_drift(
        live=[live_obj(live)], desired=[desired_obj(git or deployment_git())], options=EngineOptions(**options)
    )
    return {format_path(d.path): d for d in report.drifts}, report.notes


def injected(manager: str = "kubectl-client-side-apply") -> dict[str, Any]:
    """A Deployment whose pod template an Istio-like webhook mutated; the injection is attributed to
    the manager of the request (as when the webhook ran on that manager's update)."""
    live = defaulted_live(deployment_git())
    tpl = live["spec"]["template"]
    tpl["metadata"]["annotations"] = {"sidecar.istio.io/status": '{"containers":["istio-proxy"]}'}
    tpl["metadata"]["labels"]["security.istio.io/tlsMode"] = "istio"
    tpl["spec"]["containers"].append({"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.22.0"})
    tpl["spec"]["initContainers"] = [
        {
            "name": "istio-init",
            "image": "docker.io/istio/proxyv2:1.22.0",
            "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}},
        }
    ]
    tpl["spec"]["volumes"] = [{"name": "istio-envoy", "emptyDir": {"medium": "Memory"}}]
    injection = {
        "f:spec": {
            "f:template": {
                "f:metadata": {
                    "f:annotations": {".": {}, "f:sidecar.istio.io/status": {}},
                    "f:labels": {"f:security.istio.io/tlsMode": {}},
                },
                "f:spec": {
                    "f:containers": {k(name="istio-proxy"): {".": {}, "f:image": {}, "f:name": {}}},
                    "f:initContainers": {".": {}, k(name="istio-init"): {".": {}, "f:image": {}, "f:name": {}}},
                    "f:volumes": {
                        ".": {},
                        k(name="istio-envoy"): {".": {}, "f:emptyDir": {"f:medium": {}}, "f:name": {}},
                    },
                },
            }
        }
    }
    live["metadata"]["managedFields"] = [
        entry("argocd-controller", applied_fields(), operation="Apply"),
        entry(manager, injection),
    ]
    return live


INJECTED = {
    'spec.template.metadata.annotations["sidecar.istio.io/status"]',
    'spec.template.metadata.labels["security.istio.io/tlsMode"]',
    "spec.template.spec.containers[name=istio-proxy]",
    "spec.template.spec.initContainers[name=istio-init]",
    "spec.template.spec.volumes[name=istio-envoy]",
}


def test_istio_preset_ignores_the_injection() -> None:
    drifts, _ = run(injected())
    assert set(drifts) == INJECTED
    for d in drifts.values():
        assert (d.decision, d.rule) == (Decision.IGNORE, Rule.WEBHOOK_PRESET)
        assert d.reason == "injected by a mutating webhook (istio preset)"


def test_presets_can_be_turned_off() -> None:
    drifts, _ = run(injected(), policy=Policy(presets=("linkerd", "vault")))
    assert drifts["spec.template.spec.containers[name=istio-proxy]"].decision is Decision.WRITEBACK
    assert drifts["spec.template.spec.initContainers[name=istio-init]"].decision is Decision.FLAG  # capabilities


def test_unowned_injections_are_ignored_even_without_a_preset() -> None:
    live = injected()
    live["metadata"]["managedFields"].pop()  # the API server did not record the webhook's changes
    drifts, _ = run(live, policy=Policy(presets=()))
    assert set(drifts) == INJECTED
    assert {(d.decision, d.rule) for d in drifts.values()} == {(Decision.IGNORE, Rule.WEBHOOK_INJECTED)}


def test_presets_only_explain_additions() -> None:
    git = deployment_git()
    git["spec"]["template"]["metadata"]["annotations"] = {"sidecar.istio.io/inject": "true"}
    live = defaulted_live(git)
    live["spec"]["template"]["metadata"]["annotations"]["sidecar.istio.io/inject"] = "false"
    live["metadata"]["managedFields"] = [
        entry(
            "kubectl-edit",
            {"f:spec": {"f:template": {"f:metadata": {"f:annotations": {"f:sidecar.istio.io/inject": {}}}}}},
        )
    ]
    drifts, _ = run(live, git)
    assert drifts['spec.template.metadata.annotations["sidecar.istio.io/inject"]'].decision is Decision.WRITEBACK


@pytest.mark.parametrize(
    ("preset", "container", "annotation"),
    [
        ("linkerd", "linkerd-proxy", "linkerd.io/proxy-version"),
        ("vault", "vault-agent", "vault.hashicorp.com/agent-inject-status"),
    ],
)
def test_linkerd_and_vault_presets(preset: str, container: str, annotation: str) -> None:
    live = defaulted_live(deployment_git())
    tpl = live["spec"]["template"]
    tpl["metadata"]["annotations"] = {annotation: "x"}
    tpl["spec"]["containers"].append({"name": container, "image": "example/agent:1"})
    person = entry(
        "kubectl-client-side-apply",
        {
            "f:spec": {
                "f:template": {
                    "f:metadata": {"f:annotations": {f"f:{annotation}": {}}},
                    "f:spec": {"f:containers": {k(name=container): {".": {}, "f:name": {}, "f:image": {}}}},
                }
            }
        },
    )
    live["metadata"]["managedFields"] = [entry("argocd-controller", applied_fields(), operation="Apply"), person]
    on, _ = run(copy.deepcopy(live))
    off, _ = run(live, policy=Policy(presets=()))
    for path in (
        f"spec.template.spec.containers[name={container}]",
        f'spec.template.metadata.annotations["{annotation}"]',
    ):
        assert on[path].decision is Decision.IGNORE and f"({preset} preset)" in on[path].reason
        assert off[path].decision is Decision.WRITEBACK


def hotfix() -> dict[str, Any]:
    live = defaulted_live(deployment_git())
    live["spec"]["replicas"] = 4
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/shop/web:1.4.3"
    live["metadata"]["managedFields"] = [
        entry("argocd-controller", applied_fields(), operation="Apply"),
        entry(
            "kubectl-edit",
            {
                "f:spec": {
                    "f:replicas": {},
                    "f:template": {"f:spec": {"f:containers": {k(name="web"): {"f:image": {}}}}},
                }
            },
        ),
    ]
    return live


@pytest.mark.parametrize(
    ("entry_", "ignored"),
    [
        ({"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}, {"spec.replicas"}),
        (
            {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/template/spec/containers/0/image"]},
            {f"{CONTAINER}.image"},
        ),
        (
            {
                "group": "apps",
                "kind": "Deployment",
                "jqPathExpressions": ['.spec.template.spec.containers[] | select(.name == "web") | .image'],
            },
            {f"{CONTAINER}.image"},
        ),
        (
            {
                "group": "apps",
                "kind": "Deployment",
                "jqPathExpressions": ['.spec.template.spec.containers[] | select(.name | startswith("we"))'],
            },
            {f"{CONTAINER}.image"},
        ),
        (
            {"group": "*", "kind": "*", "managedFieldsManagers": ["kubectl-edit"]},
            {"spec.replicas", f"{CONTAINER}.image"},
        ),
        ({"kind": "Deployment", "jsonPointers": ["/spec/replicas"]}, set()),  # no group: the core group only
        ({"group": "apps", "kind": "Deployment", "name": "other", "jsonPointers": ["/spec/replicas"]}, set()),
    ],
)
def test_argocd_ignore_differences(entry_: dict[str, Any], ignored: set[str]) -> None:
    drifts, _ = run(hotfix(), argocd_ignore=(entry_,))
    assert {p for p, d in drifts.items() if d.decision is Decision.IGNORE} == ignored
    for p in ignored:
        assert drifts[p].rule is Rule.ARGOCD_IGNORE_DIFFERENCES
        assert drifts[p].reason.startswith("Argo CD ignoreDifferences")


def test_unsupported_jq_is_reported_not_fatal() -> None:
    drifts, notes = run(
        hotfix(), argocd_ignore=({"kind": "Deployment", "group": "apps", "jqPathExpressions": ["map(.x)"]},)
    )
    assert all(d.decision is Decision.WRITEBACK for d in drifts.values())
    assert any("map(.x)" in n and "not used" in n for n in notes)


@pytest.mark.parametrize(("key", "value"), [("ssa", "IfNotPresent"), ("ssa", "Ignore"), ("reconcile", "disabled")])
def test_flux_annotations(key: str, value: str) -> None:
    git = deployment_git()
    git["metadata"]["annotations"] = {f"kustomize.toolkit.fluxcd.io/{key}": value}
    live = hotfix()
    live["metadata"]["annotations"][f"kustomize.toolkit.fluxcd.io/{key}"] = value
    drifts, _ = run(live, git)
    assert {(d.decision, d.rule) for d in drifts.values()} == {(Decision.IGNORE, Rule.FLUX_ANNOTATION)}
    assert all("Flux does not" in d.reason for d in drifts.values())


def test_configured_rules_with_kind_and_manager_filters() -> None:
    rule = IgnoreRule(
        paths=("spec.replicas", "**.containers[*].image"),
        kind="Deployment",
        managers=("kubectl-*",),
        reason="hotfixes expire",
    )
    drifts, _ = run(hotfix(), ignore=(rule,))
    assert {(d.rule, d.reason) for d in drifts.values()} == {(Rule.IGNORE_RULE, "hotfixes expire")}
    other_kind = IgnoreRule(paths=("spec.replicas",), kind="StatefulSet")
    other_manager = IgnoreRule(paths=("spec.replicas",), managers=("helm",))
    drifts, _ = run(hotfix(), ignore=(other_kind, other_manager))
    assert drifts["spec.replicas"].decision is Decision.WRITEBACK


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=40) | st.text(alphabet=st.sampled_from(list('.[]|"\\ select()==startswith name"')), max_size=40)
)
def test_any_argocd_expression_compiles_or_becomes_a_note(text: str) -> None:
    ignores = build_ignores(
        rules=(), presets=(), argocd=({"kind": "*", "group": "*", "jqPathExpressions": [text], "jsonPointers": [text]},)
    )
    drifts, _ = run(hotfix(), argocd_ignore=({"kind": "*", "group": "*", "jqPathExpressions": [text]},))
    assert len(ignores.argo) == 1 and drifts
