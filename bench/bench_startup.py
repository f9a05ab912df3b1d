#!/usr/bin/env python3
"""Benchmark: how long writeback takes to start, whole processes, against a bare ``python -c pass`` (issue 19, §6).

Commands, each run as ``python -m writeback.cli ...`` from the tree measured (outside the checkout, whose
directory Python would put first on ``sys.path``), interleaved round by round with the
baseline: ``--version``, ``--help``, and ``diff --live`` of a 1-object dump against a 1-object repository (offline).
For each: the median CPU (user + system) and wall time, and the CPU above the baseline's. Then, from one
``python -X importtime`` run of each command: how many modules it imports, and the slowest of them (cumulative).

``--baseline-rev REV`` measures the same commands from that revision too (``git archive REV writeback`` into a
temporary directory, put first on ``PYTHONPATH``), side by side in the same rounds: before and after.

    python3 bench/bench_startup.py --rounds 15 [--baseline-rev main]

Targets (issue 19): ``--help`` and ``--version`` at most 0.15 s of CPU above ``python -c pass``, and ``diff --live``
of a 1-object dump at most 0.5 s. Not a timed test: tests/cli/test_startup.py checks which modules are imported.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from measuring import ProcessRun, bytecode_env, bytecode_note, run_process, spread  # noqa: E402

DUMP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
  managedFields:
  - {manager: kubectl-edit, operation: Update, apiVersion: v1, time: "2026-11-30T03:00:00Z", fieldsType: FieldsV1,
     fieldsV1: {"f:data": {"f:mode": {}}}}
data:
  mode: fast
"""
MANIFEST = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\ndata:\n  mode: slow\n"


def commands(work: Path) -> dict[str, list[str]]:
    return {
        "--version": ["--version"],
        "--help": ["--help"],
        "diff --live (1 object)": ["diff", "--live", str(work / "live.yaml"), "--repo", str(work / "repo")],
    }


def export(rev: str, into: Path) -> Path:
    """``writeback/`` of ``rev``, extracted under ``into`` (what ``PYTHONPATH`` then imports)."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "writeback"], capture_output=True,
                          check=True).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def env_for(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env.pop("KUBECONFIG", None)
    return env


MARK = "--- modules ---"
LAUNCH = (
    "import atexit, sys\n"
    f"atexit.register(lambda: print({MARK!r}, len(sys.modules), file=sys.stderr))\n"
    "from writeback.cli import entrypoint\n"
    "sys.argv[0] = 'writeback'\n"
    "entrypoint()\n"
)


def module_count(argv: Sequence[str], env: dict[str, str]) -> tuple[int, list[tuple[int, str]]]:
    """How many modules the command has imported when it exits (``sys.modules``), and its ten slowest imports by
    ``python -X importtime`` (cumulative µs; the command's own module, imported by ``importlib.import_module``, is
    not in that list, the imports it makes are)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", LAUNCH, *argv], capture_output=True, text=True,
                          env=bytecode_env(env), cwd=tempfile.gettempdir(), check=False, timeout=300)  # fmt: skip
    count = int(done.stderr.split(MARK, 1)[1].split()[0]) if MARK in done.stderr else -1
    rows = [re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line) for line in done.stderr.splitlines()]
    top = sorted(((int(m.group(2)), m.group(4)) for m in rows if m and m.group(4).startswith("writeback")),
                 reverse=True)[:10]  # fmt: skip
    return count, top


def bare_count() -> int:
    """How many modules a bare Python has imported when it runs ``-c``."""
    done = subprocess.run([sys.executable, "-c", "import sys; print(len(sys.modules))"], capture_output=True,
                          text=True, check=True)  # fmt: skip
    return int(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0], allow_abbrev=False)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--baseline-rev", metavar="REV", help="also measure this revision's writeback (before)")
    args = parser.parse_args()
    print(bytecode_note())
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        work = Path(tmp)
        (work / "live.yaml").write_text(DUMP)
        (work / "repo").mkdir()
        (work / "repo" / "settings.yaml").write_text(MANIFEST)
        trees = {"this tree": ROOT}
        if args.baseline_rev:
            trees[args.baseline_rev] = export(args.baseline_rev, work / "baseline")
        runs: dict[str, list[ProcessRun]] = {"python -c pass": []}
        cmds: dict[str, tuple[list[str], dict[str, str]]] = {"python -c pass": ([sys.executable, "-c", "pass"],
                                                                                  env_for(ROOT))}  # fmt: skip
        for label, tree in trees.items():
            for name, argv in commands(work).items():
                key = f"{name} [{label}]"
                cmds[key] = ([sys.executable, "-m", "writeback.cli", *argv], env_for(tree))
                runs[key] = []
        for key, (cmd, env) in cmds.items():  # unmeasured first runs: fill the bytecode cache
            first = run_process(cmd, env=env, cwd=str(work))
            if first.returncode != 0:
                raise SystemExit(f"{key} exited {first.returncode}:\n{first.stderr[-2000:]}")
        for _ in range(args.rounds):
            for key, (cmd, env) in cmds.items():
                runs[key].append(run_process(cmd, env=env, cwd=str(work)))
        base_cpu = spread([r.cpu for r in runs["python -c pass"]])[0]
        print(f"\n{'command':<42} {'CPU s':>7} {'above base':>11} {'wall s':>7} {'peak MiB':>9} {'modules':>8}")
        for key, (cmd, env) in cmds.items():
            cpu = spread([r.cpu for r in runs[key]])[0]
            wall = spread([r.wall for r in runs[key]])[0]
            rss = spread([r.peak_rss / 2**20 for r in runs[key]])[0]
            count = module_count(cmd[3:], env)[0] if cmd[1:3] == ["-m", "writeback.cli"] else bare_count()
            print(f"{key:<42} {cpu:>7.3f} {cpu - base_cpu:>+11.3f} {wall:>7.3f} {rss:>9.1f} {count:>8}")
        for label, tree in trees.items():
            argv = commands(work)["diff --live (1 object)"]
            _, top = module_count(argv, env_for(tree))
            print(f"\nslowest writeback imports of diff --live [{label}] (cumulative ms, nested ones included):")
            for us, name in top:
                print(f"  {us / 1000:>7.1f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
