#!/usr/bin/env python3
"""Benchmark: writeback's YAML patcher against `yq -i` and a ruamel.yaml round trip, as whole processes.

Every file of tests/data/yaml-corpus gets one scalar edit (its first single-line string gets ``-x`` appended):

- writeback: ``apply_edits`` (splice, then verification), one Python process for all the files;
- ruamel: round-trip load, set, dump (what most Python tools do; it reformats), one Python process;
- yq: ``yq -i`` (mikefarah/yq v4, built by bench/yq/build from the Go module proxy), one process per file,
  run from one shell script.

Each round copies the corpus into a fresh directory per tool, then runs the three one after the other (the
order rotates every round) and takes wall and CPU time (of the process and its children). It then counts, per
tool, the files whose bytes changed outside the edited value, and the files whose edited value does not read
back as intended.

    python3 bench/bench_patch.py --rounds 5            # builds yq on first use (needs Go once)
    python3 bench/bench_patch.py --rounds 5 --no-yq    # writeback and ruamel only
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `tests.support`

from tests.support.testdata import YAML_CORPUS  # noqa: E402
from writeback.kube.pathtypes import Index, Key  # noqa: E402
from writeback.yaml.edit import iter_scalars, load_documents  # noqa: E402

HERE = Path(__file__).resolve().parent
CORPUS = YAML_CORPUS
WORKER = HERE / "patch_worker.py"


def _case(name: str, text: str) -> dict[str, Any] | None:
    """The edit of one file: the first single-line string scalar, with its character span."""
    try:
        infos = list(iter_scalars(text, source=name))
    except Exception:  # a file the editor cannot read has no case
        return None
    starts = [0, *(i + 1 for i, ch in enumerate(text) if ch == "\n")]
    for s in infos:
        plain_path = bool(s.path) and all(isinstance(seg, Key | Index) for seg in s.path)
        if isinstance(s.value, str) and s.value and "\n" not in s.value and s.editable and plain_path:
            return {
                "file": name,
                "document": s.document,
                "path": [seg.name if isinstance(seg, Key) else seg.index for seg in s.path],  # type: ignore[union-attr]
                "value": s.value + "-x",
                "span": [starts[s.line] + s.column, starts[s.end_line] + s.end_column],
            }
    return None


def _yq_expression(case: dict[str, Any]) -> str:
    path = "".join(f"[{json.dumps(seg)}]" if isinstance(seg, str) else f"[{seg}]" for seg in case["path"])
    return f"(select(documentIndex == {case['document']}) | .{path}) = {json.dumps(case['value'])}"


def _yq_script(yq: str, cases: list[dict[str, Any]]) -> str:
    def q(text: str) -> str:
        return "'" + text.replace("'", "'\"'\"'") + "'"

    return "".join(f"{q(yq)} -i {q(_yq_expression(c))} {q(c['file'])} || echo {q(c['file'])} >&2\n" for c in cases)


def _run(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one whole process (with its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _outcome(case: dict[str, Any], before: str, after: str) -> tuple[bool, bool]:
    """(bytes changed outside the edited value, the value reads back as intended)."""
    start, end = case["span"]
    head, tail = before[:start], before[end:]
    outside = not (after.startswith(head) and after.endswith(tail) and len(after) >= len(head) + len(tail))
    try:
        data: Any = load_documents(after, source=case["file"])[case["document"]].data
        for seg in case["path"]:
            data = data[seg]
        ok = data == case["value"]
    except Exception:
        ok = False
    return outside, ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-yq", action="store_true", help="leave yq out (no Go needed)")
    args = ap.parse_args()
    files = {
        str(p.relative_to(CORPUS)): p.read_bytes().decode("utf-8") for p in sorted(CORPUS.rglob("*")) if p.is_file()
    }
    cases = [c for name, text in files.items() if (c := _case(name, text)) is not None]
    tools: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-patch-") as tmp:
        root = Path(tmp)
        (root / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
        tools["ruamel"] = [sys.executable, str(WORKER), "ruamel", str(root / "cases.json"), "."]
        tools["writeback"] = [sys.executable, str(WORKER), "writeback", str(root / "cases.json"), "."]
        if not args.no_yq:
            yq = subprocess.run([str(HERE / "yq" / "build")], check=True, capture_output=True, text=True).stdout
            (root / "yq.sh").write_text(_yq_script(yq.strip(), cases), encoding="utf-8")
            tools["yq"] = ["sh", str(root / "yq.sh")]
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in tools}
        results: dict[str, tuple[int, int]] = {}
        names = list(tools)
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                work = root / f"{name}-{r}"
                work.mkdir()
                for c in cases:
                    (work / c["file"]).parent.mkdir(parents=True, exist_ok=True)
                    (work / c["file"]).write_bytes(files[c["file"]].encode("utf-8"))
                times[name].append(_run(tools[name], work))
                if name not in results:
                    outcomes = [
                        _outcome(c, files[c["file"]], (work / c["file"]).read_bytes().decode("utf-8")) for c in cases
                    ]
                    results[name] = (sum(o for o, _ in outcomes), sum(not ok for _, ok in outcomes))
                shutil.rmtree(work)
    base = statistics.median(w for w, _ in times["ruamel"])
    base_cpu = statistics.median(c for _, c in times["ruamel"])
    print(f"files: {len(cases)} of {len(files)} (one scalar edit each), rounds: {args.rounds}, interleaved")
    head = f"{'tool':10} {'wall s':>8} {'min-max':>13} {'ratio':>6} {'cpu s':>7} {'ratio':>6}"
    print(f"{head} {'outside':>8} {'wrong':>6}")
    for name, vals in times.items():
        walls, cpus = [w for w, _ in vals], [c for _, c in vals]
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        outside, wrong = results[name]
        print(
            f"{name:10} {wall:8.2f} {min(walls):6.2f}-{max(walls):<6.2f} {wall / base:6.2f} {cpu:7.2f} "
            f"{cpu / base_cpu:6.2f} {outside:8} {wrong:6}"
        )
    print("outside: files with bytes changed outside the edited value; wrong: the value does not read back")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
