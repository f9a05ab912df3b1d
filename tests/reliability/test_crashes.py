"""SIGKILL the real bot process at each step boundary, held there from outside, then start it fresh.

The holds are outside the product: a pre-receive hook in the bare remote (the commit is made, the push is in
flight), a fake-forge handler that does not answer (the push is done, the PR not yet; the PR is open, its labels
and reviewers not yet). After the restart there is exactly one correct PR per target.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.world import PushGate, World, kill
from tests.support.polling import wait_until
from writeback.adapters.hotfix_store import DirectoryStore
from writeback.model import Capture

WRITER = Path(__file__).with_name("state_writer.py")


def test_killed_after_the_commit_before_the_push(world: World) -> None:
    gate = PushGate(world.bares["beta"])
    gate.arm()
    proc = world.start()
    gate.wait()  # beta committed and is pushing: the hook holds the push
    kill(proc)
    assert world.bot_branches("beta") == {}, "the push must not have landed"
    gate.disarm()
    done = world.run()
    assert done.outcomes("beta") == ["created"], done
    world.assert_converged()


@pytest.mark.parametrize(
    ("method", "where", "boundary"),
    [
        ("POST", "/pulls", "after the push, before the PR"),
        ("POST", "/labels", "after the PR, before its labels and reviewers"),
    ],
)
def test_killed_at_a_forge_step(world: World, method: str, where: str, boundary: str) -> None:
    hold = world.fakes["beta"].hold(method=method, path_contains=where)
    proc = world.start()
    hold.wait()
    kill(proc)
    hold.release()
    assert world.bot_branches("beta"), f"{boundary}: the branch was pushed"
    done = world.run()
    assert done.code in (0, 1), done.stderr[-3000:]
    assert "failed" not in done.outcomes("beta"), done
    world.assert_converged()


def test_a_killed_git_leaves_its_lock_file_in_the_clone(world: World) -> None:
    """SIGKILL of git mid-checkout leaves .git/index.lock (and a half-written index): the clone is a cache, so the
    next cycle makes a fresh one rather than failing on the lock forever."""
    first = world.run()
    assert first.outcomes("beta") == ["created"], first
    world.live["beta"] = "v3"
    git_dir = world.workdir / "beta" / ".git"
    (git_dir / "index.lock").write_bytes(b"DIRC\x00\x00")  # what a killed `git checkout` leaves
    (git_dir / "index").write_bytes(b"DIRC\x00\x00\x00\x02")  # and a cut index
    done = world.run()
    assert done.outcomes("beta") == ["updated"], done.stderr[-2000:]
    world.assert_converged()


def test_killed_in_the_middle_of_writing_the_state_file(tmp_path: Path) -> None:
    """The real DirectoryStore in its own process, SIGKILLed while a save's temporary file exists (mid-write,
    seen from outside), again and again: every capture file left is whole, and the leftovers are cleaned."""
    state = tmp_path / "state"
    kills = 0
    for _ in range(12):
        proc = subprocess.Popen([sys.executable, str(WRITER), str(state)], start_new_session=True)
        try:
            wait_until(
                "the writer mid-write (a temporary file beside a whole one)",
                lambda: list((state / "hotfixes").glob(".tmp-*")) and list((state / "hotfixes").glob("*.json")),
                timeout=30,
                step=0.001,
                process=proc,
            )
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        finally:
            proc.kill()
            proc.wait()
        store = DirectoryStore(state_dir=state)
        for path in (state / "hotfixes").glob("*.json"):
            Capture.from_json(path.read_text())  # whole: it parses
        assert len(store.load(target="prod")) == len(list((state / "hotfixes").glob("*.json"))) >= 1
    assert kills == 12
    leftovers = list((state / "hotfixes").glob(".tmp-*"))
    assert leftovers, "a kill mid-write leaves the temporary file"
    for tmp in leftovers:  # once stale, load removes them
        os.utime(tmp, (time.time() - 3600, time.time() - 3600))
    DirectoryStore(state_dir=state).load(target="prod")
    assert list((state / "hotfixes").glob(".tmp-*")) == []
