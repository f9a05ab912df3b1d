"""A Flux sync for tests: one GitRepository (the served bare repo, a branch) and one Kustomization on it.

    sync = flux_sync(namespace=ns, remote=git_remote, interval="5s")   # the `flux_sync` fixture
    sha = sync.push({"cm.yaml": CONFIGMAP}, "add cm")                  # commit in the clone, push to the bare repo
    sync.wait_applied(sha)                                             # Ready at main@sha1:<sha>
    sync.suspend(); sync.resume(); sync.reconcile_now(); sync.set_ignore([{"paths": ["/spec/replicas"]}])

See docs/flux-tests.md.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

SOURCE = ("source.toolkit.fluxcd.io", "v1", "gitrepositories")
KUSTOMIZATION = ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations")
REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"
FIELD_MANAGER = "writeback-tests"
# The controllers reconcile only Flux objects with this label (--watch-label-selector), so the Kustomizations that
# other tests create as plain fixtures (suspend/resume, drift) are never touched by a real controller.
WATCH_LABEL = {"writeback-test/flux": "enabled"}


class GitWorkClone(Protocol):
    """What a sync needs of a git remote (the `git_remote` fixture's GitRemote): a bare repo and a clone of it."""

    @property
    def bare(self) -> Path: ...
    @property
    def work(self) -> Path: ...
    def commit_all(self, message: str) -> str: ...
    def push(self) -> None: ...


class FluxSyncError(AssertionError):
    """A sync did not reach the expected state in time; the message carries both objects' status."""


@dataclass(frozen=True, kw_only=True)
class FluxSync:
    """A GitRepository and a Kustomization, both named `name` in `namespace` (see `create_sync`)."""

    api_client: Any
    namespace: str
    name: str
    url: str
    branch: str
    remote: GitWorkClone

    @property
    def labels(self) -> dict[str, str]:
        """The labels kustomize-controller puts on every object it applies for this Kustomization."""
        return {"kustomize.toolkit.fluxcd.io/name": self.name, "kustomize.toolkit.fluxcd.io/namespace": self.namespace}

    def revision(self, sha: str) -> str:
        """How Flux writes the commit `sha` of this branch (status.lastAppliedRevision, artifact revision)."""
        return f"{self.branch}@sha1:{sha}"

    def push(self, files: Mapping[str, str | None], message: str) -> str:
        """Write `files` (path in the repo -> content; None deletes) in the clone, commit, push; the new sha."""
        for rel, content in files.items():
            path = self.remote.work / rel
            if content is None:
                path.unlink(missing_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content)
        sha = self.remote.commit_all(message)
        self.remote.push()
        return sha

    def kustomization(self) -> dict[str, Any]:
        return self._get(KUSTOMIZATION)

    def git_repository(self) -> dict[str, Any]:
        return self._get(SOURCE)

    def wait_applied(self, sha: str, *, timeout: float = 90) -> dict[str, Any]:
        """Wait until the Kustomization is Ready with status.lastAppliedRevision == "<branch>@sha1:<sha>" for its
        current generation; returns it. Asks both objects to reconcile now (no waiting for the interval)."""
        want = self.revision(sha)
        self.reconcile_now()
        deadline = time.monotonic() + timeout
        while True:
            ks = self.kustomization()
            status = ks.get("status") or {}
            if status.get("lastAppliedRevision") == want and _ready(ks):
                return ks
            if time.monotonic() > deadline:
                raise FluxSyncError(
                    f"Kustomization {self.namespace}/{self.name} not Ready at {want} after {timeout:.0f}s:\n"
                    f"Kustomization status: {status}\nGitRepository status: {self.git_repository().get('status')}"
                )
            time.sleep(0.2)

    def suspend(self) -> None:
        """spec.suspend: true on the Kustomization (kustomize-controller then leaves live objects alone)."""
        self._patch(KUSTOMIZATION, {"spec": {"suspend": True}})

    def resume(self) -> None:
        """spec.suspend: false (kustomize-controller reconciles at once)."""
        self._patch(KUSTOMIZATION, {"spec": {"suspend": False}})

    def set_ignore(self, rules: list[dict[str, Any]]) -> None:
        """spec.ignore on the Kustomization: Flux's drift ignore rules (paths and a target selector)."""
        self._patch(KUSTOMIZATION, {"spec": {"ignore": rules}})

    def reconcile_now(self) -> None:
        """Annotate both objects with reconcile.fluxcd.io/requestedAt, as `flux reconcile` does."""
        now = {"metadata": {"annotations": {REQUESTED_AT: datetime.now(UTC).isoformat()}}}
        self._patch(SOURCE, now)
        self._patch(KUSTOMIZATION, now)

    def delete(self, *, timeout: float = 60) -> None:
        """Delete the Kustomization (kustomize-controller prunes what it applied) then the GitRepository; waits
        until both are gone (their finalizers removed by the controllers)."""
        from kubernetes import client

        api = client.CustomObjectsApi(self.api_client)
        for group, version, plural in (KUSTOMIZATION, SOURCE):
            try:
                api.delete_namespaced_custom_object(group, version, self.namespace, plural, self.name)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
            deadline = time.monotonic() + timeout
            while True:
                try:
                    left = api.get_namespaced_custom_object(group, version, self.namespace, plural, self.name)
                except client.ApiException as exc:
                    if exc.status == 404:
                        break
                    raise
                if time.monotonic() > deadline:
                    raise FluxSyncError(
                        f"{plural} {self.namespace}/{self.name} not deleted after {timeout:.0f}s: {left}"
                    )
                time.sleep(0.2)

    def _get(self, what: tuple[str, str, str]) -> dict[str, Any]:
        from kubernetes import client

        group, version, plural = what
        api = client.CustomObjectsApi(self.api_client)
        got: Any = api.get_namespaced_custom_object(group, version, self.namespace, plural, self.name)
        return dict(got)

    def _patch(self, what: tuple[str, str, str], body: Mapping[str, Any]) -> None:
        from kubernetes import client

        group, version, plural = what
        api = client.CustomObjectsApi(self.api_client)
        api.patch_namespaced_custom_object(
            group,
            version,
            self.namespace,
            plural,
            self.name,
            dict(body),
            field_manager=FIELD_MANAGER,
            _content_type="application/merge-patch+json",
        )


def _ready(obj: Mapping[str, Any]) -> bool:
    status = obj.get("status") or {}
    generation = (obj.get("metadata") or {}).get("generation")
    return status.get("observedGeneration") == generation and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
    )


