#!/usr/bin/env python3
"""Benchmark: the offline defaults lookup per leaf, generated data against the hand-written table it replaced.

Every leaf of the README demo's live dump (examples/hotfix/live.yaml), repeated to ``--objects`` objects, is
looked up with ``is_default`` of the current code and of the table at ``--baseline`` (default 7519c03, the last
hand-written one, read with ``git show``); both run interleaved, round by round.

    python3 bench/bench_defaults.py --objects 10000 --rounds 5
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from measuring import interleaved, print_table  # noqa: E402

from writeback.adapters.dumps import read_live  # noqa: E402
from writeback.drift.evidence import defaults  # noqa: E402
from writeback.kube.pathtypes import Index, Key, Segment  # noqa: E402

Leaf = tuple[str, tuple[Segment, ...], Any, Any]


def _leaves(kind: str, node: Any, path: tuple[Segment, ...], parent: Any) -> Iterator[Leaf]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(kind, v, (*path, Key(k)), node)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(kind, v, (*path, Index(i)), node)
    else:
        yield kind, path, node, parent


def _baseline(rev: str, tmp: Path) -> Callable[..., bool]:
    for path in ("writeback/drift/evidence/defaults.py", "writeback/core/defaults.py"):  # after / before the moves
        shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True)
        if shown.returncode == 0:
            break
    shown.check_returncode()
    text = shown.stdout
    (tmp / "defaults_baseline.py").write_text(text)
    spec = importlib.util.spec_from_file_location("defaults_baseline", tmp / "defaults_baseline.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["defaults_baseline"] = module
    spec.loader.exec_module(module)
    fn: Callable[..., bool] = module.is_default
    return fn


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", default="7519c03")
    args = parser.parse_args()
    objs = read_live(path=ROOT / "examples" / "hotfix" / "live.yaml").objects
    one = [leaf for o in objs for leaf in _leaves(o.ref.kind, dict(o.body), (), None)]
    leaves = one * max(1, args.objects // len(objs))
    with tempfile.TemporaryDirectory() as tmp:
        old = _baseline(args.baseline, Path(tmp))
        new = defaults.is_default
        new(kind="Deployment", path=(Key("spec"), Key("replicas")), value=1, parent={})  # load the data once

        def run(fn: Callable[..., bool]) -> Callable[[], int]:
            return lambda: sum(fn(kind=k, path=p, value=v, parent=par) for k, p, v, par in leaves)

        print(f"{len(leaves)} leaves of {len(leaves) // len(one) * len(objs)} objects")
        rows = interleaved({"hand-written table": run(old), "generated data": run(new)}, rounds=args.rounds)
    print_table(rows, baseline="hand-written table", width=20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
