"""The end-to-end scenarios' pieces against the real Argo CD: the shop's GitOps repo synced by an Application, the
fake GitHub on its bare remote, a `writeback run --config` service process (tests/e2e/support.Shop, with Argo CD's
sync in place of Flux's), and what a cluster without kubelets lacks for Argo CD's health checks.

    shop = make_argo_shop(automated={"selfHeal": True, "prune": True})   # Synced + Healthy at the first commit
    service = shop.serve()                                               # writeback run --config on it
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.argocd.apps import ArgoApp, push
from tests.e2e.support import VERSIONS, SyncedShop

ARGOCD_NAMESPACE = "argocd"
STATUS_MANAGER = "kube-controller-manager"


@dataclass(frozen=True)
class ArgoSync:
    """The Application as the part of a shop that applies Git: push commits, wait until Argo CD synced one."""

    app: ArgoApp

    @property
    def name(self) -> str:
        return self.app.name

    def push(self, files: Mapping[str, str | None], message: str) -> str:
        return push(self.app.remote, files, message)

    def wait_applied(self, sha: str, *, timeout: float = 90) -> None:
        self.app.wait_synced(sha, timeout=timeout)


@dataclass
class ArgoShop(SyncedShop[ArgoSync]):
    """A shop whose `apps/checkout` an Argo CD Application syncs."""

    def application(self) -> dict[str, Any]:
        return self.sync.app.application()

    def controller(self) -> dict[str, str]:
        """The target's controller object: the Application."""
        return {"argocd_application": f"{ARGOCD_NAMESPACE}/{self.sync.name}"}

    def selector(self, kind: str) -> dict[str, Any]:
        """The shop's namespace: Argo CD tracks its objects by annotation, so there is no label to select by."""
        return {"apiVersion": VERSIONS[kind], "kind": kind, "namespaces": [self.namespace]}


@dataclass
class DeploymentStatus:
    """What kube-controller-manager does for a Deployment's status where no kubelet runs pods: once the spec's
    generation changes, the rollout is reported done (observedGeneration, replicas all available), so that Argo
    CD's health check sees the Deployment Healthy, as it would in a real cluster. It writes only the status
    subresource, as manager kube-controller-manager, never the spec."""

    api_client: Any
    namespace: str
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> DeploymentStatus:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True, name="deployment status")
        self._thread.start()
        if not ready.wait(30):
            raise AssertionError("the Deployment status writer did not start")
        return self

    def _run(self, ready: threading.Event) -> None:
        from kubernetes import client, watch

        apps = client.AppsV1Api(self.api_client)
        list_call: Callable[..., Any] = apps.list_namespaced_deployment  # _preload_content=False: the HTTP answer
        listed = json.loads(list_call(self.namespace, _preload_content=False).data)
        for item in listed["items"]:
            self._report(apps, item)
        version = listed["metadata"]["resourceVersion"]
        ready.set()
        while not self._stop.is_set():
            stream = watch.Watch()
            for event in stream.stream(apps.list_namespaced_deployment, self.namespace, resource_version=version,
                                       timeout_seconds=2):  # fmt: skip
                obj = event["raw_object"]
                version = obj["metadata"]["resourceVersion"]
                if event["type"] in ("ADDED", "MODIFIED"):
                    self._report(apps, obj)
                if self._stop.is_set():
                    stream.stop()

    def _report(self, apps: Any, obj: Mapping[str, Any]) -> None:
        from kubernetes import client

        meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
        generation = meta.get("generation", 0)
        if status.get("observedGeneration") == generation:
            return
        replicas = spec.get("replicas", 1)
        now = "2026-01-01T00:00:00Z"
        conditions = [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastUpdateTime": now,
             "lastTransitionTime": now, "message": "Deployment has minimum availability."},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastUpdateTime": now,
             "lastTransitionTime": now, "message": "ReplicaSet has successfully progressed."},
        ]  # fmt: skip
        counts = {k: replicas for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")}
        body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": meta["name"]},
                "status": {"observedGeneration": generation, **counts, "conditions": conditions}}  # fmt: skip
        try:
            apps.patch_namespaced_deployment_status(
                meta["name"], self.namespace, body, field_manager=STATUS_MANAGER, force=True,
                _content_type="application/apply-patch+yaml",
            )  # fmt: skip
        except client.ApiException as exc:
            if exc.status != 404:  # deleted meanwhile
                raise

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
