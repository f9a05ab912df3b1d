"""One decision per drift, with its reason: each rule of the decision policy."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.core.support import applied_fields, defaulted_live, deployment_git, desired_obj, entry, k, live_obj
from writeback.drift.deciding import Role, manager_role
from writeback.drift.engine import EngineOptions, compute_drift
from writeback.kube.images import image_registry
from writeback.kube.paths import format_path
from writeback.kube.pathtypes import ABSENT
from writeback.model import Decision, Drift, ManagerOperation, Op, Rule
from writeback.settings import Policy

CONTAINER = "spec.template.spec.containers[name=web]"
EDIT_TIME = "2024-05-02T03:07:00Z"


def with_fields(live: dict[str, Any], *entries: dict[str, Any]) -> dict[str, Any]:
    live["metadata"]["managedFields"] = [
        entry("argocd-controller", applied_fields(), operation="Apply"),
        *entries,
    ]
    return live


def under_container(fields: dict[str, Any], name: str = "web") -> dict[str, Any]:
    return {"f:spec": {"f:template": {"f:spec": {"f:containers": {k(name=name): fields}}}}}


def run(live: dict[str, Any], git: dict[str, Any] | None = None, **options: Any) -> dict[str, Drift]:
    report = compute_drift(
        live=[live_obj(live)], desired=[desired_obj(git or deployment_git())], options=EngineOptions(**options)
    )
    return {format_path(d.path): d for d in report.drifts}


def test_hpa_scaling_through_the_scale_subresource_is_ignored_with_the_owner_named() -> None:
    live = defaulted_live(deployment_git())
    live["spec"]["replicas"] = 45
    scale = entry("kube-controller-manager", {"f:spec": {"f:replicas": {}}}, subresource="scale")
    drifts = run(with_fields(live, scale))
    assert list(drifts) == ["spec.replicas"]
    d = drifts["spec.replicas"]
    assert (d.op, d.live, d.git, d.decision) == (Op.CHANGE, 45, 3, Decision.IGNORE)
    assert (d.manager, d.rule) == ("kube-controller-manager", Rule.CONTROLLER_OWNED)
    assert d.reason == "owned by kube-controller-manager (scale subresource)"


def test_replicas_scaled_while_nobody_owned_them_are_no_default_and_no_webhook() -> None:
    """Git leaves replicas out (an HPA scales); the real API server records no manager for a scale of replicas
    nobody owned, so there is no evidence of a default nor of who changed it."""
    git = deployment_git()
    del git["spec"]["replicas"]
    live = defaulted_live(git)
    live["spec"]["replicas"] = 45
    fields = applied_fields()
    del fields["f:spec"]["f:replicas"]
    live["metadata"]["managedFields"] = [entry("kustomize-controller", fields, operation="Apply")]
    d = run(copy.deepcopy(live), git)["spec.replicas"]
    assert (d.op, d.live, d.decision, d.manager, d.rule) == (Op.ADD, 45, Decision.UNATTRIBUTED, None,
                                                             Rule.UNOWNED)  # fmt: skip
    written = run(copy.deepcopy(live), git, policy=Policy(write_unattributed=True))["spec.replicas"]
    assert (written.decision, written.rule) == (Decision.WRITEBACK, Rule.UNOWNED)
    live["spec"]["replicas"] = 1  # the server's default for a Deployment: still explained away
    assert "spec.replicas" not in run(live, git)


def not_synced_yet() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Issue 22 §3: a Deployment applied without replicas (live has the server's 1, owned by nobody), then Git
    changed to replicas: 2 and not synced yet. (live, Git as applied, Git now)."""
    applied = deployment_git()
    del applied["spec"]["replicas"]
    live = defaulted_live(applied)
    live["spec"]["replicas"] = 1
    fields = applied_fields()
    del fields["f:spec"]["f:replicas"]
    live["metadata"]["managedFields"] = [entry("kustomize-controller", fields, operation="Apply")]
    now = copy.deepcopy(applied)
    now["spec"] = {"replicas": 2, **now["spec"]}
    return live, applied, now


