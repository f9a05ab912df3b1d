"""Fixtures of the service tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture
def root_logging() -> Iterator[None]:
    """The process's logging as it was before the test: the root's handlers and level, and the level of every named
    logger (``setup_logging`` quiets urllib3, kubernetes, git and apscheduler, which later tests must still hear)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    named = {name: lg.level for name, lg in logging.root.manager.loggerDict.items() if isinstance(lg, logging.Logger)}
    yield
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in handlers:
        root.addHandler(h)
    root.setLevel(level)
    for name, lg in logging.root.manager.loggerDict.items():
        if isinstance(lg, logging.Logger):
            lg.setLevel(named.get(name, logging.NOTSET))
