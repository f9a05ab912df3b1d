"""Two bot processes without leader election on the same targets: never two PRs.

Both are held in the pre-receive hook of beta's remote at once, so both have checked that no PR and no branch
exists and both push a branch they believe is new: the check-then-act window, made certain. The deterministic
branch name and the push that fails when the branch already exists close it: one creates, the other sees it.
"""

from __future__ import annotations

import json

from tests.reliability.world import PushGate, World


def test_two_processes_racing_on_one_target_open_one_pr(world: World) -> None:
    gate = PushGate(world.bares["beta"])
    gate.arm()
    first = world.start("--target", "beta", workdir=world.root / "replica-1")
    second = world.start("--target", "beta", workdir=world.root / "replica-2")
    try:
        gate.wait(count=2)  # both checked (no PR, no branch) and both are pushing
        gate.release()
        outs = [p.communicate(timeout=120) for p in (first, second)]
    finally:
        for p in (first, second):
            if p.poll() is None:
                p.kill()
    codes = [first.returncode, second.returncode]
    assert codes == [0, 0], (codes, outs[0][1][-2000:], outs[1][1][-2000:])
    world.assert_converged("beta")
    outcomes = sorted(r["outcome"] for out, _ in outs for r in json.loads(out)["results"])
    assert outcomes == ["created", "skipped"], outcomes
    [lost] = [r for out, _ in outs for r in json.loads(out)["results"] if r["outcome"] == "skipped"]
    assert lost["reason"] == "concurrent-writer" and "another writer" in lost["detail"], lost
