"""Scenarios a and d, end to end, against the real Flux kustomize-controller.

a, the 3 AM hotfix: a `kubectl edit` appends a CA to the PEM bundle of a Flux-managed ConfigMap; Flux reverts it
on its next reconcile; the writeback service captured it from its watch first and opens ONE PR with exactly that
change, saying it was already reverted, by whom and when; the reviewer merges, Flux applies the merge commit, and
the next cycles find no drift and no persistent drift.
d: `kubectl set env` on a Flux-managed Deployment gives one PR; after the merge and Flux's apply, no drift.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.support import (
    HOTFIX_CA,
    INTERVAL,
    TARGET,
    Service,
    Shop,
    container,
    has_hotfix,
    kubectl_edit_appending_the_ca,
    managers,
)
from tests.support.polling import wait_until

pytestmark = [pytest.mark.controlplane, pytest.mark.flux]


def merge_and_settle(shop: Shop, service: Service, pr: dict[str, Any], *, regenerated: bool = False) -> None:
    """The reviewer merges ``pr``; Flux applies the merge commit; the next cycles find no drift, recognise the PR as
    merged (no "persistent drift" comment, no close, no new PR), raise no persistent-drift signal, and the capture
    is done with. ``regenerated``: the PR's branch was regenerated for a later change (its comment says so)."""
    merged = shop.merge(pr)
    shop.sync.wait_applied(merged)
    service.wait_cycles(2)
    assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
    assert service.metric("writeback_persistent_drift_fields", target=TARGET) == 0
    assert service.captures() == []
    assert len(shop.forge.prs) == 1 and shop.forge.prs[pr["number"]]["merged_at"] is not None
    comments = [c["body"] for c in shop.forge.comments.get(pr["number"], [])]
    allowed = ["<!-- writeback:reverted="]
    if regenerated:
        allowed.append("The live drift changed, so writeback regenerated")
    assert all(any(a in c for a in allowed) for c in comments), comments  # at most "it was reverted"
    assert service.metric("writeback_pull_requests_total", target=TARGET, outcome="created") == 1
    assert service.metric("writeback_pull_requests_total", target=TARGET, outcome="closed") == 0


def test_the_3am_hotfix_is_captured_before_flux_reverts_it_and_backported_by_one_pr(shop: Shop, tmp_path: Path) -> None:
    service = shop.serve()
    recorder = shop.record("ConfigMap", "checkout-ca")
    try:
        kubectl_edit_appending_the_ca(shop, tmp_path)
        wait_until("our watch seeing the edit", lambda: recorder.first_since(0, has_hotfix), timeout=10)
        edited = recorder.first_since(0, has_hotfix)
        assert edited is not None
        # Flux reverts it on its next reconcile; writeback has captured it from its watch before that
        wait_until(
            "kustomize-controller reverting the edit",
            lambda: recorder.first_since(edited, lambda o: not has_hotfix(o)),
            timeout=3 * INTERVAL + 5,
        )
        reverted = recorder.first_since(edited, lambda o: not has_hotfix(o))
        assert reverted is not None
        wait_until("the capture in the state dir", lambda: service.captures(), timeout=10)
        [capture_file] = service.captures()
        captured = capture_file.stat().st_mtime
        print(f"edit -> capture {captured - edited:.3f}s, edit -> revert {reverted - edited:.3f}s")
        assert captured < reverted, "the capture must be durable before Flux wipes the edit"
        capture = json.loads(capture_file.read_text())
        assert capture["manager"] == "kubectl-edit" and has_hotfix(capture["object"])
        live = shop.get("configmap", "checkout-ca")
        assert not has_hotfix(live) and managers(live) == [("kustomize-controller", "Apply", "")]

        # ONE PR with exactly the appended CA, saying it was reverted, by whom and when
        service.wait(
            "the PR saying the change was already reverted",
            lambda: any("Already reverted in the cluster" in (p["body"] or "") for p in shop.forge.prs.values()),
        )
        pr = shop.only_pr()
        diff = shop.pr_diff(pr)
        added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
        removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
        assert added == ["    " + line for line in HOTFIX_CA.strip().splitlines()] and removed == [], diff
        body = pr["body"]
        assert "<code>kubectl-edit</code>" in body and "reverted by <code>kustomize-controller</code>" in body
        assert f"ConfigMap {shop.namespace}/checkout-ca" in body.replace("\\", "")
        assert f"at {capture['time']}" in body  # when the person changed it ...
        # ... and when Flux reverted it (the time of its managedFields entry after the revert)
        [entry] = [e for e in live["metadata"]["managedFields"] if e["manager"] == "kustomize-controller"]
        assert f"at {entry['time']}" in body.split("reverted by", 1)[1]

        # the reviewer merges; Flux applies the merge commit: the hotfix is live again, from Git
        merge_and_settle(shop, service, pr)
        assert has_hotfix(recorder.latest())
        assert managers(shop.get("configmap", "checkout-ca")) == [("kustomize-controller", "Apply", "")]
    finally:
        recorder.stop()
    assert "persistent drift" not in service.stop()


def test_kubectl_set_env_on_a_flux_managed_deployment_gives_one_pr_and_no_drift_after_the_merge(shop: Shop) -> None:
    service = shop.serve()
    shop.controlplane.kubectl("set", "env", "deployment/checkout", "-n", shop.namespace, "-c", "app",
                              "PAYMENT_TIMEOUT_MS=5000")  # fmt: skip
    wait_until(
        "kustomize-controller reverting the kubectl set env",
        lambda: "PAYMENT_TIMEOUT_MS" not in str(container(shop.get("deployment", "checkout")).get("env")),
        timeout=3 * INTERVAL + 5,
    )
    # the PR, opened before or after the revert, says it was reverted (kubectl-set's entry is gone from live)
    service.wait(
        "the PR saying the change was already reverted",
        lambda: any("Already reverted in the cluster" in (p["body"] or "") for p in shop.forge.prs.values()),
    )
    pr = shop.only_pr()
    diff = shop.pr_diff(pr)
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert added == ["- name: PAYMENT_TIMEOUT_MS", 'value: "5000"'] and removed == [], diff
    assert "<code>kubectl-set</code>" in pr["body"]

    merge_and_settle(shop, service, pr)
    env = {e["name"]: e["value"] for e in container(shop.get("deployment", "checkout"))["env"]}
    assert env["PAYMENT_TIMEOUT_MS"] == "5000"
    assert "persistent drift" not in service.stop()
