"""Forge faults on one target's fake GitHub (beta), with the real `writeback run --once` process.

Each case: the fault is either retried within bounds (the PR still opens in the same cycle) or reported with a
clear error or a rate-limit skip; alpha, on a healthy forge, is unaffected; once the fault clears, the next cycle
converges to exactly one correct PR per target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from .world import World

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


FAULTS = {
    "5xx then healthy (retried)": Fault({"status": 502, "times": 2}, "created"),
    "5xx that lasts": Fault({"status": 503, "times": 10_000}, "failed", "503"),
    "429 with a short Retry-After (retried)": Fault({"status": 429, "headers": {"Retry-After": "1"}}, "created"),
    "429 with a long Retry-After": Fault(
        {"status": 429, "headers": {"Retry-After": "3600"}, "times": 10_000}, "skipped", "rate limit"
    ),
    "secondary rate limit, short (retried)": Fault(
        {"status": 403, "body": SECONDARY, "headers": {"Retry-After": "1"}}, "created"
    ),
    "secondary rate limit, long": Fault(
        {"status": 403, "body": SECONDARY, "headers": {"Retry-After": "3600"}, "times": 10_000}, "skipped", "rate limit"
    ),
    "a read timeout (retried)": Fault({"status": 200, "delay": 4, "method": "GET"}, "created"),
    "timeouts that last": Fault({"status": 200, "delay": 4, "times": 10_000, "method": "GET"}, "failed", "timed out"),
    "a response that is not JSON": Fault(
        {"status": 200, "raw": HTML, "times": 10_000, "path_contains": "/pulls"}, "failed", "not JSON"
    ),
    "a 502 proxy page that is not JSON (retried)": Fault({"status": 502, "raw": HTML, "times": 2}, "created"),
}


@pytest.mark.parametrize("fault", FAULTS.values(), ids=FAULTS.keys())
def test_forge_fault(world: World, fault: Fault) -> None:
    beta = world.fakes["beta"]
    beta.inject(**fault.inject)
    mark = beta.mark()
    done = world.run()
    assert done.outcomes("alpha") == ["created"], done
    [result] = done.of("beta")
    assert result["outcome"] == fault.first, result
    assert fault.says in result["detail"], result
    if fault.first == "failed":
        assert done.code == 3 and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert "unexpected error" not in result["detail"], result
    if fault.first == "skipped":
        assert result["reason"] == "rate-limited", result
    assert len(beta.since(mark)) <= 30, "retries must be bounded"
    beta.injections.clear()
    again = world.run()
    assert again.code == 0, again.stderr[-2000:]
    assert again.outcomes("alpha") == ["unchanged"], again
    assert again.outcomes("beta") == ["unchanged" if fault.first == "created" else "created"], again
    world.assert_converged()
