"""Scenario b against the real Argo CD (opt-in): break-glass on a real Application.

`break-glass start` removes `spec.syncPolicy.automated` with the reason and the TTL in its record, so the person's
hotfix survives selfHeal; `end` opens the backport PR and keeps auto-sync off until the PR is merged AND Argo CD's
`status.sync.revision` has the merge commit; only then is `automated` restored, exactly as it was, and the hotfix is
still live, now from Git. `--force` resumes at once (Argo CD then reverts what Git lacks); a record past its TTL is
ended by the service's sweep, merged first as well.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.argocd.apps import SELF_HEAL
from tests.argocd.conftest import ArgoShopMaker
from tests.argocd.scenarios import ARGOCD_NAMESPACE, ArgoShop
from tests.e2e.support import HOTFIX_CA, TARGET, TOKEN_ENV, has_hotfix, kubectl_edit_appending_the_ca
from tests.fakes.github_fake import TOKEN
from tests.support.polling import stays, wait_until

pytestmark = [pytest.mark.argocd, pytest.mark.controlplane]
RECORD = "writeback.io/break-glass"


def break_glass(shop: ArgoShop, *args: str, code: int = 0) -> str:
    """``writeback break-glass ARGS`` as a process, as the person on call runs it; its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "writeback.cli", "break-glass", *args, "--kubeconfig", shop.kubeconfig],
        capture_output=True, text=True, env={**os.environ, TOKEN_ENV: TOKEN}, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == code, done.stdout + done.stderr
    assert TOKEN not in done.stdout + done.stderr
    return done.stdout


def app_ref(shop: ArgoShop) -> str:
    return f"{ARGOCD_NAMESPACE}/{shop.sync.name}"


def automated(shop: ArgoShop) -> Any:
    return (shop.application()["spec"].get("syncPolicy") or {}).get("automated")


def record(shop: ArgoShop) -> object:
    return (shop.application()["metadata"].get("annotations") or {}).get(RECORD)


def synced_revision(shop: ArgoShop) -> str | None:
    return ((shop.application().get("status") or {}).get("sync") or {}).get("revision")


def test_break_glass_keeps_the_hotfix_until_argocd_has_the_merged_backport(
    make_argo_shop: ArgoShopMaker, tmp_path: Path
) -> None:
    shop = make_argo_shop()
    out = break_glass(shop, "start", "--argocd-app", app_ref(shop), "--reason", "checkout TLS errors: new CA",
                      "--ttl", "1h", "--incident", "https://status.example.com/inc/42")  # fmt: skip
    assert f"break-glass started: Application {app_ref(shop)}" in out, out
    assert automated(shop) is None and json.loads(str(record(shop)))["reason"] == "checkout TLS errors: new CA"

    recorder = shop.record("ConfigMap", "checkout-ca")
    try:
        kubectl_edit_appending_the_ca(shop, tmp_path)
        wait_until("our watch seeing the edit", lambda: recorder.first_since(0, has_hotfix), timeout=10)
        edited = recorder.first_since(0, has_hotfix)
        assert edited is not None
        stays("Argo CD reverting the hotfix", lambda: has_hotfix(recorder.latest()), seconds=8)

        config_file = shop.config_file(shop.config())
        out = break_glass(shop, "end", "--argocd-app", app_ref(shop), "--config", str(config_file))
        assert "auto-sync stays suspended, waiting for PR #1 to merge" in out, out
        pr = shop.only_pr()
        added = [x for x in shop.pr_diff(pr).splitlines() if x.startswith("+") and not x.startswith("+++")]
        assert added == ["+    " + line for line in HOTFIX_CA.strip().splitlines()]
        assert "checkout TLS errors: new CA" in pr["body"] and automated(shop) is None

        service = shop.serve(json.loads(config_file.read_text()))
        service.wait_cycles(1)
        assert automated(shop) is None and service.metric("writeback_break_glass_active", target=TARGET) == 1
        merged = shop.merge(pr)
        service.wait("the service restoring auto-sync", lambda: automated(shop) is not None, timeout=90)
        # resumed only once Argo CD's status.sync.revision is the merge commit, and restored exactly
        assert synced_revision(shop) == merged
        assert automated(shop) == dict(SELF_HEAL) and record(shop) is None
        shop.sync.wait_applied(merged)
        stays("Argo CD reverting the hotfix", lambda: has_hotfix(recorder.latest()), seconds=4)
    finally:
        recorder.stop()
    never_reverted = [t for t, obj in recorder.versions() if t >= edited and not has_hotfix(obj)]
    assert never_reverted == [], "a version of the ConfigMap without the hotfix"
    assert "no break-glass on Application" in break_glass(shop, "status", "--argocd-app", app_ref(shop))
    service.stop()


def test_force_resumes_at_once_and_argocd_reverts_what_git_lacks(make_argo_shop: ArgoShopMaker, tmp_path: Path) -> None:
    shop = make_argo_shop()
    break_glass(shop, "start", "--argocd-app", app_ref(shop), "--reason", "try a CA", "--ttl", "30m")
    kubectl_edit_appending_the_ca(shop, tmp_path)
    config_file = shop.config_file(shop.config())
    out = break_glass(shop, "end", "--argocd-app", app_ref(shop), "--config", str(config_file), "--force")
    assert "backport ensured, auto-sync restored" in out, out
    assert automated(shop) == dict(SELF_HEAL) and record(shop) is None
    assert len(shop.forge.prs) == 1  # the backport PR is ensured first, even with --force
    wait_until(
        "Argo CD's selfHeal reverting the unmerged hotfix once resumed",
        lambda: not has_hotfix(shop.get("configmap", "checkout-ca")),
        timeout=30,
    )


def test_a_record_past_its_ttl_is_backported_by_the_service_and_resumed_after_the_merge(
    make_argo_shop: ArgoShopMaker, tmp_path: Path
) -> None:
    shop = make_argo_shop()
    break_glass(shop, "start", "--argocd-app", app_ref(shop), "--reason", "short window", "--ttl", "5s")
    kubectl_edit_appending_the_ca(shop, tmp_path)
    service = shop.serve()
    waiting = "expired and waiting for PR #1 to merge"
    wait_until(
        "the service's sweep backporting the expired record",
        lambda: waiting in break_glass(shop, "status", "--argocd-app", app_ref(shop)),
        timeout=90,
    )
    assert automated(shop) is None and len(shop.forge.prs) == 1  # its PR is not merged: still suspended
    merged = shop.merge(shop.only_pr())
    service.wait("the service resuming auto-sync", lambda: automated(shop) is not None, timeout=90)
    assert synced_revision(shop) == merged and has_hotfix(shop.get("configmap", "checkout-ca"))
