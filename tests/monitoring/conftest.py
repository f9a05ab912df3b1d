"""The `promtool` fixture: the real promtool, built from the Go module proxy before the first test that needs it
(fails, never skips, naming the step when it cannot be built). No control plane."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.monitoring.promtool import Promtool, PromtoolBuildError, build
from tests.support.buildscripts import needed, terminal_progress

_BUILT: dict[str, Promtool | PromtoolBuildError] = {}


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build promtool before the first test when a selected test needs it: a cold build takes minutes and must
    not count against one test's timeout. Progress goes to the terminal."""
    if not needed(session, {"promtool"}):
        return
    with terminal_progress(session) as progress:
        _built(progress=progress)


def _built(*, progress: Callable[[str], None] | None = None) -> Promtool | PromtoolBuildError:
    """Built once per session; a failure is kept, so that every test that needs promtool fails with it."""
    if "promtool" not in _BUILT:
        try:
            _BUILT["promtool"] = build(progress=progress)
        except PromtoolBuildError as exc:
            _BUILT["promtool"] = exc
            if progress is not None:
                progress(f"promtool: {exc}")
    return _BUILT["promtool"]


@pytest.fixture(scope="session")
def promtool() -> Promtool:
    """promtool of the version tests/monitoring/go/go.mod pins (built on first use; fails, never skips)."""
    built = _built()
    if isinstance(built, PromtoolBuildError):
        pytest.fail(str(built), pytrace=False)
    return built
