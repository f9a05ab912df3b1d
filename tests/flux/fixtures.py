"""pytest plugin (loaded by tests/conftest.py): the real Flux controllers as fixtures. See docs/flux-tests.md.

- `flux` (session): one source-controller + kustomize-controller pair for the whole session, started on first use
  against the session control plane. Fails (never skips) naming the step when it cannot start.
- `flux_sync` (function): `flux_sync(namespace=..., remote=git_remote, ...) -> FluxSync` creates a GitRepository
  and a Kustomization; everything created is deleted after the test (Flux prunes what it applied).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import cp
from tests.flux import controllers
from tests.flux.controllers import FluxControllers, FluxError
from tests.flux.sync import FluxSync, GitWorkClone, create_sync
from tests.support.buildscripts import needed, terminal_progress
from tests.support.testdata import CRDS

SHARED_CRDS = CRDS
NEEDS_FLUX = {"flux", "flux_sync", "flux_bin_dir"}
_BUILT: dict[str, Any] = {}


@pytest.hookimpl(trylast=True)  # after the control plane's build (tests/conftest.py)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the controllers before the first test when any selected test needs them: a cold build takes about
    20 minutes and must not count against one test's timeout. Progress goes to the terminal."""
    if not needed(session, NEEDS_FLUX):
        return
    with terminal_progress(session) as progress:
        try:
            _BUILT["bin_dir"] = controllers.build_controllers(progress=progress)
        except FluxError as exc:
            _BUILT["error"] = exc
            progress(f"flux: {exc}")


def _bin_dir() -> Path:
    if "error" in _BUILT:
        pytest.fail(str(_BUILT["error"]), pytrace=False)
    if "bin_dir" not in _BUILT:
        try:
            _BUILT["bin_dir"] = controllers.build_controllers()
        except FluxError as exc:
            _BUILT["error"] = exc
            pytest.fail(str(exc), pytrace=False)
    return Path(_BUILT["bin_dir"])


@pytest.fixture(scope="session")
def flux_bin_dir() -> Path:
    """The directory of the built controllers (builds them if needed; starts nothing)."""
    return _bin_dir()


@pytest.fixture(scope="session")
def flux(controlplane: cp.ControlPlane) -> Iterator[FluxControllers]:
    """ONE real source-controller + kustomize-controller (v1.9.6) for the session, healthy, watching all
    namespaces of the session control plane; `.serve(bare) -> url` publishes a bare repo over git smart HTTP."""
    bin_dir = _bin_dir()
    try:
        running = controllers.start(plane=controlplane, bin_dir=bin_dir, shared_crds=SHARED_CRDS)
    except (FluxError, cp.ControlPlaneError) as exc:
        pytest.fail(f"the Flux controllers could not start: {exc}", pytrace=False)
    try:
        yield running
    finally:
        running.stop()


class SyncMaker:
    """`flux_sync(...)`: see `flux.sync.create_sync`; remembers what it created to delete it afterwards."""

    def __init__(self, *, flux: FluxControllers, api_client: Any) -> None:
        self.flux, self.api_client = flux, api_client
        self.created: list[FluxSync] = []

    def __call__(
        self,
        *,
        namespace: str,
        remote: GitWorkClone,
        name: str | None = None,
        branch: str = "main",
        path: str = "./",
        interval: str = "5s",
        prune: bool = True,
        target_namespace: str | None = None,
    ) -> FluxSync:
        if not self.flux.alive():
            pytest.fail(
                "the Flux controllers are no longer running; source-controller log tail:\n"
                f"{self.flux.tail('source-controller')}\nkustomize-controller log tail:\n"
                f"{self.flux.tail('kustomize-controller')}",
                pytrace=False,
            )
        sync = create_sync(
            api_client=self.api_client,
            url=self.flux.serve(remote.bare),
            remote=remote,
            namespace=namespace,
            name=name,
            branch=branch,
            path=path,
            interval=interval,
            prune=prune,
            target_namespace=target_namespace,
        )
        self.created.append(sync)
        return sync


@pytest.fixture
def flux_sync(flux: FluxControllers, k8s: Any) -> Iterator[SyncMaker]:
    """Creates GitRepository + Kustomization pairs on the session's Flux; deletes them (and so, with prune, what
    they applied) after the test."""
    maker = SyncMaker(flux=flux, api_client=k8s)
    try:
        yield maker
    finally:
        for sync in reversed(maker.created):
            sync.delete()
