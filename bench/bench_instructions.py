#!/usr/bin/env python3
"""Instructions, not seconds: `writeback diff` and `writeback plan` against the lean floor under callgrind.

bench_scale.py times whole processes; on a shared machine a single process's CPU time varies by up to 30% between
identical runs, so ratios a few percent apart cannot be told by timing alone. This counts the user-space
instructions of the same command lines (``valgrind --tool=callgrind``; about 60x slower than a plain run), which
repeat to within about 0.6% (string hashing is randomized per process; ``--hash-seed`` fixes it). The kernel's
share (system calls, page faults) and what memory costs beyond instructions (cache misses) are not counted: read
these figures beside bench_scale.py's, not instead of them.

On a world loaded by load_world.py (the control plane of ``--kubeconfig`` running):

    python3 bench/bench_instructions.py --kubeconfig K --world D --prefix P --world-kind appliers \\
        --objects 10000 [--commands diff plan] [--src TREE] [--compare TREE] [--json OUT]

Each command runs once unmeasured first (its bytecode cached, as bench_scale.py does). A writeback run must exit
0 and print its JSON document; the floor must list every object. Needs valgrind on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import floor_cmd, writeback_cmd  # noqa: E402
from measuring import bytecode_env  # noqa: E402
from worlds import WORLD_KINDS, make_world  # noqa: E402

_COLLECTED = re.compile(r"Collected : (\d+)")


def instructions(cmd: Sequence[str], *, env: dict[str, str]) -> tuple[int, str]:
    """The instructions ``cmd`` executes (its own process; children are not followed), and what it printed."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited {done.returncode}:\n{done.stderr[-3000:]}")
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in callgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1)), done.stdout


def _checked(name: str, stdout: str, *, objects: int) -> None:
    """The run did its work: writeback printed a whole JSON document; the floor listed every object."""
    doc = json.loads(stdout)
    if name == "floor" and doc["listed"] != objects:
        raise RuntimeError(f"the floor listed {doc['listed']} objects, expected {objects}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", required=True, help="the control plane with the world loaded")
    ap.add_argument("--world", type=Path, required=True, help="the loaded world's directory (its repo in DIR/repo)")
    ap.add_argument("--prefix", default="scale", help="the loaded world's namespace prefix")
    ap.add_argument("--world-kind", choices=WORLD_KINDS, default="basic")
    ap.add_argument("--objects", type=int, required=True)
    ap.add_argument("--commands", nargs="+", choices=("diff", "plan"), default=["diff", "plan"])
    ap.add_argument("--src", type=Path, help="the writeback source tree to measure (default: the installed one)")
    ap.add_argument("--compare", type=Path, help="another writeback source tree, measured too")
    ap.add_argument("--hash-seed", help="PYTHONHASHSEED for every run (default: random, as in use)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        ap.error("valgrind is not on PATH (Debian: apt-get install valgrind)")
    world = make_world(args.world_kind, args.objects, namespace_prefix=args.prefix)
    repo = args.world / "repo"
    seed = {} if args.hash_seed is None else {"PYTHONHASHSEED": args.hash_seed}
    trees = {"writeback": args.src, **({"writeback (compare)": args.compare} if args.compare else {})}
    out: dict[str, dict[str, int]] = {}
    for command in args.commands:
        roundtrip = sorted(world.expected_edited_files()) if command == "plan" else []
        runs = {"floor": (floor_cmd(kubeconfig=args.kubeconfig, world=world, repo=repo, roundtrip=roundtrip),
                          bytecode_env() | seed)}  # fmt: skip
        for name, tree in trees.items():
            cmd, env = writeback_cmd(command, kubeconfig=args.kubeconfig, repo=repo, src=tree)
            runs[name] = (cmd, bytecode_env(env) | seed)
        for cmd, env in runs.values():  # unmeasured: fills the bytecode cache
            subprocess.run(cmd, env=env, capture_output=True, check=False)
        out[command] = {}
        for name, (cmd, env) in runs.items():
            count, stdout = instructions(cmd, env=env)
            _checked(name, stdout, objects=world.objects)
            out[command][name] = count
            print(f"{command}: {name}: {count / 1e9:.3f} G instructions", file=sys.stderr, flush=True)
    print(f"{args.objects} objects ({args.world_kind} world), instructions (callgrind, user space)")
    for command, counts in out.items():
        floor = counts["floor"]
        for name, n in counts.items():
            print(f"  {command:5s} {name:22s} {n / 1e9:8.3f} G  {n / floor:6.3f}x")
    if args.json:
        args.json.write_text(json.dumps({"objects": args.objects, "world_kind": args.world_kind,
                                         "instructions": out}, indent=2) + "\n")  # fmt: skip
    print(f"machine: {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
