"""Fixtures of the end-to-end scenarios: `shop`, the GitOps repo of the offline demo synced by the real Flux
controllers (shared by every test of the session: the `flux` fixture), with the fake GitHub on its bare remote."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.support import APP_PATH, FILES, INTERVAL, Shop, ShopMaker, example_manifest
from tests.fakes.github_fake import GitHubFake
from tests.flux.fixtures import SyncMaker


@pytest.fixture
def make_shop(
    controlplane: Any, namespace: str, git_remote: Any, flux_sync: SyncMaker, tmp_path: Path
) -> Iterator[ShopMaker]:
    """`make_shop(files=None, before_apply=None)`: the demo's ConfigMap (the PEM bundle) and Deployment (or
    `files`: name -> text, under apps/checkout) in a fresh namespace, pushed to main and applied by Flux (5 s
    intervals, prune) after `before_apply(namespace)` ran; the fake GitHub on the bare remote. After the test:
    every service stopped (exit 0, no token in its log), no request broke the GitHub schemas, and Flux prunes what
    it applied."""
    made: list[Shop] = []

    def make(files: Mapping[str, str] | None = None, before_apply: Callable[[str], None] | None = None) -> Shop:
        assert not made, "one shop per test"
        if before_apply is not None:
            before_apply(namespace)
        sync = flux_sync(namespace=namespace, remote=git_remote, path=f"./{APP_PATH}", interval=f"{INTERVAL:.0f}s")
        files = files if files is not None else {name: example_manifest(name, namespace) for name in FILES}
        sync.wait_applied(sync.push({f"{APP_PATH}/{k}": v for k, v in files.items()}, "checkout: the app"))
        forge = GitHubFake(bare=git_remote.bare).start()
        made.append(Shop(controlplane=controlplane, namespace=namespace, remote=git_remote, sync=sync, forge=forge,
                         workdir=tmp_path))  # fmt: skip
        return made[0]

    try:
        yield make
        for shop in made:
            for service in shop.services:
                service.stop()
            assert shop.forge.violations == []
    finally:
        for shop in made:
            for service in shop.services:
                if service.proc.poll() is None:
                    service.proc.kill()
            shop.forge.stop()


@pytest.fixture
def shop(make_shop: ShopMaker) -> Shop:
    """The demo's ConfigMap and Deployment, applied by Flux (see `make_shop`)."""
    return make_shop()
