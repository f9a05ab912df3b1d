"""The real Argo CD (v3.6.1) as fixtures, and the opt-in `argocd` suite. See docs/argocd-tests.md.

- Opt-in: a test using `argocd`, `argocd_app` or `argocd_bin_dir` is marked `argocd` (and `controlplane`), and
  deselected unless the `-m` expression names `argocd`: `pytest` leaves it out (a cold build takes half an hour+),
  `pytest -m argocd` runs it and builds on first use.
- `argocd` (session): redis, the repo-server and the application-controller for the whole session, started on first
  use against the session control plane. Fails (never skips) naming the step when something cannot start.
- `argocd_app` (function): `argocd_app(namespace=..., remote=git_remote, ...) -> ArgoApp` creates an Application;
  every Application created is deleted after the test.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.argocd import server
from tests.argocd.apps import SELF_HEAL, ArgoApp, create_app, push
from tests.argocd.scenarios import ArgoShop, ArgoSync, DeploymentStatus
from tests.argocd.server import ArgoCD, ArgoCDError
from tests.controlplane import cp
from tests.e2e.support import APP_PATH, FILES, example_manifest
from tests.fakes.github_fake import GitHubFake
from tests.flux.sync import GitWorkClone
from tests.support.buildscripts import needed, terminal_progress

NEEDS_ARGOCD = {"argocd", "argocd_app", "argocd_bin_dir"}
_BUILT: dict[str, Any] = {}


def opted_in(config: pytest.Config) -> bool:
    """Does the `-m` expression name the `argocd` marker (`-m argocd`, `-m "argocd and not slow"`, ...)?"""
    return "argocd" in re.findall(r"[\w-]+", config.option.markexpr or "")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark what needs Argo CD `argocd` and `controlplane`; deselect it unless `-m` names `argocd`. (Conftest hooks
    run before pytest's own `-m` selection, which then decides among the marked.)"""
    for item in items:
        if NEEDS_ARGOCD & set(getattr(item, "fixturenames", ())):
            for mark in ("argocd", "controlplane"):
                if item.get_closest_marker(mark) is None:
                    item.add_marker(mark)
    if opted_in(config):
        return
    left_out = [item for item in items if item.get_closest_marker("argocd") is not None]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item.get_closest_marker("argocd") is None]


@pytest.hookimpl(trylast=True)  # after the control plane's build (tests/conftest.py)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Build Argo CD before the first test when any selected test needs it: a cold build takes half an hour or more and
    must not count against one test's timeout. Progress goes to the terminal."""
    if not needed(session, NEEDS_ARGOCD):
        return
    with terminal_progress(session) as progress:
        try:
            _BUILT["bin_dir"] = server.build_argocd(progress=progress)
        except ArgoCDError as exc:
            _BUILT["error"] = exc
            progress(f"argocd: {exc}")


def _bin_dir() -> Path:
    if "error" in _BUILT:
        pytest.fail(str(_BUILT["error"]), pytrace=False)
    if "bin_dir" not in _BUILT:
        try:
            _BUILT["bin_dir"] = server.build_argocd()
        except ArgoCDError as exc:
            _BUILT["error"] = exc
            pytest.fail(str(exc), pytrace=False)
    return Path(_BUILT["bin_dir"])


@pytest.fixture(scope="session")
def argocd_bin_dir() -> Path:
    """The directory of the built `argocd`, `argocd-redis` and the repo-server's wrappers (builds them if needed)."""
    return _bin_dir()


@pytest.fixture(scope="session")
def argocd(controlplane: cp.ControlPlane, helm_bin: Path) -> Iterator[ArgoCD]:
    """ONE redis + repo-server + application-controller (v3.6.1) for the session, healthy, reconciling the
    Applications of namespace `argocd` into the session control plane; `.serve(bare) -> url` for repoURLs. The
    repo-server renders Helm sources with the tests' helm (v3.22.0, tests/helm/build), as writeback does."""
    bin_dir = _bin_dir()
    try:
        running = server.start(plane=controlplane, bin_dir=bin_dir, tools=(helm_bin.parent,))
    except (ArgoCDError, cp.ControlPlaneError) as exc:
        pytest.fail(f"Argo CD could not start: {exc}", pytrace=False)
    try:
        yield running
    finally:
        running.stop()


