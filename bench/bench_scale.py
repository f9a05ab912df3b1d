#!/usr/bin/env python3
"""Scale benchmark: `writeback diff` and `writeback plan` at N objects against the floor, whole processes.

For each N: a fresh real control plane (tests/controlplane) gets N objects of one world (``--world-kind``,
worlds.py: ``basic``, Deployments, ConfigMaps and Services applied server-side as argocd-controller, see
scale_cluster.py; or ``appliers``, six kinds per app applied as Argo CD or Flux, see scale_appliers.py; in both 1%
then changed by kubectl, 5% scaled through the scale subresource) and the matching Git repo. Then, round by
round, interleaved: the floor for diff, `writeback diff`, the floor for plan, `writeback plan` (scale_floor.py
says what the floor is; ``--commands diff`` measures `diff` and its floor only). Each run is its own process,
started by a fresh launcher (measuring.run_process): wall, CPU (user + system, children included) and peak RSS
come from ``os.wait4`` there, so the peak is the command's own, not the harness's; API requests are the
apiserver's ``apiserver_request_total`` read before and after the run. With ``PYTHONDONTWRITEBYTECODE`` set,
the processes run from a bytecode cache (measuring.bytecode_env), filled by unmeasured first runs. Besides the ratio
of the medians, each command's CPU is divided by its floor's in the same round ("paired"; median and range over the
rounds), and the JSON keeps every round's CPU (``cpu_rounds``).

    python3 bench/bench_scale.py --objects 1000 10000 --rounds 3 --json bench/scale.json
    python3 bench/bench_scale.py --world-kind appliers --objects 10000 --rounds 3

``--src SRC`` measures the writeback package of another source tree instead of the installed one;
``--compare SRC`` adds `writeback diff`/`plan` rows run from another source tree (e.g. ``git archive`` of an
older commit), interleaved with the rest: an A/B on the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import sysconfig
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # `tests.controlplane`
sys.path.insert(0, str(HERE))

from measuring import ProcessRun, bytecode_note, run_process, spread  # noqa: E402
from scale_cluster import api_client  # noqa: E402
from worlds import WORLD_KINDS, BenchWorld, make_world  # noqa: E402

FLOOR = HERE / "scale_floor.py"
_METRIC = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')
# What the apiserver does on its own meanwhile (its Lease, the kubernetes Service's endpoints): not ours.
_BACKGROUND = frozenset({"leases", "endpoints", "endpointslices"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Measured:
    run: ProcessRun
    requests: Counter[str]  # "VERB resource" (or the non-resource path) -> count


@dataclass(slots=True, kw_only=True)
class ScaleResult:
    objects: int
    rounds: int
    world_kind: str = "basic"
    runs: dict[str, list[Measured]] = field(default_factory=dict)
    edited_files: int = 0
    writeback_objects: int = 0
    load: list[float] = field(default_factory=list)  # the 1-minute load average before each measured run

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"objects": self.objects, "rounds": self.rounds, "world_kind": self.world_kind,
                               "edited_files": self.edited_files}  # fmt: skip
        if self.load:
            out["load_average"] = spread(self.load)
        for name, ms in self.runs.items():
            out[name] = {
                "wall": spread([m.run.wall for m in ms]),
                "cpu": spread([m.run.cpu for m in ms]),
                "cpu_rounds": [m.run.cpu for m in ms],
                "peak_rss_mib": spread([m.run.peak_rss / 2**20 for m in ms]),
                "requests": spread([float(sum(m.requests.values())) for m in ms]),
                "requests_by_kind": dict(sorted(ms[-1].requests.items())),
            }
            paired = self.paired_cpu(name)
            if paired:
                out[name]["cpu_paired_ratio"] = spread(paired)
        return out

    def paired_cpu(self, name: str) -> list[float]:
        """Each round's CPU of ``name`` over its floor's in that very round (empty for a floor): a paired ratio,
        which a slow spell of the machine that lasts a round moves less than the ratio of two medians."""
        floor = floor_of(name)
        if name == floor or floor not in self.runs:
            return []
        return [m.run.cpu / f.run.cpu for m, f in zip(self.runs[name], self.runs[floor], strict=True)]


def floor_of(name: str) -> str:
    """The floor a run is measured against: the plan floor for a plan, else the diff floor."""
    return "floor (plan)" if "plan" in name else "floor (diff)"


def scrape(api: Any) -> dict[tuple[tuple[str, str], ...], float]:
    """apiserver_request_total, by label set."""
    request = api.param_serialize(method="GET", resource_path="/metrics", header_params={"Accept": "text/plain"},
                                  auth_settings=["BearerToken"])  # fmt: skip
    text = api.call_api(*request).read().decode()
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for line in text.splitlines():
        m = _METRIC.match(line)
        if m:
            out[tuple(sorted(_LABEL.findall(m.group("labels"))))] = float(m.group("value"))
    return out


def request_delta(before: Mapping[Any, float], after: Mapping[Any, float]) -> Counter[str]:
    """Resource requests made between two scrapes, without the apiserver's own background requests.

    The benchmark's commands only make namespaced requests (lists per namespace, dry-runs of objects), while the
    apiserver's own loops renew Leases, reconcile the kubernetes Service's endpoints, re-list all Services
    cluster-wide (the IP repair loop) and re-open watches: those are left out, and so are non-resource requests
    (``/metrics`` itself, ``/openapi``). Discovery requests are not in this metric.
    """
    out: Counter[str] = Counter()
    for labels, value in after.items():
        n = int(value - before.get(labels, 0.0))
        d = dict(labels)
        if n <= 0 or d.get("component") != "apiserver" or d.get("resource") in _BACKGROUND:
            continue
        if d.get("scope") == "cluster" or d.get("verb") == "WATCH":  # the apiserver's own controllers
            continue
        what = d.get("resource") or d.get("subresource") or "?"
        sub = f"/{d['subresource']}" if d.get("resource") and d.get("subresource") else ""
        dry = " (dry-run)" if d.get("dry_run") else ""
        out[f"{d.get('verb')} {what}{sub}{dry}"] += n
    return out


def writeback_cmd(command: str, *, kubeconfig: str, repo: Path, src: Path | None) -> tuple[list[str], dict[str, str]]:
    """`writeback COMMAND` as a process; with ``src``, the writeback package of that source tree instead."""
    env = dict(os.environ)
    argv = [command, "--kubeconfig", kubeconfig, "--repo", str(repo), "--path", "apps", "--output", "json"]
    if src is None:
        return [sys.executable, "-m", "writeback.cli", *argv], env
    # -S: no site-packages processing, so the editable install's finder does not shadow SRC; -P: the current
    # directory (maybe this very worktree) does not go first on sys.path either
    env["PYTHONPATH"] = os.pathsep.join([str(src), sysconfig.get_paths()["purelib"]])
    return [sys.executable, "-S", "-P", "-m", "writeback.cli", *argv], env


def floor_cmd(
    *, kubeconfig: str, world: BenchWorld, repo: Path, roundtrip: Sequence[str] = (), list_only: bool = False
) -> list[str]:
    """The lean floor (scale_floor.py) for ``world``: its lists, and unless ``list_only`` its repo parse."""
    cmd = [sys.executable, str(FLOOR), "--kubeconfig", kubeconfig, "--namespaces", ",".join(world.namespaces),
           "--resources", ",".join(world.resources)]  # fmt: skip
    if list_only:
        return [*cmd, "--list-only"]
    cmd += ["--repo", str(repo), "--path", "apps"]
    return [*cmd, "--roundtrip", *roundtrip] if roundtrip else cmd


def check_floor(name: str, world: BenchWorld, run: ProcessRun) -> None:
    """A floor run listed every object, with no model class and with libyaml."""
    out = json.loads(run.stdout)
    if out["listed"] != world.objects:
        raise RuntimeError(f"{name}: listed {out['listed']} objects, expected {world.objects}")
    if out["model_modules"] or not out["libyaml"]:
        raise RuntimeError(f"{name}: not the lean floor: {out}")


def _check(name: str, run: ProcessRun) -> None:
    if run.returncode != 0:
        raise RuntimeError(f"{name} exited {run.returncode}:\n{run.stderr[-3000:]}")


def measure_scale(
    *,
    objects: int,
    rounds: int,
    kubeconfig: str,
    kubectl: Path,
    workdir: Path,
    src: Path | None = None,
    compare: Path | None = None,
    namespace_prefix: str = "scale",
    world_kind: str = "basic",
    commands: Sequence[str] = ("diff", "plan"),
    warmup: bool = True,
    loaded: bool = False,
    bytecode_cache: bool = True,
    progress: Callable[[str], None] = lambda s: None,
) -> ScaleResult:
    """Load ``objects`` objects of ``world_kind`` into the control plane of ``kubeconfig``, then measure all runs
    interleaved: for each of ``commands``, its floor and writeback's command.

    ``loaded``: the world and its repo (``workdir/repo``) are there already, from an earlier call.
    """
    world = make_world(world_kind, objects, namespace_prefix=namespace_prefix)
    repo = workdir / "repo"
    if not loaded:
        world.write_repo(repo)
        progress(f"{world.objects} objects ({world_kind}): loading the control plane")
        world.load(kubeconfig=kubeconfig, kubectl=kubectl, workdir=workdir)
        progress(f"{world.objects} objects: loaded ({len(world.changed)} changed, {len(world.scaled)} scaled)")
    result = ScaleResult(objects=world.objects, rounds=rounds, world_kind=world_kind)

    # a first run checks the world (and fills the bytecode cache); a first plan also says which files get edited
    # (the plan floor round-trips exactly those)
    first_command = "plan" if "plan" in commands else "diff"
    cmd, env = writeback_cmd(first_command, kubeconfig=kubeconfig, repo=repo, src=src)
    first = run_process(cmd, env=env, bytecode_cache=bytecode_cache)
    _check(f"writeback {first_command}", first)
    edited: list[str] = []
    if first_command == "plan":
        plan = json.loads(first.stdout)
        edited = sorted({f["path"] for cs in plan["changesets"] for f in cs["files"]})
        result.edited_files = len(edited)
        if set(edited) != world.expected_edited_files():
            want = sorted(world.expected_edited_files())
            raise RuntimeError(f"plan edits {edited}, expected the files of the changed objects {want}")
    else:
        _check_diff(world, json.loads(first.stdout), name="writeback diff")

    runs: dict[str, tuple[list[str], dict[str, str]]] = {}
    if "diff" in commands:
        runs["floor (diff)"] = (floor_cmd(kubeconfig=kubeconfig, world=world, repo=repo), dict(os.environ))
        runs["writeback diff"] = writeback_cmd("diff", kubeconfig=kubeconfig, repo=repo, src=src)
        if compare is not None:
            runs["writeback diff (compare)"] = writeback_cmd("diff", kubeconfig=kubeconfig, repo=repo, src=compare)
    if "plan" in commands:
        plan_floor = floor_cmd(kubeconfig=kubeconfig, world=world, repo=repo, roundtrip=edited)
        runs["floor (plan)"] = (plan_floor, dict(os.environ))
        runs["writeback plan"] = writeback_cmd("plan", kubeconfig=kubeconfig, repo=repo, src=src)
        if compare is not None:
            runs["writeback plan (compare)"] = writeback_cmd("plan", kubeconfig=kubeconfig, repo=repo, src=compare)
    result.runs = {name: [] for name in runs}
    api = api_client(kubeconfig)
    try:
        for name, (cmd, env) in runs.items():  # warm-up: imports, page cache, the apiserver's caches
            if warmup or name.startswith("floor"):  # a floor always once: its bytecode, if cached
                _check(name, run_process(cmd, env=env, bytecode_cache=bytecode_cache))
        for r in range(rounds):
            for name, (cmd, env) in runs.items():
                before = scrape(api)
                result.load.append(os.getloadavg()[0])
                run = run_process(cmd, env=env, bytecode_cache=bytecode_cache)
                after = scrape(api)
                _check(name, run)
                if name.startswith("floor"):
                    check_floor(name, world, run)
                elif "diff" in name:
                    _check_diff(world, json.loads(run.stdout), name=name)
                result.runs[name].append(Measured(run=run, requests=request_delta(before, after)))
                progress(
                    f"{world.objects} objects, round {r + 1}/{rounds}: {name} {run.wall:.2f} s wall, "
                    f"{run.cpu:.2f} s CPU, {run.peak_rss / 2**20:.0f} MiB (load {result.load[-1]:.1f})"
                )
    finally:
        api.close()
    result.writeback_objects = len(world.changed)
    return result


def _check_diff(world: BenchWorld, report: Mapping[str, Any], *, name: str) -> None:
    """The diff found exactly the people's changes (and not the HPA's scaling), each with its decision."""
    found = {
        (d["resource"]["kind"], d["resource"]["namespace"], d["resource"]["name"], d["decision"])
        for d in report["drifts"]
        if d["decision"] != "ignore"
    }
    want = world.expected_decisions()
    if found != want:
        extra, missing = sorted(found - want), sorted(want - found)
        raise RuntimeError(f"{name}: decided {extra} unexpectedly, {missing} missing")


def print_result(result: ScaleResult, *, out: Callable[[str], None] = print) -> None:
    s = result.summary()
    out(
        f"\n{result.objects} objects ({result.world_kind} world), {result.rounds} rounds interleaved, "
        f"plan edits {result.edited_files} files"
    )
    out(f"{'run':26} {'wall s median (min-max)':>24} {'ratio':>6} {'CPU s median (min-max)':>24} {'ratio':>6} "
        f"{'paired (min-max)':>19} {'peak MiB':>9} {'ratio':>6} {'API':>5}")  # fmt: skip
    for name in result.runs:
        floor = s[floor_of(name)]
        w, c, m, q = s[name]["wall"], s[name]["cpu"], s[name]["peak_rss_mib"], s[name]["requests"]
        p = s[name].get("cpu_paired_ratio")
        paired = f"{p[0]:5.2f} ({p[1]:4.2f}-{p[2]:4.2f})" if p else ""
        out(f"{name:26} {w[0]:8.2f} ({w[1]:6.2f}-{w[2]:6.2f}) {w[0] / floor['wall'][0]:6.2f} "
            f"{c[0]:8.2f} ({c[1]:6.2f}-{c[2]:6.2f}) {c[0] / floor['cpu'][0]:6.2f} {paired:>19} "
            f"{m[0]:9.0f} {m[0] / floor['peak_rss_mib'][0]:6.2f} {q[0]:5.0f}")  # fmt: skip
    out("paired: the median (min-max) over rounds of each round's CPU over its floor's in that round")
    if "load_average" in s:
        load = s["load_average"]
        out(f"load average (1 min) before the runs: median {load[0]:.1f}, {load[1]:.1f}-{load[2]:.1f}")
    for name in result.runs:
        out(f"  API requests, {name}: " + ", ".join(f"{k}: {v}" for k, v in s[name]["requests_by_kind"].items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--src", type=Path, help="the writeback source tree to measure (default: the installed one)")
    ap.add_argument("--compare", type=Path, help="another writeback source tree, measured side by side")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--no-warmup", action="store_true", help="skip the unmeasured first run of each command")
    ap.add_argument("--kubeconfig", help="a control plane with the world loaded already (with --world, one N)")
    ap.add_argument("--world", type=Path, help="the loaded world's directory (its repo in DIR/repo)")
    ap.add_argument("--prefix", default="scale", help="the loaded world's namespace prefix")
    ap.add_argument("--world-kind", choices=WORLD_KINDS, default="basic", help="which world (worlds.py)")
    ap.add_argument("--commands", nargs="+", choices=("diff", "plan"), default=["diff", "plan"])
    ap.add_argument("--no-bytecode-cache", action="store_true", help="honour PYTHONDONTWRITEBYTECODE (an A/B)")
    args = ap.parse_args()
    from tests.controlplane import cp

    if args.no_bytecode_cache:
        print(
            "bytecode: no cache (--no-bytecode-cache): PYTHONDONTWRITEBYTECODE as the environment sets it", flush=True
        )
    else:
        print(bytecode_note(), flush=True)

    results = []
    if args.kubeconfig:  # measure a world loaded before (bench_warm.py and this share one)
        if args.world is None or len(args.objects) != 1:
            ap.error("--kubeconfig needs --world and one --objects N")
        kubectl = Path(json.loads((Path(args.kubeconfig).parent / cp.STATE_FILE).read_text())["bin_dir"]) / "kubectl"
        result = measure_scale(
            objects=args.objects[0], rounds=args.rounds, kubeconfig=args.kubeconfig, kubectl=kubectl,
            workdir=args.world, src=args.src, compare=args.compare, namespace_prefix=args.prefix,
            world_kind=args.world_kind, commands=args.commands, warmup=not args.no_warmup, loaded=True,
            bytecode_cache=not args.no_bytecode_cache,
            progress=lambda s: print(s, file=sys.stderr, flush=True),
        )  # fmt: skip
        print_result(result)
        if args.json:
            args.json.write_text(json.dumps([result.summary()], indent=2) + "\n")
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
        return 0
    for n in args.objects:
        with tempfile.TemporaryDirectory(prefix="writeback-scale-") as tmp:
            plane = cp.start(workdir=Path(tmp) / "cp")
            try:
                result = measure_scale(
                    objects=n, rounds=args.rounds, kubeconfig=plane.kubeconfig, kubectl=plane.bin_dir / "kubectl",
                    workdir=Path(tmp), src=args.src, compare=args.compare, world_kind=args.world_kind,
                    commands=args.commands, warmup=not args.no_warmup, bytecode_cache=not args.no_bytecode_cache,
                    progress=lambda s: print(s, file=sys.stderr, flush=True),
                )  # fmt: skip
            finally:
                plane.stop()
        print_result(result)
        results.append(result.summary())
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n")
    if len(results) > 1:
        first, last = results[0], results[-1]
        for name in (f"writeback {c}" for c in args.commands):
            growth = last[name]["wall"][0] / first[name]["wall"][0]
            print(f"growth {first['objects']} -> {last['objects']} objects, {name}: {growth:.1f}x")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
