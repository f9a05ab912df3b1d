"""An Argo CD Application for tests: one Application (in Argo CD's namespace) on a served bare repo, deploying into
a test namespace of the same cluster.

    sha = push(git_remote, {"cm.yaml": CONFIGMAP}, "add cm")    # commit in the clone, push to the bare repo
    app = argocd_app(namespace=ns, remote=git_remote)           # the `argocd_app` fixture; selfHeal + prune
    app.wait_synced(sha)                                         # Synced + Healthy at that commit
    app.wait_synced(app.push({...}, "next"))                     # later commits
    app.refresh(); app.patch_spec({...}); app.application()

See docs/argocd-tests.md.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.flux.sync import GitWorkClone

APPLICATION = ("argoproj.io", "v1alpha1", "applications")
IN_CLUSTER = "https://kubernetes.default.svc"
REFRESH = "argocd.argoproj.io/refresh"
FIELD_MANAGER = "writeback-tests"
SELF_HEAL: Mapping[str, bool] = {"selfHeal": True, "prune": True}


class ArgoSyncError(AssertionError):
    """An Application did not reach the expected state in time; the message carries its status and the logs."""


@dataclass(frozen=True, kw_only=True)
class ArgoApp:
    """The Application `name` in `argocd_namespace`, deploying `path` of `branch` of `url` into `namespace`."""

    api_client: Any
    argocd_namespace: str
    name: str
    namespace: str  # the destination namespace
    url: str
    branch: str
    remote: GitWorkClone
    diagnostics: Callable[[], str]  # the Argo CD processes' log tails, for failure messages

    def push(self, files: Mapping[str, str | None], message: str) -> str:
        """Write `files` (path in the repo -> content; None deletes) in the clone, commit, push; the new sha."""
        return push(self.remote, files, message)

    def application(self) -> dict[str, Any]:
        from kubernetes import client

        api = client.CustomObjectsApi(self.api_client)
        got: Any = api.get_namespaced_custom_object(*APPLICATION[:2], self.argocd_namespace, APPLICATION[2], self.name)
        return dict(got)

    def refresh(self, *, hard: bool = False) -> None:
        """Annotate argocd.argoproj.io/refresh, as `argocd app get --refresh` does: compare with Git now."""
        self._patch({"metadata": {"annotations": {REFRESH: "hard" if hard else "normal"}}})

    def patch_spec(self, spec: Mapping[str, Any]) -> None:
        """Merge-patch the Application's spec (field manager writeback-tests)."""
        self._patch({"spec": dict(spec)})

    def sync(self, sha: str) -> None:
        """Start a sync of `sha`, as `argocd app sync` does (the Application's `operation`, with its syncOptions):
        for manual sync."""
        options = (self.application()["spec"].get("syncPolicy") or {}).get("syncOptions") or []
        sync: dict[str, Any] = {"revision": sha, **({"syncOptions": list(options)} if options else {})}
        self._patch({"operation": {"initiatedBy": {"username": "writeback-tests"}, "sync": sync}})

    def wait_synced(self, sha: str, *, timeout: float = 90) -> dict[str, Any]:
        """Wait until the Application is Synced at `sha` (status.sync.revision), Healthy, and its last operation (if
        any) Succeeded; returns it. Asks for a refresh first (no waiting for the resync period)."""
        self.refresh()
        deadline = time.monotonic() + timeout
        while True:
            app = self.application()
            if synced_at(app, sha):
                return app
            if time.monotonic() > deadline:
                raise ArgoSyncError(
                    f"Application {self.argocd_namespace}/{self.name} not Synced/Healthy at {sha} after "
                    f"{timeout:.0f}s:\n{describe(app)}\n{self.diagnostics()}"
                )
            time.sleep(0.2)

    def delete(self, *, timeout: float = 60) -> None:
        """Delete the Application (no finalizer: what it applied stays, with its namespace) and wait until gone."""
        from kubernetes import client

        api = client.CustomObjectsApi(self.api_client)
        group, version, plural = APPLICATION
        try:
            api.delete_namespaced_custom_object(group, version, self.argocd_namespace, plural, self.name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
        deadline = time.monotonic() + timeout
        while True:
            try:
                left = self.application()
            except client.ApiException as exc:
                if exc.status == 404:
                    return
                raise
            if time.monotonic() > deadline:
                raise ArgoSyncError(f"Application {self.argocd_namespace}/{self.name} not deleted: {describe(left)}")
            time.sleep(0.2)

    def _patch(self, body: Mapping[str, Any]) -> None:
        from kubernetes import client

        group, version, plural = APPLICATION
        client.CustomObjectsApi(self.api_client).patch_namespaced_custom_object(
            group, version, self.argocd_namespace, plural, self.name, dict(body),
            field_manager=FIELD_MANAGER, _content_type="application/merge-patch+json",
        )  # fmt: skip


def push(remote: GitWorkClone, files: Mapping[str, str | None], message: str) -> str:
    """Write `files` (path in the repo -> content; None deletes) in `remote`'s clone, commit, push; the new sha.
    Push before creating an Application: on an empty repo the repo-server fails and the controller backs off."""
    for rel, content in files.items():
        path = remote.work / rel
        if content is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
    sha = remote.commit_all(message)
    remote.push()
    return sha


def synced_at(app: Mapping[str, Any], sha: str) -> bool:
    status = app.get("status") or {}
    sync, health = status.get("sync") or {}, status.get("health") or {}
    phase = (status.get("operationState") or {}).get("phase", "Succeeded")
    return (
        sync.get("status") == "Synced"
        and sync.get("revision") == sha
        and health.get("status") == "Healthy"
        and phase == "Succeeded"
    )


def describe(app: Mapping[str, Any]) -> str:
    """The parts of an Application's status that say why it is not Synced/Healthy."""
    status = app.get("status") or {}
    op = status.get("operationState") or {}
    return (
        f"sync: {status.get('sync')}\nhealth: {status.get('health')}\nconditions: {status.get('conditions')}\n"
        f"operation: phase={op.get('phase')} message={op.get('message')!r}\nresources: {status.get('resources')}"
    )


def create_app(
    *,
    api_client: Any,
    argocd_namespace: str,
    url: str,
    remote: GitWorkClone,
    namespace: str,
    diagnostics: Callable[[], str],
    name: str | None = None,
    branch: str = "main",
    path: str = ".",
    automated: Mapping[str, Any] | None = SELF_HEAL,
    sync_options: Sequence[str] = (),
    source: Mapping[str, Any] | None = None,
    ignore_differences: Sequence[Mapping[str, Any]] = (),
) -> ArgoApp:
    """Create an Application (project default) named `name` (default a random "app-xxxxxx") on `url` at `branch`,
    `path`, deploying into `namespace` of the same cluster; `automated` is syncPolicy.automated (None: manual sync),
    `sync_options` its syncOptions, `source` more keys of spec.source (helm, directory, kustomize)."""
    from kubernetes import client

    name = name or f"app-{uuid.uuid4().hex[:6]}"
    policy: dict[str, Any] = {}
    if automated is not None:
        policy["automated"] = dict(automated)
    if sync_options:
        policy["syncOptions"] = list(sync_options)
    body: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": argocd_namespace},
        "spec": {
            "project": "default",
            "source": {"repoURL": url, "targetRevision": branch, "path": path, **(source or {})},
            "destination": {"server": IN_CLUSTER, "namespace": namespace},
            "syncPolicy": policy,
            **({"ignoreDifferences": [dict(i) for i in ignore_differences]} if ignore_differences else {}),
        },
    }
    group, version, plural = APPLICATION
    api = client.CustomObjectsApi(api_client)
    api.create_namespaced_custom_object(group, version, argocd_namespace, plural, body, field_manager=FIELD_MANAGER)
    return ArgoApp(
        api_client=api_client,
        argocd_namespace=argocd_namespace,
        name=name,
        namespace=namespace,
        url=url,
        branch=branch,
        remote=remote,
        diagnostics=diagnostics,
    )
