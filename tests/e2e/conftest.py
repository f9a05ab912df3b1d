"""Fixtures of the end-to-end scenarios: `shop`, the GitOps repo of the offline demo synced by the real Flux
controllers (shared by every test of the session: the `flux` fixture), with the fake GitHub on its bare remote."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.github_fake import GitHubFake
from flux.fixtures import SyncMaker

from e2e.support import APP_PATH, INTERVAL, Shop, example_manifest


@pytest.fixture
def shop(
    controlplane: Any, namespace: str, git_remote: Any, flux_sync: SyncMaker, tmp_path: Path
) -> Iterator[Shop]:
    """The demo's ConfigMap (the PEM bundle) and Deployment in a fresh namespace, pushed to main and applied by
    Flux (5 s intervals, prune); the fake GitHub on the bare remote. After the test: every service stopped (exit 0,
    no token in its log), no request broke the GitHub schemas, and Flux prunes what it applied."""
    sync = flux_sync(namespace=namespace, remote=git_remote, path=f"./{APP_PATH}", interval=f"{INTERVAL:.0f}s")
    files = {name: example_manifest(name, namespace) for name in ("configmap.yaml", "deployment.yaml")}
    sync.wait_applied(sync.push({f"{APP_PATH}/{k}": v for k, v in files.items()}, "checkout: config and deployment"))
    forge = GitHubFake(bare=git_remote.bare).start()
    shop = Shop(controlplane=controlplane, namespace=namespace, remote=git_remote, sync=sync, forge=forge,
                workdir=tmp_path)  # fmt: skip
    try:
        yield shop
        for service in shop.services:
            service.stop()
        assert forge.violations == []
    finally:
        for service in shop.services:
            if service.proc.poll() is None:
                service.proc.kill()
        forge.stop()
