"""A one-shot command's process ends without tearing down its data (``cli.exits.skip_teardown``): its exit handlers
run, its output and exit code are whole, its logs flushed; ``--version`` and the other commands exit as usual."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.cli.process import DEMO, ROOT, environment, writeback

MARK = "--- torn down ---"
EXITING = "--- exit handlers ---"
LAUNCH = (
    "import atexit, sys\n"
    f"atexit.register(lambda: print({EXITING!r}, file=sys.stderr))\n"
    "class Kept:\n"
    f"    def __del__(self): print({MARK!r}, file=sys.stderr)\n"
    "kept = Kept()\n"
    "from writeback.cli import entrypoint\n"
    "sys.argv[0] = 'writeback'\n"
    "entrypoint()\n"
)


def _launched(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", LAUNCH, *args], cwd=ROOT, env=environment(), capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_diff_and_plan_end_without_teardown_and_say_everything() -> None:
    for command in ("diff", "plan"):
        proc = _launched(command, *DEMO, "--output", "json", "--debug")
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert MARK not in proc.stderr  # no teardown: nothing was freed one by one ...
        assert EXITING in proc.stderr  # ... but the exit handlers ran
        assert json.loads(proc.stdout)  # the whole document, flushed
        assert "debug: writeback.cli: writeback" in proc.stderr  # the log records, flushed
    # the exit code goes through: --exit-code with drift found
    proc = _launched("diff", *DEMO, "--exit-code")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert MARK not in proc.stderr and "writeback" in proc.stdout


def test_other_commands_and_a_piped_console_script_exit_as_usual() -> None:
    proc = _launched("--version")
    assert proc.returncode == 0 and EXITING in proc.stderr and MARK in proc.stderr
    proc = writeback("diff", *DEMO, "--output", "json")  # the installed console script, through pipes
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["kind"]
