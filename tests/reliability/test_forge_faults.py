"""Forge faults, each on the fake GitHub of a target of its own, in one run of the real `writeback run --once`.

Each fault is either retried within bounds (that target's PR still opens in the same cycle) or reported with a
clear error or a rate-limit skip; the target on a healthy forge, and every other target, is unaffected; once the
faults clear, the next cycle converges to exactly one correct PR per target.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.world import World

SECONDARY = {
    "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
    "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
}
HTML = b"<html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>\n"


@dataclass(frozen=True)
class Fault:
    inject: dict[str, Any]
    first: str  # beta's outcome in the cycle under the fault
    says: str = ""  # what its detail must say (a clear error)


# target name -> its forge's fault (each target has its own fake GitHub; "healthy" has none)
FAULTS = {
    "transient-5xx": Fault({"status": 502, "times": 2}, "created"),
    "lasting-5xx": Fault({"status": 503, "times": 10_000}, "failed", "503"),
    "short-429": Fault({"status": 429, "headers": {"Retry-After": "1"}}, "created"),
    "long-429": Fault({"status": 429, "headers": {"Retry-After": "3600"}, "times": 10_000}, "skipped", "rate limit"),
    "short-secondary": Fault({"status": 403, "body": SECONDARY, "headers": {"Retry-After": "1"}}, "created"),
    "long-secondary": Fault(
        {"status": 403, "body": SECONDARY, "headers": {"Retry-After": "3600"}, "times": 10_000}, "skipped", "rate limit"
    ),
    "one-timeout": Fault({"status": 200, "delay": 2.5, "method": "GET"}, "created"),
    "lasting-timeouts": Fault({"status": 200, "delay": 2.5, "times": 10_000, "method": "GET"}, "failed", "timed out"),
    "not-json": Fault({"status": 200, "raw": HTML, "times": 10_000, "path_contains": "/pulls"}, "failed", "not JSON"),
    "proxy-page-502": Fault({"status": 502, "raw": HTML, "times": 2}, "created"),
}


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[World]:
    w = World.make(tmp_path, names=("healthy", *FAULTS))
    for name in ("one-timeout", "lasting-timeouts"):
        w.target_overrides[name] = {"forge": {"timeout_seconds": 1}}  # the fake answers after 2.5 s
    try:
        yield w
    finally:
        w.stop()


def test_forge_faults_each_on_its_own_target(faulty: World) -> None:
    marks = {}
    for name, fault in FAULTS.items():
        faulty.fakes[name].inject(**fault.inject)
        marks[name] = faulty.fakes[name].mark()
    done = faulty.run(timeout=300)
    assert done.outcomes("healthy") == ["created"], done
    assert done.code == 3 and "Traceback" not in done.stderr, done.stderr[-2000:]
    for name, fault in FAULTS.items():
        [result] = done.of(name)
        assert result["outcome"] == fault.first and fault.says in result["detail"], (name, result)
        assert "unexpected error" not in result["detail"], (name, result)
        if fault.first == "skipped":
            assert result["reason"] == "rate-limited", (name, result)
        assert len(faulty.fakes[name].since(marks[name])) <= 30, f"{name}: retries must be bounded"
        faulty.fakes[name].injections.clear()
    again = faulty.run(timeout=300)  # the faults cleared: every target converges
    assert again.code == 0, again.stderr[-2000:]
    assert again.outcomes("healthy") == ["unchanged"], again
    for name, fault in FAULTS.items():
        assert again.outcomes(name) == ["unchanged" if fault.first == "created" else "created"], (name, again)
    faulty.assert_converged()
