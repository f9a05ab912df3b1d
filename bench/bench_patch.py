#!/usr/bin/env python3
"""Benchmark: writeback's splice editor against a ruamel.yaml round-trip (load + dump), on the YAML corpus.

The baseline is what most tools do (and what writeback refuses to do, since it reformats files): load the file in
round-trip mode, change a value, dump it. Both edit the same first plain scalar of every document, interleaved.

    python3 bench/bench_patch.py --rounds 5
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

from measuring import interleaved, print_table
from ruamel.yaml import YAML

from writeback.yamledit import Edit, apply_edits, iter_scalars

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "yaml-corpus" / "files"


def first_string(text: str, source: str) -> Edit | None:
    for s in iter_scalars(text, source=source):
        if isinstance(s.value, str) and s.value and "\n" not in s.value:
            return Edit(document=s.document, path=s.path, value=s.value + "-x")
    return None


def load_cases() -> list[tuple[str, str, Edit]]:
    cases = []
    for p in sorted(CORPUS.rglob("*")):
        if not p.is_file():
            continue
        text = p.read_text(encoding="utf-8")
        try:
            edit = first_string(text, p.name)
        except Exception:
            continue
        if edit is not None:
            cases.append((p.name, text, edit))
    return cases


def roundtrip(text: str, edit: Edit) -> str:
    yaml = YAML()
    docs = list(yaml.load_all(text))
    node: Any = docs[edit.document]
    for seg in edit.path[:-1]:
        node = node[getattr(seg, "name", getattr(seg, "index", None))]
    last = edit.path[-1]
    node[getattr(last, "name", getattr(last, "index", None))] = edit.value
    out = io.StringIO()
    yaml.dump_all(docs, out)
    return out.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    cases = [c for c in load_cases() if all(hasattr(s, "name") or hasattr(s, "index") for s in c[2].path)]
    ok = []
    for name, text, edit in cases:
        try:
            roundtrip(text, edit)
            apply_edits(text, [edit], source=name)
        except Exception:
            continue
        ok.append((name, text, edit))

    def ours() -> None:
        for name, text, edit in ok:
            apply_edits(text, [edit], source=name)

    def base() -> None:
        for _, text, edit in ok:
            roundtrip(text, edit)

    rows = interleaved({"ruamel round-trip": base, "writeback splice": ours}, rounds=args.rounds)
    print(f"files: {len(ok)} (one edit each), rounds: {args.rounds}, interleaved")
    print_table(rows, baseline="ruamel round-trip", width=20)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
