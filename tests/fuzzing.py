"""Hypothesis profiles of the fuzz tests, chosen by ``WRITEBACK_FUZZ`` (README, Development).

- ``ci`` (the default): each fuzz test runs the small count it names, the same examples every run, so that CI
  stays quick and never fails on a new random draw (the long runs find new cases).
- ``long``: 10,000 examples each, run by hand: ``WRITEBACK_FUZZ=long .venv/bin/pytest -m fuzz``.

Failing examples print their reproduction blob; each one found becomes an ``@example`` or a plain test.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

_COMMON: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
}
settings.register_profile("ci", derandomize=True, **_COMMON)  # the same examples every run: CI never flakes
settings.register_profile("long", max_examples=10_000, **_COMMON)

PROFILE = os.environ.get("WRITEBACK_FUZZ", "ci")
if PROFILE not in ("ci", "long"):
    raise RuntimeError(f"WRITEBACK_FUZZ={PROFILE!r}: use 'ci' (the default) or 'long'")


def fuzz(*, ci: int) -> Callable[[Any], Any]:
    """Mark a hypothesis test as a fuzz test: ``ci`` examples by default, 10,000 with WRITEBACK_FUZZ=long."""
    base = settings.get_profile(PROFILE)
    chosen = settings(base, max_examples=ci) if PROFILE == "ci" else base

    def decorate(test: Any) -> Any:
        marked = pytest.mark.fuzz(chosen(test))
        return pytest.mark.timeout(0)(marked) if PROFILE == "long" else marked  # no per-test limit when long

    return decorate