def test_a_field_git_declares_and_nobody_owns_is_unattributed_never_written_back() -> None:
    live, _, now = not_synced_yet()
    d = run(copy.deepcopy(live), now)["spec.replicas"]  # compared with Git that declares it (the head, say)
    assert (d.op, d.live, d.git, d.manager) == (Op.CHANGE, 1, 2, None)
    assert (d.decision, d.rule) == (Decision.UNATTRIBUTED, Rule.UNOWNED)
    assert "no manager owns it" in d.reason and "undo Git's value" in d.reason
    # a person's write would own it: not written back even when unattributed changes are
    by_policy = run(copy.deepcopy(live), now, policy=Policy(write_unattributed=True))["spec.replicas"]
    assert (by_policy.decision, by_policy.rule) == (Decision.UNATTRIBUTED, Rule.UNOWNED)
    # the same value owned by a person's write is a person's change
    live["metadata"]["managedFields"].append(entry("kubectl-edit", {"f:spec": {"f:replicas": {}}}, time=EDIT_TIME))
    d = run(live, now)["spec.replicas"]
    assert (d.decision, d.rule, d.manager) == (Decision.WRITEBACK, Rule.PERSON, "kubectl-edit")


def test_a_field_git_changed_after_the_applied_revision_is_pending_whoever_owns_it() -> None:
    live, applied, now = not_synced_yet()
    live["spec"]["replicas"] = 5  # not the default: compared with the applied revision it is a difference
    report = compute_drift(live=[live_obj(live)], desired=[desired_obj(applied)], head=[desired_obj(now)],
                           options=EngineOptions(), revision="4f3c0e1")  # fmt: skip
    (d,) = [d for d in report.drifts if format_path(d.path) == "spec.replicas"]
    assert (d.decision, d.rule) == (Decision.PENDING, Rule.PENDING_SYNC)
    assert d.reason == "pending sync: Git changed this field after the applied revision 4f3c0e1"
    live["spec"]["replicas"] = 1  # the server's default, compared with the applied revision: no drift at all
    report = compute_drift(live=[live_obj(live)], desired=[desired_obj(applied)], head=[desired_obj(now)],
                           options=EngineOptions(), revision="4f3c0e1")  # fmt: skip
    assert [format_path(d.path) for d in report.drifts] == []


def test_a_person_scaling_is_written_back() -> None:
    live = defaulted_live(deployment_git())
    live["spec"]["replicas"] = 5
    scale = entry("kubectl", {"f:spec": {"f:replicas": {}}}, subresource="scale", time=EDIT_TIME)
    d = run(with_fields(live, scale))["spec.replicas"]
    assert (d.decision, d.rule) == (Decision.WRITEBACK, Rule.PERSON)
    assert (d.manager, d.operation, d.time) == ("kubectl", ManagerOperation.UPDATE, EDIT_TIME)
    assert "kubectl (scale subresource)" in d.reason


def test_controller_patterns_are_globs_and_extendable() -> None:
    live = defaulted_live(deployment_git())
    live["spec"]["replicas"] = 7
    live = with_fields(live, entry("acme-scaler-7f9c", {"f:spec": {"f:replicas": {}}}))
    assert run(copy.deepcopy(live))["spec.replicas"].decision is Decision.WRITEBACK
    policy = Policy(extra_controller_managers=("acme-scaler-*",))
    d = run(live, policy=policy)["spec.replicas"]
    assert (d.decision, d.rule) == (Decision.IGNORE, Rule.CONTROLLER_OWNED)
    assert d.reason.startswith("owned by acme-scaler-7f9c")


def test_drift_on_a_field_the_gitops_controller_owns_is_a_pending_or_failed_sync() -> None:
    live = defaulted_live(deployment_git())
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/shop/web:1.4.1"
    d = run(with_fields(live))[f"{CONTAINER}.image"]
    assert (d.decision, d.rule, d.manager) == (Decision.IGNORE, Rule.GITOPS_OWNED, "argocd-controller")
    assert d.reason.startswith("pending or failed sync: field managed by the GitOps controller")