class AppMaker:
    """`argocd_app(...)`: see `apps.create_app`; remembers what it created to delete it afterwards."""

    def __init__(self, *, argocd: ArgoCD, api_client: Any) -> None:
        self.argocd, self.api_client = argocd, api_client
        self.created: list[ArgoApp] = []

    def __call__(
        self,
        *,
        namespace: str,
        remote: GitWorkClone,
        name: str | None = None,
        branch: str = "main",
        path: str = ".",
        automated: Mapping[str, Any] | None = SELF_HEAL,
        sync_options: Sequence[str] = (),
        source: Mapping[str, Any] | None = None,
        ignore_differences: Sequence[Mapping[str, Any]] = (),
    ) -> ArgoApp:
        if not self.argocd.alive():
            pytest.fail(f"Argo CD is no longer running:\n{self.argocd.tails()}", pytrace=False)
        app = create_app(
            api_client=self.api_client,
            argocd_namespace=self.argocd.namespace,
            url=self.argocd.serve(remote.bare),
            remote=remote,
            namespace=namespace,
            diagnostics=self.argocd.tails,
            name=name,
            branch=branch,
            path=path,
            automated=automated,
            sync_options=sync_options,
            source=source,
            ignore_differences=ignore_differences,
        )
        self.created.append(app)
        return app


@pytest.fixture
def argocd_app(argocd: ArgoCD, k8s: Any) -> Iterator[AppMaker]:
    """Creates Applications on the session's Argo CD; deletes them after the test (what they applied stays in the
    test's namespace, which the `namespace` fixture deletes)."""
    maker = AppMaker(argocd=argocd, api_client=k8s)
    try:
        yield maker
    finally:
        for app in reversed(maker.created):
            app.delete()


ArgoShopMaker = Callable[..., ArgoShop]


@pytest.fixture
def make_argo_shop(
    controlplane: cp.ControlPlane, namespace: str, git_remote: Any, argocd_app: AppMaker, k8s: Any, tmp_path: Path
) -> Iterator[ArgoShopMaker]:
    """`make_argo_shop(files=None, automated=SELF_HEAL, sync_options=())`: the demo's ConfigMap (the PEM bundle) and
    Deployment (or `files`: name -> text, under apps/checkout) in a fresh namespace, pushed to main and synced by an
    Application (Synced + Healthy); the fake GitHub on the bare remote; a writer of the Deployments' status in place
    of kube-controller-manager. After the test: every service stopped (exit 0, no token in its log), and no request
    broke the GitHub schemas."""
    made: list[ArgoShop] = []
    status = DeploymentStatus(api_client=k8s, namespace=namespace).start()

    def make(
        files: Mapping[str, str] | None = None,
        automated: Mapping[str, Any] | None = SELF_HEAL,
        sync_options: Sequence[str] = (),
        ignore_differences: Sequence[Mapping[str, Any]] = (),
        repo_files: Mapping[str, str] | None = None,
        path: str = APP_PATH,
        source: Mapping[str, Any] | None = None,
    ) -> ArgoShop:
        """``repo_files`` (repo-relative) instead of the demo's files under apps/checkout; ``path`` and ``source``
        (more keys of spec.source, e.g. ``helm``) for the Application."""
        assert not made, "one shop per test"
        files = files if files is not None else {name: example_manifest(name, namespace) for name in FILES}
        pushed = dict(repo_files) if repo_files is not None else {f"{APP_PATH}/{k}": v for k, v in files.items()}
        sha = push(git_remote, pushed, "checkout: the app")
        app = argocd_app(namespace=namespace, remote=git_remote, path=path, automated=automated,
                         sync_options=sync_options, ignore_differences=ignore_differences, source=source)  # fmt: skip
        if automated is None:  # manual sync: sync the first commit once, as a person would
            app.sync(sha)
        app.wait_synced(sha)
        forge = GitHubFake(bare=git_remote.bare).start()
        made.append(ArgoShop(controlplane=controlplane, namespace=namespace, remote=git_remote, sync=ArgoSync(app),
                             forge=forge, workdir=tmp_path))  # fmt: skip
        return made[0]

    try:
        yield make
        for shop in made:
            for service in shop.services:
                service.stop()
            assert shop.forge.violations == []
    finally:
        status.stop()
        for shop in made:
            for service in shop.services:
                if service.proc.poll() is None:
                    service.proc.kill()
            shop.forge.stop()
