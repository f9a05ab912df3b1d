"""The loop works: an Application with selfHeal syncs a ConfigMap from the test git server, becomes Synced and
Healthy at the pushed commit, and the real application-controller reverts a `kubectl patch` of it. The revert
latency is printed (shown with -rP; the measured figures are in docs/argocd-tests.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.argocd.apps import push, synced_at
from tests.argocd.conftest import AppMaker
from tests.controlplane.cp import ControlPlane
from tests.e2e.support import LiveRecorder, managers
from tests.support.gitrepos import GitRemote
from tests.support.polling import wait_until

pytestmark = [pytest.mark.argocd, pytest.mark.controlplane]

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
data:
  level: info
"""


def level(obj: dict[str, Any]) -> str | None:
    return (obj.get("data") or {}).get("level")


def test_self_heal_reverts_a_kubectl_patch(
    namespace: str, git_remote: GitRemote, argocd_app: AppMaker, controlplane: ControlPlane, k8s: Any
) -> None:  # the namespace first: set up before the Application, so it goes after the Application is deleted
    sha = push(git_remote, {"config.yaml": CONFIGMAP}, "app config")
    app = argocd_app(namespace=namespace, remote=git_remote, automated={"selfHeal": True})
    app.wait_synced(sha)

    live = json.loads(
        controlplane.kubectl(
            "get", "configmap", "app-config", "-n", namespace, "-o", "json", "--show-managed-fields"
        ).stdout
    )
    assert live["data"] == {"level": "info"}
    # client-side sync (the default): one Update entry by argocd-controller; the tracking annotation is Argo CD's
    assert managers(live) == [("argocd-controller", "Update", "")]
    assert live["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"].startswith(f"{app.name}:")

    recorder = LiveRecorder(api_client=k8s, kind="ConfigMap", namespace=namespace, name="app-config").start()
    try:
        patch = json.dumps({"data": {"level": "debug"}})
        controlplane.kubectl("patch", "configmap", "app-config", "-n", namespace, "--type=merge", "-p", patch)
        wait_until(
            "our watch seeing the patch", lambda: recorder.first_since(0, lambda o: level(o) == "debug"), timeout=10
        )
        patched = recorder.first_since(0, lambda o: level(o) == "debug")
        assert patched is not None
        wait_until(
            "the application-controller reverting the kubectl patch (selfHeal)",
            lambda: recorder.first_since(patched, lambda o: level(o) == "info"),
            timeout=60,
        )
        reverted = recorder.first_since(patched, lambda o: level(o) == "info")
        assert reverted is not None
    finally:
        recorder.stop()
    final = recorder.latest()
    assert final["data"] == {"level": "info"}
    # the reverting Update takes the field back: kubectl-patch owned nothing else, so its entry is gone
    assert managers(final) == [("argocd-controller", "Update", "")]
    application = app.application()
    assert synced_at(application, sha)
    operation = application["status"]["operationState"]["operation"]
    assert operation["initiatedBy"] == {"automated": True}
    # the n-th self-heal at one revision waits 2 s * 3^(n-2) after the previous sync (n >= 2)
    attempts = operation["sync"].get("autoHealAttemptsCount", 0)
    took = reverted - patched
    print(f"argocd selfHeal: kubectl patch -> revert {took:.2f}s (as our watch saw both; self-heal #{attempts})")
