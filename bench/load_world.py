#!/usr/bin/env python3
"""Load one scale world into a running control plane and write its repo, for the benchmarks' ``--kubeconfig``
mode (bench_scale.py and bench_warm.py then measure the same loaded world, one after the other).

    tests/controlplane/up DIR/cp              # a control plane that outlives this process (prints its kubeconfig)
    python3 bench/load_world.py --kubeconfig DIR/cp/kubeconfig --world-kind appliers --objects 10000 \\
        --prefix apps --dir DIR               # the repo goes to DIR/repo
    python3 bench/bench_scale.py --kubeconfig DIR/cp/kubeconfig --world DIR --world-kind appliers --prefix apps \\
        --objects 10000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # `tests.controlplane`
sys.path.insert(0, str(HERE))

from worlds import WORLD_KINDS, make_world  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--world-kind", choices=WORLD_KINDS, default="basic")
    ap.add_argument("--objects", type=int, required=True)
    ap.add_argument("--prefix", default="scale", help="namespace prefix")
    ap.add_argument("--dir", type=Path, required=True, help="the world's directory: DIR/repo gets the Git repo")
    args = ap.parse_args()
    from tests.controlplane import cp

    state = json.loads((Path(args.kubeconfig).parent / cp.STATE_FILE).read_text())
    world = make_world(args.world_kind, args.objects, namespace_prefix=args.prefix)
    if (args.dir / "repo").exists():
        ap.error(f"{args.dir / 'repo'} exists already")
    args.dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    world.write_repo(args.dir / "repo")
    world.load(kubeconfig=args.kubeconfig, kubectl=Path(state["bin_dir"]) / "kubectl", workdir=args.dir)
    print(f"{world.objects} objects ({args.world_kind}, namespaces {args.prefix}-*) loaded in "
          f"{time.perf_counter() - t0:.0f} s: {len(world.changed)} changed by people, {len(world.scaled)} scaled; "
          f"repo {args.dir / 'repo'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
