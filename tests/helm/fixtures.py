"""pytest plugin (loaded by tests/conftest.py): the real helm CLI as the session fixture ``helm_bin``.

A test that uses it is a ``controlplane`` test (it needs Go-built infrastructure), marked so automatically; the
binary is built before the first test when any selected test needs it (a cold build takes about 11 minutes on 2
cores), with its progress on the terminal. It fails, never skips, when it cannot be built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helm.binary import HelmBuildError, build_helm
from tests.support.buildscripts import needed, terminal_progress

NEEDS_HELM = {"helm_bin"}
_BUILT: dict[str, Any] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if NEEDS_HELM & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("controlplane") is None:
            item.add_marker(pytest.mark.controlplane)


@pytest.hookimpl(trylast=True)  # after the control plane's and Flux's builds
def pytest_collection_finish(session: pytest.Session) -> None:
    if not needed(session, NEEDS_HELM):
        return
    with terminal_progress(session) as progress:
        try:
            _BUILT["binary"] = build_helm(progress=progress)
        except HelmBuildError as exc:
            _BUILT["error"] = exc
            progress(f"helm: {exc}")


@pytest.fixture(scope="session")
def helm_bin() -> Path:
    """The real helm binary (v3.22.0; built on first use)."""
    if "error" in _BUILT:
        pytest.fail(str(_BUILT["error"]), pytrace=False)
    if "binary" not in _BUILT:
        try:
            _BUILT["binary"] = build_helm()
        except HelmBuildError as exc:
            _BUILT["error"] = exc
            pytest.fail(str(exc), pytrace=False)
    return Path(_BUILT["binary"])
