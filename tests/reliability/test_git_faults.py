"""Git faults on one target (beta), with the real `writeback run --once` process and real bare remotes.

Held from outside: a pre-receive hook holds the bot's push (a person pushes meanwhile), a fake-forge handler
holds the cycle (the remote is moved away, the disk fills), a small tmpfs is the target's clone directory.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.world import PushGate, World, manifest
from tests.support.gitrepos import git


def person_push(world: World, name: str, branch: str, text: str) -> str:
    """Alice commits ``text`` as apps/<name>.yaml on ``branch`` of the remote and pushes."""
    clone = world.root / f"{name}-person"
    if not clone.exists():
        git("clone", "-q", str(world.bares[name]), str(clone))
    git("fetch", "-q", "origin", cwd=clone)
    git("checkout", "-q", "-B", branch, f"origin/{branch}", cwd=clone)
    (clone / "apps" / f"{name}.yaml").write_text(text)
    git("-c", "user.email=alice@example.com", "-c", "user.name=Alice", "commit", "-qam", "person edit", cwd=clone)
    git("push", "-q", "origin", f"HEAD:refs/heads/{branch}", cwd=clone)
    return git("rev-parse", "HEAD", cwd=clone)


def test_the_base_moves_between_fetch_and_push_the_pr_is_rebased(world: World) -> None:
    gate = PushGate(world.bares["beta"])
    gate.arm()
    proc = world.start()
    gate.wait()  # beta fetched main and is pushing its branch: a person changes the same file on main
    commented = "# owned by the shop team\n" + manifest("beta")  # a change that is no drift
    new_main = person_push(world, "beta", "main", commented)
    gate.release()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    gate.disarm()
    again = world.run()
    assert again.outcomes("beta") == ["updated"], again  # regenerated on the moved base
    assert "moved base" in again.of("beta")[0]["detail"]
    world.assert_converged()
    [pr] = world.fakes["beta"].prs.values()
    head = f"refs/heads/{pr['head']}"
    assert git("--git-dir", str(world.bares["beta"]), "rev-parse", f"{head}~1") == new_main
    assert "# owned by the shop team" in world.show("beta", head, "apps/beta.yaml")  # the person's change is kept
    assert any("regenerated it on top of `main`" in c["body"] for c in world.fakes["beta"].comments[pr["number"]])
    third = world.run()
    assert third.outcomes("beta") == ["unchanged"] and third.outcomes("alpha") == ["unchanged"], third


def test_a_person_pushes_to_the_bot_branch_between_fetch_and_push(world: World) -> None:
    first = world.run()
    assert first.outcomes("beta") == ["created"], first
    [pr] = world.fakes["beta"].prs.values()
    world.live["beta"] = "v3"  # the drift changes: the next cycle regenerates the branch
    gate = PushGate(world.bares["beta"])
    gate.arm()
    proc = world.start()
    gate.wait()
    theirs = person_push(world, "beta", pr["head"], manifest("beta", "v3-by-alice"))
    gate.release()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    assert world.bot_branches("beta") == {pr["head"]: theirs}, "the person's commit is never overwritten"
    gate.disarm()
    again = world.run()
    [result] = again.of("beta")
    assert result["outcome"] == "skipped" and result["reason"] == "person-committed", result
    assert world.bot_branches("beta") == {pr["head"]: theirs}
    assert len(world.fakes["beta"].prs) == 1 and pr["state"] == "open"
    world.assert_converged("alpha")


def test_the_remote_is_unreachable_at_clone_time(world: World) -> None:
    away = world.bares["beta"].with_name("beta.git.away")
    world.bares["beta"].rename(away)
    world.bares["beta"].mkdir()  # the path is there but serves no repository (a path that is not there is bad input)
    done = world.run()
    [result] = done.of("beta")
    assert result["outcome"] == "failed" and "cannot clone" in result["detail"], result
    assert done.code == 3 and done.outcomes("alpha") == ["created"]
    world.bares["beta"].rmdir()
    away.rename(world.bares["beta"])
    again = world.run()
    assert again.outcomes("beta") == ["created"], again
    world.assert_converged()


def test_the_remote_is_unreachable_at_push_time(world: World) -> None:
    hold = world.fakes["beta"].hold(method="GET", path_contains="/pulls")
    proc = world.start()
    hold.wait()  # cloned and planned; the remote goes away before the push
    away = world.bares["beta"].with_name("beta.git.away")
    world.bares["beta"].rename(away)
    world.fakes["beta"].holds.clear()
    hold.release()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err[-2000:]
    away.rename(world.bares["beta"])
    assert world.bot_branches("beta") == {} and world.fakes["beta"].prs == {}
    assert "beta" in out and "failed" in out and "git" in out, out
    again = world.run()
    assert again.outcomes("beta") == ["created"], again
    world.assert_converged()


@pytest.fixture
def small_disk(world: World) -> Iterator[Path]:
    """beta's clone directory on its own tmpfs, 16 KiB: too small for the clone (``resize`` it)."""
    mount = world.workdir / "beta"
    mount.mkdir(parents=True)
    argv = ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs for the full-disk case (needs root): {done.stderr.strip()}", pytrace=False)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def resize(mount: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(mount)], check=True, capture_output=True)


def fill(mount: Path) -> None:
    """Fill the tmpfs to the last byte with a file outside the clone's .git."""
    done = subprocess.run(["dd", "if=/dev/zero", f"of={mount}/.filler", "bs=4k"], capture_output=True, check=False)
    assert b"No space left" in done.stderr, done.stderr


FULL = ("No space left on device", "Out of diskspace", "out of disk space")  # the kernel's and git's words


def test_the_disk_is_full_at_clone_time(world: World, small_disk: Path) -> None:
    done = world.run()
    [result] = done.of("beta")
    assert result["outcome"] == "failed" and any(w in result["detail"] for w in FULL), result
    assert done.outcomes("alpha") == ["created"]
    resize(small_disk, "4m")
    again = world.run()  # the half-made clone is no obstacle
    assert again.outcomes("beta") == ["created"], again.stderr[-2000:]
    world.assert_converged()


def test_the_disk_fills_during_the_cycle(world: World, small_disk: Path) -> None:
    resize(small_disk, "4m")
    hold = world.fakes["beta"].hold(method="GET", path_contains="/pulls")
    proc = world.start()
    hold.wait()  # cloned and planned: the disk fills before the commit
    fill(small_disk)
    world.fakes["beta"].holds.clear()
    hold.release()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err[-2000:]
    assert any(w in out for w in FULL), out
    assert world.bot_branches("beta") == {}
    (small_disk / ".filler").unlink()
    again = world.run()  # the clone the full disk may have damaged is usable again, or cloned afresh
    assert again.outcomes("beta") == ["created"], again.stderr[-2000:]
    world.assert_converged()
