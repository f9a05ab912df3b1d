"""Scenario e, end to end, against the real Flux controllers: a break-glass that never lets Flux wipe the hotfix.

1. `writeback break-glass start --flux-kustomization NS/NAME` (a real CLI process) suspends the Kustomization.
2. A `kubectl edit` of the Flux-managed ConfigMap now survives two reconcile intervals and more.
3. `writeback break-glass end --config ...` opens the backport PR and leaves auto-sync suspended (the default,
   `resume_after: merged`); `status` says it waits for the PR.
4. The service's cycles keep it suspended while the PR is open, and after the merge while Flux's GitRepository
   artifact revision does not contain the merge commit yet (the test holds source-controller back by suspending
   the GitRepository, so that window is certain rather than a race).
5. Once source-controller has fetched the merge commit, the service's cycle resumes auto-sync; Flux applies the
   merge commit; the recorder saw no version of the ConfigMap without the hotfix since the edit; the record is
   gone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.support import (
    HOTFIX_CA,
    INTERVAL,
    TARGET,
    TOKEN_ENV,
    Shop,
    has_hotfix,
    kubectl_edit_appending_the_ca,
)
from tests.fakes.github_fake import TOKEN
from tests.support.breakglass_record import events
from tests.support.polling import stays, wait_until

pytestmark = [pytest.mark.controlplane, pytest.mark.flux]
RECORD = "writeback.io/break-glass"


def break_glass(shop: Shop, *args: str) -> str:
    """``writeback break-glass ARGS`` as a process on call would run; its stdout (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-m", "writeback.cli", "break-glass", *args, "--kubeconfig", shop.kubeconfig],
        capture_output=True, text=True, env={**os.environ, TOKEN_ENV: TOKEN}, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert TOKEN not in done.stdout + done.stderr
    return done.stdout


def suspended(shop: Shop) -> bool:
    return bool(shop.sync.kustomization()["spec"].get("suspend"))


def record(shop: Shop) -> object:
    return (shop.sync.kustomization()["metadata"].get("annotations") or {}).get(RECORD)


def suspend_source(shop: Shop, suspend: bool) -> None:
    shop.controlplane.kubectl("patch", "gitrepository", shop.sync.name, "-n", shop.namespace, "--type=merge",
                              "-p", json.dumps({"spec": {"suspend": suspend}}))  # fmt: skip


def test_break_glass_keeps_the_hotfix_until_flux_has_the_merged_backport(shop: Shop, tmp_path: Path) -> None:
    ks = f"{shop.namespace}/{shop.sync.name}"
    out = break_glass(shop, "start", "--flux-kustomization", ks, "--reason", "checkout TLS errors: new CA",
                      "--ttl", "1h", "--incident", "https://status.example.com/inc/42")  # fmt: skip
    assert f"break-glass started: Kustomization {ks}" in out
    assert suspended(shop) and record(shop) is not None

    # 2. the edit survives two reconcile intervals and more (our own watch sees every version)
    recorder = shop.record("ConfigMap", "checkout-ca")
    try:
        kubectl_edit_appending_the_ca(shop, tmp_path)
        wait_until("our watch seeing the edit", lambda: recorder.first_since(0, has_hotfix), timeout=10)
        edited = recorder.first_since(0, has_hotfix)
        assert edited is not None
        stays("Flux reverting the hotfix", lambda: has_hotfix(recorder.latest()), seconds=2 * INTERVAL + 1)

        # 3. end: the backport PR, and auto-sync stays suspended (merged first)
        assert shop.forge.prs == {}
        config_file = shop.config_file(shop.config())
        out = break_glass(shop, "end", "--flux-kustomization", ks, "--config", str(config_file))
        assert "auto-sync stays suspended, waiting for PR #1 to merge" in out, out
        pr = shop.only_pr()
        diff = shop.pr_diff(pr)
        added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
        assert "\n".join(added) == "\n".join("+    " + line for line in HOTFIX_CA.strip().splitlines()), diff
        assert "checkout TLS errors: new CA" in pr["body"]
        assert suspended(shop)
        out = break_glass(shop, "status", "--flux-kustomization", ks)
        assert "waiting for PR #1 to merge" in out, out

        # 4. the service keeps it suspended while the PR is open ...
        service = shop.serve(json.loads(config_file.read_text()))
        service.wait_cycles(1)
        assert suspended(shop) and service.metric("writeback_break_glass_active", target=TARGET) == 1
        # ... and once it is merged, until Flux's source has the merge commit
        suspend_source(shop, True)
        merged = shop.merge(pr)
        service.wait(
            "the service waiting for the GitRepository to have the merge commit",
            lambda: any(
                "waiting for" in r.get("msg", "") and "artifact.revision" in r["msg"] for r in service.records()
            ),
        )
        service.wait_cycles(1)
        assert suspended(shop) and record(shop) is not None
        out = break_glass(shop, "status", "--flux-kustomization", ks)
        assert "PR #1 merged; waiting for the controller's source to have the merge commit" in out, out
        assert shop.sync.git_repository()["status"]["artifact"]["revision"] != shop.sync.revision(merged)

        # 5. source-controller fetches it; the service's cycle resumes auto-sync; Flux applies the merge commit
        suspend_source(shop, False)
        wait_until(
            "source-controller fetching the merge commit",
            lambda: shop.sync.git_repository()["status"]["artifact"]["revision"] == shop.sync.revision(merged),
            timeout=3 * INTERVAL + 5,
        )
        service.wait("the service resuming auto-sync", lambda: not suspended(shop), timeout=30)
        restored = f"break-glass ended on Kustomization {ks}: merged, and Flux GitRepository"
        service.wait(
            "the service's cycle saying it restored auto-sync",
            lambda: any(r["msg"].startswith(restored) for r in service.records()),
            timeout=10,
        )
        want = shop.sync.revision(merged)
        wait_until(
            "Flux applying the merge commit once resumed",
            lambda: shop.sync.kustomization().get("status", {}).get("lastAppliedRevision") == want,
            timeout=3 * INTERVAL + 5,
        )
        # the apply of the merge commit is done; its watch events arrive within milliseconds
        stays("Flux reverting the hotfix", lambda: has_hotfix(recorder.latest()), seconds=2)
    finally:
        recorder.stop()
    never_reverted = [t for t, obj in recorder.versions() if t >= edited and not has_hotfix(obj)]
    assert never_reverted == [], "a version of the ConfigMap without the hotfix"
    assert record(shop) is None
    assert "no break-glass on Kustomization" in break_glass(shop, "status", "--flux-kustomization", ks)
    reasons = [(kind, reason) for kind, reason, _ in events(shop.controlplane, shop.namespace, shop.sync.name)]
    assert reasons == [("Normal", "BreakGlassStarted"), ("Normal", "BreakGlassEnded"), ("Normal", "BreakGlassEnded")]
    service.wait_cycles(1)
    assert service.metric("writeback_break_glass_active", target=TARGET) == 0
    assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
    assert len(shop.forge.prs) == 1 and shop.forge.prs[pr["number"]]["merged_at"] is not None
    service.stop()
