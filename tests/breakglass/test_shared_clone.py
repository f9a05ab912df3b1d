"""Issue 22 §5: `break-glass end --config` on the service's own host shares ``state_dir/repos/<target>`` with the
running service; both hold the clone's lock (``adapters.git.locking``), so they never use it at once.

Both run for real, at once: the `writeback run --config` service (a cycle every second) and `break-glass end
--config --backport` in another process, with the same state_dir. Every git they run goes through a wrapper that
logs when it started and ended in which clone and for which process: no two processes ever overlap in the clone.
A process that finds the clone held waits, and past its timeout fails with a message naming the holder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.breakglass.support import TOKEN_ENV, start_incident, target
from tests.fakes.github_fake import TOKEN, GitHubFake
from tests.support.breakglass_record import record
from tests.support.controllers import AUTOMATED
from tests.support.kube import get
from tests.support.polling import wait_until
from tests.support.services import free_port, metric, start_writeback, stop_writeback
from writeback.adapters.git.locking import clone_lock, lock_path

APPS = "applications.argoproj.io"
WRAPPER = """\
#!/bin/sh
if [ "$1" = "-C" ]; then where="$2"; else where="$(pwd)"; fi
printf 'S %s %s %s\\n' "$PPID" "$where" "$(date +%s.%N)" >> {log}
{git} "$@"
rc=$?
printf 'E %s %s %s\\n' "$PPID" "$where" "$(date +%s.%N)" >> {log}
exit $rc
"""


def git_wrapper(tmp_path: Path) -> tuple[Path, Path]:
    """A ``git`` first on PATH that logs each run (start, end, process, clone); its folder and its log."""
    real = shutil.which("git")
    assert real is not None
    folder, log = tmp_path / "bin", tmp_path / "git.log"
    folder.mkdir()
    (folder / "git").write_text(WRAPPER.format(log=log, git=real))
    (folder / "git").chmod(0o755)
    return folder, log


def runs_in(log: Path, clone: Path) -> list[tuple[float, float, str]]:
    """(start, end, process) of every git run in ``clone``, from the wrapper's log."""
    started: dict[tuple[str, str], list[float]] = {}
    out = []
    for line in log.read_text().splitlines():
        mark, pid, where, at = line.split(" ")
        if Path(where).resolve() != clone.resolve():
            continue
        if mark == "S":
            started.setdefault((pid, where), []).append(float(at))
        else:
            out.append((started[(pid, where)].pop(), float(at), pid))
    return sorted(out)


def test_end_and_the_service_on_one_host_take_turns_with_the_clone(
    controlplane: Any, crds: list[str], namespace: str, tmp_path: Path
) -> None:
    bare = start_incident(controlplane, namespace, tmp_path)  # break-glass for 2 hours, a person's fix live
    fake = GitHubFake(bare=bare).start()
    folder, git_log = git_wrapper(tmp_path)
    state = tmp_path / "state"
    shop = target("shop", bare=bare, namespace=namespace, app="web", forge_url=fake.url)
    shop |= {
        "cluster": "test",
        "selectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "namespaces": [namespace]}],
        "schedule": {"interval_seconds": 1, "jitter_seconds": 0, "retry_initial_seconds": 1, "retry_max_seconds": 2},
    }
    port = free_port()
    config = {
        "clusters": [{"name": "test", "kubeconfig": controlplane.kubeconfig, "context": "writeback-test"}],
        "targets": [shop],
        "metrics": {"address": f"127.0.0.1:{port}"},
        "state_dir": str(state),
        "shutdown_grace_seconds": 20,
    }
    env = {TOKEN_ENV: TOKEN, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    proc, log = start_writeback(config, workdir=tmp_path, env=env)
    try:
        scrape = lambda: metric(_scrape(port), "writeback_cycles_total", target="shop", result="ok")  # noqa: E731
        wait_until("two cycles of the service", lambda: scrape() >= 2, timeout=90, process=proc, stderr=log)
        # the person ends the incident on the service's host, with the service's own config: a backport cycle
        end = subprocess.run(
            [sys.executable, "-m", "writeback.cli", "break-glass", "end", "--argocd-app", f"{namespace}/web",
             "--config", str(tmp_path / "writeback.yaml"), "--kubeconfig", controlplane.kubeconfig,
             "--resume-after", "opened"],
            env={**os.environ, **env}, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert end.returncode == 0, end.stdout + end.stderr
        done = scrape()
        wait_until("two more cycles after end", lambda: scrape() >= done + 2, timeout=60, process=proc, stderr=log)
    finally:
        code = stop_writeback(proc, timeout=40)
        fake.stop()
    output = log.read_text()
    assert code == 0, output[-4000:]
    assert "unusable" not in output and "index.lock" not in output
    app = get(controlplane, APPS, namespace, "web")
    assert record(app) is None and app["spec"]["syncPolicy"]["automated"] == AUTOMATED
    assert len(fake.prs) == 1 and fake.violations == []

    runs = runs_in(git_log, state / "repos" / "shop")
    assert len({pid for *_, pid in runs}) >= 2, runs  # both processes used the clone
    for i, (start, finish, pid) in enumerate(runs):
        for other_start, other_finish, other in runs[i + 1 :]:
            assert pid == other or other_start >= finish or start >= other_finish, (
                f"git of process {pid} ({start:.3f}-{finish:.3f}) and of {other} "
                f"({other_start:.3f}-{other_finish:.3f}) in the same clone at once"
            )
    assert lock_path(state / "repos" / "shop").is_file()


def _scrape(port: int) -> str:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            return str(resp.read().decode())
    except OSError:
        return ""


HOLD = textwrap.dedent("""\
    import sys, time
    from pathlib import Path
    from writeback.adapters.git.locking import clone_lock
    from writeback.errors import GitError
    try:
        with clone_lock(Path(sys.argv[1]), timeout=float(sys.argv[2])):
            print("got it", time.time(), flush=True)
    except GitError as e:
        print("refused:", e, flush=True)
        sys.exit(3)
""")


def test_a_held_clone_makes_another_process_wait_then_fail_naming_the_holder(tmp_path: Path) -> None:
    clone = tmp_path / "repos" / "shop"
    with clone_lock(clone):
        with clone_lock(clone):  # the same thread may take it again
            pass
        refused = subprocess.run([sys.executable, "-c", HOLD, str(clone), "0.5"], capture_output=True, text=True,
                                 timeout=60, check=False)  # fmt: skip
        assert refused.returncode == 3, refused.stdout + refused.stderr
        assert f"is in use by another writeback process (pid {os.getpid()})" in refused.stdout
        waiting = subprocess.Popen([sys.executable, "-c", HOLD, str(clone), "60"], stdout=subprocess.PIPE, text=True)
        try:
            with pytest.raises(subprocess.TimeoutExpired):
                waiting.wait(timeout=1.5)  # still waiting while this process holds the clone
        except BaseException:
            waiting.kill()
            raise
    out, _ = waiting.communicate(timeout=30)  # let go: it gets it
    assert waiting.returncode == 0 and out.startswith("got it"), out