def create_sync(
    *,
    api_client: Any,
    url: str,
    remote: GitWorkClone,
    namespace: str,
    name: str | None = None,
    branch: str = "main",
    path: str = "./",
    interval: str = "5s",
    prune: bool = True,
    target_namespace: str | None = None,
) -> FluxSync:
    """Create a GitRepository (url, branch, interval) and a Kustomization on it (interval, path, prune,
    targetNamespace when given), both named `name` (default a random "flux-xxxxxx") in `namespace` and labelled
    writeback-test/flux=enabled (the controllers reconcile nothing else)."""
    from kubernetes import client

    name = name or f"flux-{uuid.uuid4().hex[:6]}"
    api = client.CustomObjectsApi(api_client)
    source = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name, "namespace": namespace, "labels": WATCH_LABEL},
        "spec": {"interval": interval, "url": url, "ref": {"branch": branch}, "timeout": "20s"},
    }
    spec: dict[str, Any] = {
        "interval": interval,
        "retryInterval": interval,
        "path": path,
        "prune": prune,
        "timeout": "30s",
        "sourceRef": {"kind": "GitRepository", "name": name},
    }
    if target_namespace is not None:
        spec["targetNamespace"] = target_namespace
    kustomization = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": namespace, "labels": WATCH_LABEL},
        "spec": spec,
    }
    for (group, version, plural), body in ((SOURCE, source), (KUSTOMIZATION, kustomization)):
        api.create_namespaced_custom_object(group, version, namespace, plural, body, field_manager=FIELD_MANAGER)
    return FluxSync(api_client=api_client, namespace=namespace, name=name, url=url, branch=branch, remote=remote)
