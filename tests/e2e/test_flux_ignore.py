"""Issue 22 §2 end to end, against the real Flux kustomize-controller and a real `writeback run` process: the team
told Flux to ignore the shop's replicas (the Kustomization's ``spec.ignore``, selected by kind and a label
selector). On call scales the Deployment and sets an env var; Flux reverts the env var and leaves the replicas alone,
and the one PR carries the env var only, never the replicas. After the merge, nothing is left to write back."""

from __future__ import annotations

import pytest

from tests.e2e.support import INTERVAL, TARGET, Shop, container
from tests.support.polling import stays, wait_until

pytestmark = [pytest.mark.controlplane, pytest.mark.flux]

RULE = {
    "paths": ["/spec/replicas"],
    "target": {"kind": "Deployment", "labelSelector": "app.kubernetes.io/part-of=shop"},
}


def _replicas(shop: Shop) -> int:
    return int(shop.get("deployment", "checkout")["spec"]["replicas"])


def _env(shop: Shop) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container(shop.get("deployment", "checkout"))["env"]}


def test_a_field_flux_is_told_to_ignore_gives_no_pr_while_a_change_elsewhere_does(shop: Shop) -> None:
    shop.sync.set_ignore([RULE])
    shop.sync.wait_applied(shop.remote.git("rev-parse", "HEAD").strip())  # Ready at the generation with the rule
    assert _replicas(shop) == 3
    service = shop.serve()
    k = shop.controlplane.kubectl
    k("scale", "deployment/checkout", "-n", shop.namespace, "--replicas=5")
    k("set", "env", "deployment/checkout", "-n", shop.namespace, "-c", "app", "PAYMENT_TIMEOUT_MS=5000")

    wait_until(
        "kustomize-controller reverting the kubectl set env",
        lambda: "PAYMENT_TIMEOUT_MS" not in _env(shop),
        timeout=3 * INTERVAL + 5,
    )
    stays("Flux left the ignored replicas alone", lambda: _replicas(shop) == 5, seconds=2 * INTERVAL + 1)

    service.wait(
        "the PR of the reverted env var",
        lambda: any("Already reverted in the cluster" in (p["body"] or "") for p in shop.forge.prs.values()),
    )
    pr = shop.only_pr()
    diff = shop.pr_diff(pr)
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert added == ["- name: PAYMENT_TIMEOUT_MS", 'value: "5000"'] and removed == [], diff
    decision, reason = shop.decisions(shop.config(), "Deployment", "checkout")["spec.replicas"]
    assert decision == "ignore", reason
    assert reason == f"Flux Kustomization {shop.namespace}/{shop.sync.name} spec.ignore[0] ignores /spec/replicas"

    merged = shop.merge(pr)  # the reviewer merges; Flux applies it and still leaves the replicas alone
    shop.sync.wait_applied(merged)
    assert _env(shop)["PAYMENT_TIMEOUT_MS"] == "5000" and _replicas(shop) == 5
    service.wait_cycles(2)
    assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
    assert service.metric("writeback_drift_fields", target=TARGET, decision="ignore") >= 1
    assert len(shop.forge.prs) == 1 and service.captures() == []
    assert "persistent drift" not in service.stop()
