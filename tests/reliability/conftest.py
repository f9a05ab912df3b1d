"""The fault matrix's fixtures: a world of two targets (see world.py), stopped and checked after each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.world import World


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World.make(tmp_path)
    try:
        yield w
    finally:
        w.stop()