def test_a_person_changes_an_image_tag_and_adds_an_env_var() -> None:
    live = defaulted_live(deployment_git())
    c = live["spec"]["template"]["spec"]["containers"][0]
    c["image"] = "registry.example.com/shop/web:1.4.3-hotfix"
    c["env"].append({"name": "FEATURE_X", "value": "off"})
    edit = entry(
        "kubectl-edit",
        under_container({"f:image": {}, "f:env": {k(name="FEATURE_X"): {".": {}, "f:name": {}, "f:value": {}}}}),
        time=EDIT_TIME,
    )
    drifts = run(with_fields(live, edit))
    assert set(drifts) == {f"{CONTAINER}.image", f"{CONTAINER}.env[name=FEATURE_X]"}
    image, env = drifts[f"{CONTAINER}.image"], drifts[f"{CONTAINER}.env[name=FEATURE_X]"]
    assert (image.op, image.decision, image.manager, image.time) == (
        Op.CHANGE,
        Decision.WRITEBACK,
        "kubectl-edit",
        EDIT_TIME,
    )
    assert image.rule is env.rule is Rule.PERSON
    assert image.reason == f"kubectl-edit (Update) changed a field Git declares at {EDIT_TIME}"
    assert (env.op, env.live, env.git, env.decision) == (
        Op.ADD,
        {"name": "FEATURE_X", "value": "off"},
        ABSENT,
        Decision.WRITEBACK,
    )


def test_a_removal_has_no_recorded_remover() -> None:
    live = defaulted_live(deployment_git())
    live["spec"]["template"]["spec"]["containers"][0]["env"].pop(0)
    d = run(with_fields(live))[f"{CONTAINER}.env[name=LOG_LEVEL]"]
    assert (d.op, d.decision, d.rule, d.manager, d.live) == (Op.REMOVE, Decision.WRITEBACK, Rule.PERSON, None, ABSENT)
    assert d.git == {"name": "LOG_LEVEL", "value": "info"}
    assert "nobody is recorded as the remover" in d.reason


@pytest.mark.parametrize(
    ("mutate", "fields", "path", "rule", "why"),
    [
        (
            lambda c, pod: c.setdefault("securityContext", {}).update(privileged=True),
            under_container({"f:securityContext": {".": {}, "f:privileged": {}}}),
            f"{CONTAINER}.securityContext.privileged",
            Rule.SECURITY_FIELD,
            "security-sensitive field (securityContext)",
        ),
        (
            lambda c, pod: pod.update(hostNetwork=True),
            {"f:spec": {"f:template": {"f:spec": {"f:hostNetwork": {}}}}},
            "spec.template.spec.hostNetwork",
            Rule.SECURITY_FIELD,
            "security-sensitive field (hostNetwork)",
        ),
        (
            lambda c, pod: pod.update(serviceAccountName="admin"),
            {"f:spec": {"f:template": {"f:spec": {"f:serviceAccountName": {}}}}},
            "spec.template.spec.serviceAccountName",
            Rule.SECURITY_FIELD,
            "security-sensitive field (serviceAccountName)",
        ),
        (
            lambda c, pod: c.update(image="docker.io/evil/web:1.4.2"),
            under_container({"f:image": {}}),
            f"{CONTAINER}.image",
            Rule.IMAGE_REGISTRY,
            "image moved to another registry (registry.example.com -> docker.io)",
        ),
    ],
)
def test_security_sensitive_changes_are_flagged(
    mutate: Any, fields: dict[str, Any], path: str, rule: Rule, why: str
) -> None:
    live = defaulted_live(deployment_git())
    pod = live["spec"]["template"]["spec"]
    mutate(pod["containers"][0], pod)
    d = run(with_fields(live, entry("kubectl-edit", fields, time=EDIT_TIME)))[path]
    assert (d.decision, d.rule, d.manager) == (Decision.FLAG, rule, "kubectl-edit")
    assert why in d.reason


def test_rbac_rules_and_subjects_are_flagged() -> None:
    role_git: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": "shop"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    role_live = copy.deepcopy(role_git)
    role_live["rules"][0]["verbs"] = ["get", "delete"]
    role_live["metadata"]["managedFields"] = [
        entry("kubectl-edit", {"f:rules": {}}, api_version="rbac.authorization.k8s.io/v1")
    ]
    d = run(role_live, role_git)["rules[0].verbs[1]"]
    assert (d.decision, d.rule) == (Decision.FLAG, Rule.RBAC) and "RBAC rules of a Role" in d.reason
    binding_git: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "ops"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "Group", "name": "ops"}],
    }
    binding_live = copy.deepcopy(binding_git)
    binding_live["subjects"].append({"kind": "User", "name": "mallory"})
    binding_live["metadata"]["managedFields"] = [entry("kubectl-patch", {"f:subjects": {}})]
    d = run(binding_live, binding_git)["subjects[1]"]
    assert (d.decision, d.rule) == (Decision.FLAG, Rule.RBAC) and "RBAC subjects" in d.reason


