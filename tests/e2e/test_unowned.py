"""Issue 22 §3 end to end, against the real Flux controllers and a real `writeback run` process: the shop's
Deployment applied without ``replicas`` (the real server's default, 1, owned by nobody), then Git changed to
``replicas: 2`` while Flux's Kustomization is suspended. A service that compares with Git's head (no controller
object) finds a field Git declares that no manager owns: ``unattributed``, never a PR that would undo Git's 2; one
that follows the Kustomization finds nothing to write back. Flux then applies the 2, and nothing is left."""

from __future__ import annotations

import json

import pytest

from tests.e2e.support import FILES, TARGET, ShopMaker, example_manifest

pytestmark = [pytest.mark.controlplane, pytest.mark.flux]

REPLICAS = "  replicas: 3 # baseline; hpa.yaml scales between 3 and 50\n"


def test_replicas_git_declares_and_nobody_owns_give_no_pr(make_shop: ShopMaker, namespace: str) -> None:
    files = {name: example_manifest(name, namespace) for name in FILES}
    with_three = files["deployment.yaml"]
    files["deployment.yaml"] = with_three.replace(REPLICAS, "")
    shop = make_shop(files=files)
    live = shop.get("deployment", "checkout")
    owners = [e["manager"] for e in live["metadata"]["managedFields"] if '"f:replicas"' in json.dumps(e["fieldsV1"])]
    assert live["spec"]["replicas"] == 1 and owners == []

    shop.sync.suspend()
    ahead = shop.push({"deployment.yaml": with_three.replace(REPLICAS, "  replicas: 2\n")}, "checkout: 2 replicas")
    at_head = shop.config()
    del at_head["targets"][0]["flux_kustomization"]  # compared with the head, which declares replicas: 2
    service = shop.serve(at_head)
    service.wait(
        "the replicas nobody owns decided unattributed",
        lambda: service.metric("writeback_drift_fields", target=TARGET, decision="unattributed") >= 1,
    )
    service.wait_cycles(2)
    assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
    assert shop.forge.prs == {} and service.captures() == []
    decision, reason = shop.decisions(at_head, "Deployment", "checkout")["spec.replicas"]
    assert decision == "unattributed" and "no manager owns it" in reason, reason
    # following the Kustomization (the applied commit has no replicas): nothing to write back either
    assert shop.decisions(shop.config(), "Deployment", "checkout").get("spec.replicas", ("none",))[0] != "writeback"

    shop.sync.resume()  # Flux applies Git's 2: the field is Flux's now, and nothing is left
    shop.sync.wait_applied(ahead)
    assert shop.get("deployment", "checkout")["spec"]["replicas"] == 2
    service.wait_cycles(2)
    assert service.metric("writeback_drift_fields", target=TARGET, decision="unattributed") == 0
    assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
    assert shop.forge.prs == {}
    service.stop()
