"""The cyclic collector: paused during a cycle, off for a one-shot command's process, on for the service."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from writeback.pipeline.collector import collector_paused


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_paused_for_the_block_and_resumed_after(collector_on: None) -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_concurrent_cycles_share_the_pause(collector_on: None) -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector_paused():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(10)
    with collector_paused():
        pass
    assert not gc.isenabled(), "the other cycle still runs: the collector stays paused"
    release.set()
    t.join(10)
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector_on: None) -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def _collector_at_exit(*argv: str) -> tuple[int, str]:
    """Run the real console entry point with ``argv``; whether the collector was on when the process ended."""
    probe = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('collector on:', gc.isenabled(), file=sys.stderr))\n"
        f"sys.argv = ['writeback', *{list(argv)!r}]\n"
        "from writeback.cli import entrypoint\n"
        "entrypoint()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stderr


def test_a_one_shot_command_runs_without_the_collector() -> None:
    code, err = _collector_at_exit("config", "validate", "/nonexistent/writeback.yaml")
    assert code == 2, err
    assert "cannot read the configuration file" in err
    assert "collector on: False" in err


def test_the_service_turns_the_collector_back_on() -> None:
    code, err = _collector_at_exit("run")  # the service needs --config: an input error, the collector back on
    assert code == 2, err
    assert "--config" in err
    assert "collector on: True" in err