def test_configured_flag_paths_and_allowed_registries() -> None:
    live = defaulted_live(deployment_git())
    live["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "debug"
    live["spec"]["template"]["spec"]["containers"][1]["image"] = "registry.example.com/shop/exporter:1.0"
    edit = entry(
        "kubectl-edit",
        {
            "f:spec": {
                "f:template": {
                    "f:spec": {
                        "f:containers": {
                            k(name="web"): {"f:env": {k(name="LOG_LEVEL"): {"f:value": {}}}},
                            k(name="metrics"): {"f:image": {}},
                        }
                    }
                }
            }
        },
    )
    live = with_fields(live, edit)
    plain = run(copy.deepcopy(live))
    assert {d.decision for d in plain.values()} == {Decision.WRITEBACK}
    policy = Policy(flag_paths=("**.env[name=LOG_LEVEL]",), allowed_registries=("ghcr.io",))
    flagged = run(live, policy=policy)
    env = flagged[f"{CONTAINER}.env[name=LOG_LEVEL].value"]
    image = flagged["spec.template.spec.containers[name=metrics].image"]
    assert (env.decision, env.rule) == (Decision.FLAG, Rule.FLAG_PATH)
    assert (image.decision, image.rule) == (Decision.FLAG, Rule.IMAGE_REGISTRY)
    assert "not allowed (registry.example.com)" in image.reason


@pytest.mark.parametrize(
    ("manager", "role"),
    [
        ("kube-controller-manager", Role.CONTROLLER),
        ("horizontal-pod-autoscaler", Role.CONTROLLER),
        ("keda-operator", Role.CONTROLLER),
        ("argocd-controller", Role.GITOPS),
        ("argocd-application-controller", Role.GITOPS),
        ("kustomize-controller", Role.GITOPS),
        ("gotk-kustomize-controller", Role.CONTROLLER),
        ("gotk-helm-controller", Role.CONTROLLER),
        ("source-controller", Role.CONTROLLER),
        ("helm-controller", Role.GITOPS),
        ("kubectl-edit", Role.PERSON),
        ("kubectl-client-side-apply", Role.PERSON),
        ("Mozilla", Role.PERSON),
    ],
)
def test_default_manager_roles(manager: str, role: Role) -> None:
    assert manager_role(Policy(), manager) is role


@pytest.mark.parametrize(
    ("image", "registry"),
    [
        ("nginx:1.25", "docker.io"),
        ("library/nginx", "docker.io"),
        ("ghcr.io/acme/web:1", "ghcr.io"),
        ("localhost/web", "localhost"),
        ("registry:5000/web", "registry:5000"),
        ("registry.example.com/shop/web@sha256:abc", "registry.example.com"),
    ],
)
def test_image_registry(image: str, registry: str) -> None:
    assert image_registry(image) == registry


def test_the_rules_are_tried_in_order_and_the_first_that_decides_wins() -> None:
    """A field a configured rule ignores and a controller owns is ignored by the configured rule (it comes first);
    without the rule, by the controller's ownership; a pending change comes before both."""
    from writeback.drift.deciding import RULES
    from writeback.settings import IgnoreRule

    names = [r.__name__ for r in RULES]
    assert names.index("_pending_sync") < names.index("_ignore_rule") < names.index("_other_manager")
    assert names[-1] == "_persons_change"  # the last rule always decides
    live = defaulted_live(deployment_git())
    live["spec"]["replicas"] = 45
    live = with_fields(live, entry("kube-controller-manager", {"f:spec": {"f:replicas": {}}}, subresource="scale"))
    ignore = IgnoreRule(paths=("spec.replicas",), reason="the HPA's")
    assert run(copy.deepcopy(live))["spec.replicas"].rule is Rule.CONTROLLER_OWNED
    assert run(copy.deepcopy(live), ignore=(ignore,))["spec.replicas"].rule is Rule.IGNORE_RULE
    head = deployment_git()
    head["spec"]["replicas"] = 4
    report = compute_drift(live=[live_obj(live)], desired=[desired_obj(deployment_git())],
                           head=[desired_obj(head)], options=EngineOptions(ignore=(ignore,)))  # fmt: skip
    (d,) = report.drifts
    assert (d.decision, d.rule) == (Decision.PENDING, Rule.PENDING_SYNC)
