"""Scenarios a and c against the real Argo CD (opt-in: `pytest -m argocd`).

a, selfHeal against the 3 AM hotfix: an Application with `automated: {selfHeal: true, prune: true}` syncs the
demo's Deployment and ConfigMap; a `kubectl set env` and a `kubectl edit` of the PEM bundle are both reverted by the
application-controller within seconds; the writeback service captured both from its watch first and opens ONE PR
holding both changes; the reviewer merges, Argo CD syncs the merge commit, and no drift is left.
c, client-side and server-side sync: the same person's change under the default sync (manager argocd-controller,
operation Update) and under `syncOptions: [ServerSideApply=true]` (operation Apply) gets the same decisions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.argocd.conftest import ArgoShopMaker
from tests.argocd.scenarios import ArgoShop
from tests.e2e.support import (
    APP_PATH,
    HOTFIX_CA,
    TARGET,
    container,
    has_hotfix,
    kubectl_edit_appending_the_ca,
    managers,
)
from tests.support.polling import wait_until

pytestmark = [pytest.mark.argocd, pytest.mark.controlplane]
ENV = "LOG_LEVEL"  # "info" in Git: a person's change of a value Argo CD applied is reverted by selfHeal (an
# item Git does not declare at all would stay: client-side apply merges with the last-applied configuration)


def has_env(obj: dict[str, Any]) -> bool:
    return {"name": ENV, "value": "debug"} in (container(obj).get("env") or [])


def changed_lines(shop: ArgoShop, pr: dict[str, Any], file: str) -> tuple[list[str], list[str]]:
    """The lines the PR adds to and removes from ``apps/checkout/FILE`` (the reviewer's "Files changed")."""
    shop.fetch()
    diff = shop.remote.git("diff", f"origin/{pr['base']}...origin/{pr['head']}", "--", f"{APP_PATH}/{file}")
    lines = diff.splitlines()
    return ([x[1:] for x in lines if x.startswith("+") and not x.startswith("+++")],
            [x[1:] for x in lines if x.startswith("-") and not x.startswith("---")])  # fmt: skip


def test_self_heal_reverts_two_hotfixes_and_writeback_backports_both_in_one_pr(
    make_argo_shop: ArgoShopMaker, tmp_path: Path
) -> None:
    shop = make_argo_shop()
    service = shop.serve()
    cm, dep = shop.record("ConfigMap", "checkout-ca"), shop.record("Deployment", "checkout")
    try:
        shop.controlplane.kubectl("set", "env", "deployment/checkout", "-n", shop.namespace, "-c", "app",
                                  f"{ENV}=debug")  # fmt: skip
        kubectl_edit_appending_the_ca(shop, tmp_path)
        wait_until(
            "our watches seeing both edits",
            lambda: dep.first_since(0, has_env) and cm.first_since(0, has_hotfix),
            timeout=10,
        )
        set_env, edited = dep.first_since(0, has_env), cm.first_since(0, has_hotfix)
        assert set_env is not None and edited is not None
        wait_until(
            "Argo CD's selfHeal reverting both edits",
            lambda: (
                dep.first_since(set_env, lambda o: not has_env(o))
                and cm.first_since(edited, lambda o: not has_hotfix(o))
            ),
            timeout=60,
        )
        env_reverted = dep.first_since(set_env, lambda o: not has_env(o))
        ca_reverted = cm.first_since(edited, lambda o: not has_hotfix(o))
        assert env_reverted is not None and ca_reverted is not None
        wait_until("both captures in the state dir", lambda: len(service.captures()) == 2, timeout=10)
        captured = {json.loads(f.read_text())["manager"]: f.stat().st_mtime for f in service.captures()}
        print(
            f"argocd: set env -> revert {env_reverted - set_env:.2f}s, -> capture "
            f"{captured['kubectl-set'] - set_env:.3f}s; edit -> revert {ca_reverted - edited:.2f}s, -> capture "
            f"{captured['kubectl-edit'] - edited:.3f}s"
        )
        assert captured["kubectl-set"] < env_reverted and captured["kubectl-edit"] < ca_reverted

        # ONE PR with both changes, each named with its manager, both already reverted by argocd-controller
        service.wait(
            "one PR with both reverted changes",
            lambda: any(
                "<code>kubectl-set</code>" in (p["body"] or "")
                and "<code>kubectl-edit</code>" in (p["body"] or "")
                and "Already reverted in the cluster" in (p["body"] or "")
                for p in shop.forge.prs.values()
            ),
            timeout=90,
        )
        pr = shop.only_pr()
        ca_lines = [f"    {line}" for line in HOTFIX_CA.strip().splitlines()]
        assert changed_lines(shop, pr, "configmap.yaml") == (ca_lines, [])
        added, removed = changed_lines(shop, pr, "deployment.yaml")
        assert ([a.strip() for a in added], [r.strip() for r in removed]) == (['value: "debug"'], ['value: "info"'])
        body = pr["body"]
        assert "<code>kubectl-set</code>" in body and "<code>kubectl-edit</code>" in body
        assert "reverted by <code>argocd-controller</code>" in body

        # the reviewer merges; Argo CD syncs the merge commit: both changes are live again, from Git
        merged = shop.merge(pr)
        shop.sync.wait_applied(merged)
        wait_until(
            "Argo CD applying the merge commit", lambda: has_env(dep.latest()) and has_hotfix(cm.latest()), timeout=30
        )
        service.wait_cycles(2)
        assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
        assert service.captures() == []
        assert len(shop.forge.prs) == 1 and shop.forge.prs[pr["number"]]["merged_at"] is not None
    finally:
        cm.stop()
        dep.stop()
    assert "persistent drift" not in service.stop()


def _decisions_after_set_env(shop: ArgoShop) -> dict[str, tuple[str, str]]:
    shop.controlplane.kubectl("set", "env", "deployment/checkout", "-n", shop.namespace, "-c", "app", f"{ENV}=debug")
    return shop.decisions(shop.config(), "Deployment", "checkout")


@pytest.mark.parametrize("server_side", [False, True], ids=["client-side-sync", "server-side-sync"])
def test_client_and_server_side_sync_give_the_same_decisions(make_argo_shop: ArgoShopMaker, server_side: bool) -> None:
    options = ("ServerSideApply=true",) if server_side else ()
    shop = make_argo_shop(automated=None, sync_options=options)  # synced once, then manual: nothing reverts
    live = shop.get("deployment", "checkout")
    applier = [m for m in managers(live) if m[0] == "argocd-controller"]
    assert applier == [("argocd-controller", "Apply" if server_side else "Update", "")]
    decisions = _decisions_after_set_env(shop)
    path = f"spec.template.spec.containers[name=app].env[name={ENV}].value"
    assert {p: d for p, (d, _) in decisions.items()} == {path: "writeback"}
    assert decisions[path][1].startswith("kubectl-set (Update)"), decisions[path][1]
