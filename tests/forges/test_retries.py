"""Rate limits and transient errors: the libraries' own retry works, with delays off, and a wait past the
configured maximum skips the target until the next cycle (with the reason) instead of sleeping."""

from __future__ import annotations

import time

import pytest

from tests.forges.conftest import Env, change_set
from writeback.errors import ForgeError, RateLimited
from writeback.model import Outcome, ResultReason


def _limited(env: Env) -> int:
    return 403 if env.kind == "github" else 429


def test_transient_5xx_is_retried(env: Env) -> None:
    env.fake.inject(502, headers={"Retry-After": "0"}, times=2, method="POST")
    [result] = env.cycle(change_set(replicas=3))
    assert result.outcome is Outcome.CREATED
    assert [r.status for r in env.fake.requests if r.method == "POST"][:3] == [502, 502, 201]


def test_short_rate_limit_wait_is_retried(env: Env) -> None:
    env.fake.inject(_limited(env), headers={"Retry-After": "0"}, body={"message": "slow down"}, times=1)
    started = time.monotonic()
    [result] = env.cycle(change_set(replicas=3))
    assert result.outcome is Outcome.CREATED
    assert env.fake.requests[0].status == _limited(env)
    assert time.monotonic() - started < 30


def test_retry_after_past_the_maximum_skips_the_target_with_the_reason(env: Env) -> None:
    env.fake.inject(_limited(env), headers={"Retry-After": "3600"}, body={"message": "slow down"}, times=10)
    started = time.monotonic()
    [result] = env.cycle(change_set(replicas=3))
    assert result.outcome is Outcome.SKIPPED and result.reason is ResultReason.RATE_LIMITED
    assert "3600" in result.detail and "next cycle" in result.detail
    assert len(env.fake.requests) == 1  # gave up at once: no sleeping, no retry loop
    assert time.monotonic() - started < 30
    assert env.fake.writes() == []


def test_rate_limit_reset_an_hour_away_skips(env: Env) -> None:
    reset = str(int(time.time()) + 3600)
    if env.kind == "github":  # a primary rate limit: X-RateLimit-Remaining 0 and the reset time
        headers = {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}
        body = {"message": "API rate limit exceeded for user ID 1.", "documentation_url": "https://docs.github.com"}
    else:
        headers, body = {"RateLimit-Reset": reset, "RateLimit-Remaining": "0"}, {"message": "429 Too Many Requests"}
    env.fake.inject(_limited(env), headers=headers, body=body, times=10)
    [result] = env.cycle(change_set(replicas=3))
    assert result.outcome is Outcome.SKIPPED and result.reason is ResultReason.RATE_LIMITED
    assert len(env.fake.requests) == 1


def test_persistent_5xx_fails_the_change_set_after_the_configured_retries(env: Env) -> None:
    env.fake.inject(503, headers={"Retry-After": "0"}, times=100, method="POST")
    [result] = env.cycle(change_set(replicas=3))
    assert result.outcome is Outcome.FAILED
    assert "503" in result.detail or "too many" in result.detail.lower()
    assert len([r for r in env.fake.requests if r.method == "POST"]) == 1 + 3  # the try and max_retries=3


def test_adapter_errors_are_ours(env: Env) -> None:
    env.fake.inject(_limited(env), headers={"Retry-After": "999"}, times=1)
    with pytest.raises(RateLimited):
        env.forge.find_open_pr(branch="writeback/prod/x")
    env.fake.inject(404, body={"message": "Not Found"}, times=1)
    with pytest.raises(ForgeError, match="404"):
        env.forge.find_open_pr(branch="writeback/prod/x")
