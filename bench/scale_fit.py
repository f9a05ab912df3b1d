#!/usr/bin/env python3
"""docs/scale.md's model: fit fixed + per-unit costs from two ``scale_model.py`` points, check every point.

    python3 bench/scale_fit.py --model m1k.json m10k.json m30k.json --scale s1k.json s10k.json s30k.json

The coefficients come from the first two ``--model`` points (1k and 10k: two points, one line per stage); the
prediction is then checked against every point, in process (the stage split) and as a whole process (the CPU and
peak RSS ``bench_scale.py`` measured, ``--scale``, matched by object count). Units per stage: every object (N),
the objects settled by their managers (S), the others (U), the dry-runs (D). Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

# stage -> the unit it is paid per
UNITS = {
    "git_side": "N",
    "snapshot": "N",
    "settle_context": "N",
    "prepare_settled": "S",
    "prepare_other": "U",
    "needs_dry_run": "N",
    "dry_run_requests": "D",
    "compute_drift": "N",
    "rest of the cycle": "N",
}
MEMORY = ("Git side", "live side (lists)", "compare and report")


def units(m: dict[str, Any]) -> dict[str, float]:
    c = m["counts"]
    return {"N": m["live"], "S": c.get("prepare_settled", 0), "U": c.get("prepare_other", 0), "D": c.get("dry_runs", 0)}


def stages(m: dict[str, Any]) -> dict[str, float]:
    s = {k: v for k, v in m["stages_cpu"].items() if k in UNITS}
    s["rest of the cycle"] = m["cycle_cpu"] - sum(s.values())
    return s


def memory(m: dict[str, Any]) -> dict[str, float]:
    after = m["rss_after_mib"]
    base, git, live = m["rss_imported_mib"], after["git_side"], after["snapshot"]
    return {"Git side": git - base, "live side (lists)": live - git, "compare and report": m["peak_rss_mib"] - live}


def line(x0: float, y0: float, x1: float, y1: float) -> tuple[float, float]:
    slope = (y1 - y0) / (x1 - x0) if x1 != x0 else 0.0
    return y0 - slope * x0, slope


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, nargs="+", required=True, help="scale_model.py JSONs, smallest first")
    ap.add_argument("--scale", type=Path, nargs="*", default=[], help="bench_scale.py JSONs")
    args = ap.parse_args()
    ms = [json.loads(p.read_text()) for p in args.model]
    a, b = ms[0], ms[1]
    ua, ub = units(a), units(b)
    sa, sb = stages(a), stages(b)
    coef: dict[str, tuple[float, float]] = {}
    print("| stage | unit | fixed s | per unit ms |\n| --- | --- | --- | --- |")
    for k, unit in UNITS.items():
        coef[k] = line(ua[unit], sa.get(k, 0.0), ub[unit], sb.get(k, 0.0))
        print(f"| {k} | {unit} | {coef[k][0]:.3f} | {coef[k][1] * 1000:.4f} |")
    imports = (a["start_cpu"] + a["imports_cpu"] + b["start_cpu"] + b["imports_cpu"]) / 2
    mem = {k: line(ua["N"], memory(a)[k], ub["N"], memory(b)[k]) for k in MEMORY}
    base = (a["rss_imported_mib"] + b["rss_imported_mib"]) / 2
    print(f"\nstart and imports: {imports:.2f} s CPU, {base:.1f} MiB")
    print("\n| memory | fixed MiB | per object KiB |\n| --- | --- | --- |")
    for k, (fixed, slope) in mem.items():
        print(f"| {k} | {fixed:.1f} | {slope * 1024:.2f} |")
    scale = {}
    for p in args.scale:
        for entry in json.loads(p.read_text()):
            scale[entry["objects"]] = entry
    print("\n| objects | in process: predicted / measured CPU s | whole `diff`: predicted / measured CPU s "
          "| peak RSS: predicted / in process / whole `diff` MiB |")  # fmt: skip
    print("| --- | --- | --- | --- |")
    for m in ms:
        u = units(m)
        predicted = sum(f + s * u[UNITS[k]] for k, (f, s) in coef.items())
        rss = base + sum(f + s * u["N"] for f, s in mem.values())
        whole = scale.get(m["live"], {}).get("writeback diff")
        whole_cpu = f"{sorted(whole['cpu'])[len(whole['cpu']) // 2]:.2f}" if whole else "-"
        whole_rss = f"{whole['peak_rss_mib'][0]:.0f}" if whole else "-"
        print(f"| {m['live']:,} | {predicted:.2f} / {m['cycle_cpu']:.2f} | {predicted + imports:.2f} / {whole_cpu} "
              f"| {rss:.0f} / {m['peak_rss_mib']:.0f} / {whole_rss} |")  # fmt: skip
    print("\n| objects | " + " | ".join(UNITS) + " |\n| --- |" + " --- |" * len(UNITS))
    for m in ms:
        u, st = units(m), stages(m)
        cells = [f"{coef[k][0] + coef[k][1] * u[UNITS[k]]:.2f} / {st.get(k, 0.0):.2f}" for k in UNITS]
        print(f"| {m['live']:,} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
