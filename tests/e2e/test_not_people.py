"""Scenarios b, c and f, end to end against the real Flux controllers: changes that are not a person's, and Git that
is ahead of live, never give a PR.

b. The HPA scales a Flux-managed Deployment through the scale subresource, as kube-controller-manager (the test
   control plane runs no controller manager, so the test writes what it writes), with and without `replicas` in Git.
c. The control plane's sidecar webhook injects into a Flux-managed Deployment.
f. A commit Flux has not applied yet (its Kustomization suspended) is `pending`: no PR reverts it, also when a
   person makes the same change by hand meanwhile.

Each waits for cycles that saw the state (the service's own metrics say what it decided), never a blind sleep,
except where the point is that something stays as it is for two reconcile intervals.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.support import FILES, INTERVAL, TARGET, Shop, ShopMaker, container, example_manifest, managers
from tests.support.polling import stays, wait_until

pytestmark = [pytest.mark.controlplane, pytest.mark.flux]


def scale_as_the_hpa(shop: Shop, replicas: int) -> None:
    """What the HPA controller in kube-controller-manager writes: the scale subresource, as that manager."""
    shop.controlplane.kubectl(
        "patch", "deployment/checkout", "-n", shop.namespace, "--subresource=scale", "--type=merge",
        "-p", json.dumps({"spec": {"replicas": replicas}}), "--field-manager=kube-controller-manager",
    )  # fmt: skip


def replicas(shop: Shop) -> int:
    return int(shop.get("deployment", "checkout")["spec"]["replicas"])


def log_level(shop: Shop) -> str:
    env = {e["name"]: e.get("value") for e in container(shop.get("deployment", "checkout"))["env"]}
    return str(env["LOG_LEVEL"])


def shop_files(namespace: str, *, replicas_in_git: bool) -> dict[str, str]:
    files = {name: example_manifest(name, namespace) for name in (*FILES, "hpa.yaml")}
    if not replicas_in_git:
        files["deployment.yaml"] = files["deployment.yaml"].replace(
            "  replicas: 3 # baseline; hpa.yaml scales between 3 and 50\n", ""
        )
        assert "replicas:" not in files["deployment.yaml"]
    return files


@pytest.mark.parametrize("replicas_in_git", [True, False], ids=["replicas-in-git", "no-replicas-in-git"])
def test_hpa_scaling_through_the_scale_subresource_gives_no_pr(
    make_shop: ShopMaker, namespace: str, replicas_in_git: bool
) -> None:
    shop = make_shop(files=shop_files(namespace, replicas_in_git=replicas_in_git))
    # what Flux applied: with replicas in Git it owns them; without, the server's default (1) is nobody's value
    assert replicas(shop) == (3 if replicas_in_git else 1)
    config = shop.config(kinds=("ConfigMap", "Deployment", "HorizontalPodAutoscaler"))
    service = shop.serve(config)
    recorder = shop.record("Deployment", "checkout")
    try:
        scale_as_the_hpa(shop, 45)
        wait_until("the scaling", lambda: recorder.first_since(0, lambda o: o["spec"]["replicas"] == 45), timeout=10)
    finally:
        recorder.stop()
    [scaled] = [o for _, o in recorder.versions() if o["spec"]["replicas"] == 45][:1]
    owners = [e["manager"] for e in scaled["metadata"]["managedFields"] if "f:replicas" in json.dumps(e["fieldsV1"])]
    # what the real kube-apiserver records: the scale takes the field over from its owner (Flux) ...
    # ... but a scale of replicas that nobody owned (the server's default) is recorded for no manager at all
    assert owners == (["kube-controller-manager"] if replicas_in_git else [])
    if replicas_in_git:
        assert ("kube-controller-manager", "Update", "scale") in managers(scaled)
    if replicas_in_git:
        # real Flux takes replicas back to Git's value on its next reconcile (its apply is forced), and the HPA
        # would scale again: Flux's documented advice is to leave replicas out of Git when an HPA scales
        wait_until("Flux resetting replicas to Git's 3", lambda: replicas(shop) == 3, timeout=3 * INTERVAL + 5)
        owners = managers(shop.get("deployment", "checkout"))
        assert ("kube-controller-manager", "Update", "scale") not in owners
    else:
        # Flux does not declare replicas, so the HPA's value stays: two reconcile intervals and more
        stays("Flux left the HPA's replicas alone", lambda: replicas(shop) == 45, seconds=2 * INTERVAL + 1)
        assert shop.sync.kustomization()["status"]["lastAppliedRevision"] == shop.sync.revision(
            shop.remote.git("rev-parse", "HEAD").strip()
        )
        service.wait_cycles(2)
        # writeback saw the 45 replicas and decided: the HPA's, not a person's (and not "a default")
        assert service.metric("writeback_drift_fields", target=TARGET, decision="ignore") >= 1
        decision, reason = shop.decisions(config, "Deployment", "checkout")["spec.replicas"]
        assert decision == "ignore" and reason.startswith("scaled by the HorizontalPodAutoscaler"), reason
        # not knowing of the HPA, writeback cannot tell who scaled: no manager is recorded (above), so unattributed
        decision, reason = shop.decisions(shop.config(), "Deployment", "checkout")["spec.replicas"]
        assert decision == "unattributed" and "scale subresource" in reason, reason
    service.wait_cycles(2)
    assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
    assert shop.forge.prs == {} and service.captures() == []
    service.stop()


def test_sidecar_webhook_injection_into_a_flux_managed_deployment_gives_no_pr(
    make_shop: ShopMaker, sidecar_webhook: Any
) -> None:
    shop = make_shop(before_apply=sidecar_webhook.enable)  # injected when Flux creates it
    live = shop.get("deployment", "checkout")
    names = [c["name"] for c in live["spec"]["template"]["spec"]["containers"]]
    assert names == ["app", sidecar_webhook.container]
    assert managers(live) == [("kustomize-controller", "Apply", "")]  # the injection is the applier's
    generation = live["metadata"]["generation"]
    service = shop.serve()
    # real Flux does not fight the injection: its dry-run goes through the webhook too, so it sees no drift
    stays(
        "Flux re-applying over the injected sidecar",
        lambda: shop.get("deployment", "checkout")["metadata"]["generation"] == generation,
        seconds=2 * INTERVAL + 1,
    )
    service.wait_cycles(2)
    assert service.metric("writeback_drift_fields", target=TARGET, decision="ignore") >= 1  # seen and explained
    decided = shop.decisions(shop.config(), "Deployment", "checkout")
    injected = [p for p in decided if p.startswith("spec.template.spec.containers")]
    assert injected and all(decided[p][0] == "ignore" for p in injected), decided
    print("webhook injection decided:", {p: decided[p] for p in injected})
    assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
    assert shop.forge.prs == {} and service.captures() == []
    assert container(shop.get("deployment", "checkout"), sidecar_webhook.container)
    service.stop()


def test_a_commit_flux_has_not_applied_is_pending_and_no_pr_reverts_it(shop: Shop, namespace: str) -> None:
    service = shop.serve()
    applied = shop.sync.kustomization()["status"]["lastAppliedRevision"]
    shop.sync.suspend()
    deployment = example_manifest("deployment.yaml", namespace)
    ahead = shop.push({"deployment.yaml": deployment.replace('value: "info"', 'value: "debug"')}, "debug logs")
    # Flux fetches the commit (its source has it) but the suspended Kustomization does not apply it
    wait_until(
        "source-controller fetching the new commit",
        lambda: shop.sync.git_repository()["status"]["artifact"]["revision"] == shop.sync.revision(ahead),
        timeout=3 * INTERVAL + 5,
    )
    service.wait_cycles(2)
    assert shop.sync.kustomization()["status"]["lastAppliedRevision"] == applied
    assert log_level(shop) == "info"  # live is behind Git: nothing to write back, nothing reverted
    assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
    assert shop.forge.prs == {}

    # on call makes the same change by hand while the sync waits: Git already has it, so it is pending, no PR
    shop.controlplane.kubectl("set", "env", "deployment/checkout", "-n", namespace, "-c", "app", "LOG_LEVEL=debug")
    service.wait(
        "the person's change decided pending",
        lambda: service.metric("writeback_drift_fields", target=TARGET, decision="pending") >= 1,
    )
    service.wait_cycles(1)
    assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
    assert shop.forge.prs == {}

    shop.sync.resume()  # Flux applies it; nothing is pending any more, and still no PR
    shop.sync.wait_applied(ahead)
    assert log_level(shop) == "debug"
    service.wait_cycles(2)
    assert service.metric("writeback_drift_fields", target=TARGET, decision="pending") == 0
    assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
    assert shop.forge.prs == {} and service.captures() == []
    service.stop()
