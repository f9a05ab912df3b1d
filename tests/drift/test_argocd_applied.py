"""The revision an Argo CD Application has applied, on the real control plane: its status written as Argo CD writes
it after a refresh with auto-sync off (``status.sync.revision`` is Git's head, compared but not applied; the
last successful sync is in ``status.history`` and ``operationState``), and after a failed sync. Git's own change
since the applied revision is pending, never live drift; a person's hotfix is still written back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import apply_argocd_application, by_path, diff_json, drifts_of, git_ahead

pytestmark = pytest.mark.controlplane

APP = "spec.template.spec.containers[name=app]"


@pytest.fixture
def ahead(controlplane: Any, namespace: str, git_remote: Any) -> dict[str, str]:
    return git_ahead(controlplane, namespace, git_remote, applier="argocd-server-side")


SOURCE = {"repoURL": "https://git.example/platform.git", "path": "apps", "targetRevision": "main"}
DESTINATION = {"server": "https://kubernetes.default.svc"}
SYNCED_AT = "2026-12-01T10:00:00Z"


def _status(*, compared: str, applied: str, attempted: str, phase: str) -> dict[str, Any]:
    """As Argo CD writes it: the last refresh compared ``compared``; the last successful sync applied ``applied``;
    the last operation tried ``attempted`` and ended in ``phase``."""
    return {
        "sync": {"status": "OutOfSync", "revision": compared,
                 "comparedTo": {"source": SOURCE, "destination": DESTINATION}},
        "history": [{"id": 0, "revision": applied, "deployedAt": SYNCED_AT, "deployStartedAt": SYNCED_AT,
                     "source": SOURCE}],
        "operationState": {"phase": phase, "startedAt": SYNCED_AT, "finishedAt": SYNCED_AT,
                           "operation": {"sync": {"revision": attempted}},
                           "syncResult": {"revision": attempted, "source": SOURCE}},
    }  # fmt: skip


def _synced_then_refreshed(v1: str, v2: str) -> dict[str, Any]:
    """Auto-sync off: v1 synced, then a refresh compared v2."""
    return _status(compared=v2, applied=v1, attempted=v1, phase="Succeeded")


def _failed(v1: str, v2: str) -> dict[str, Any]:
    """A sync of v2 that failed: v1 is still what the last successful sync applied."""
    return _status(compared=v2, applied=v1, attempted=v2, phase="Failed")


@pytest.mark.parametrize("status", [_synced_then_refreshed, _failed], ids=["auto-sync-off", "failed-sync"])
def test_git_ahead_of_what_argocd_applied_is_pending_not_drift(
    status: Any, ahead: dict[str, str], git_remote: Any, controlplane: Any, namespace: str, crds: list[str]
) -> None:
    apply_argocd_application(controlplane, namespace, git_remote, status(ahead["v1"], ahead["v2"]))

    _, doc = diff_json("--repo", str(git_remote.work), "--kubeconfig", controlplane.kubeconfig,
                       "--argocd-app", f"{namespace}/web")  # fmt: skip

    assert doc["revision"] == ahead["v1"]
    assert doc["revisionSource"] == f"Argo CD Application {namespace}/web status.history (the last successful sync)"
    assert any("ahead of the applied revision" in n for n in doc.get("notes", [])), doc.get("notes")
    web = by_path(drifts_of(doc, kind="Deployment", name="web"))
    assert f"{APP}.image" not in web, web  # live runs the applied image: Git's change is not live drift
    written = [p for p, d in web.items() if d["decision"] == "writeback"]
    assert written and all(p.startswith(f"{APP}.env[name=HOTFIX]") for p in written), written
    assert Path(git_remote.work / "apps" / "web.yaml").read_text().count("nginx:1.27") == 1  # nothing checked out
