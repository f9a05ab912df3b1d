#!/usr/bin/env python3
"""Record one `writeback diff` cycle's cluster answers, then replay the cycle in process: the engine without the
network, for profiling and for checking that a change of the engine changes no decision.

    python3 bench/replay.py record --kubeconfig K --repo R --path apps --out world.capture
    python3 bench/replay.py run --capture world.capture --repo R --path apps [--plan] [--rounds 3] \
        [--report out.json] [--profile 25]

``record`` runs ``detect`` once against the real cluster through a recording ``Cluster``: discovery, every list,
every dry-run answer and GET are kept (pickled). ``run`` runs ``detect`` (with ``--plan``: ``plan_target``, which
patches nothing on disk) against a ``Cluster`` that answers from the capture: list pages as fresh copies, the
recorded dry-run bodies, and a dry-run the recording never saw is an error (the new code asked the server about
another object: ``needs_dry_run`` decided differently). It prints CPU and wall seconds per round and writes the
report (``--explain`` JSON: every drift, decision, reason, note and dropped field; the dry-run requests; with
``--plan`` the change sets) to ``--report``. Run it from two source trees (``PYTHONPATH=SRC python3 -S -P ...``,
as bench_scale.py ``--compare`` does) and compare the two reports byte for byte.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import io
import json
import pickle
import pstats
import statistics
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _ref_key(ref: Any) -> tuple[str, str, str, str]:
    return (ref.api_version, ref.kind, ref.namespace or "", ref.name)


def _body_key(body: Mapping[str, Any]) -> tuple[str, str, str, str]:
    meta = body.get("metadata") or {}
    return (str(body.get("apiVersion")), str(body.get("kind")), str(meta.get("namespace") or ""), str(meta["name"]))


class Recording:
    """A ``Cluster`` that passes every call to the real one and keeps the answers."""

    def __init__(self, cluster: Any) -> None:
        self._c = cluster
        self.data: dict[str, Any] = {"resources": {}, "lists": {}, "apply": {}, "create": {}, "get": {}}

    def resource_for(self, *, api_version: str, kind: str) -> Any:
        res = self._c.resource_for(api_version=api_version, kind=kind)
        self.data["resources"][(api_version, kind)] = res
        return res

    def list_objects(self, *, selector: Any, page_size: int = 500) -> Any:
        out = self._c.list_objects(selector=selector, page_size=page_size)
        self.data["lists"][selector] = [(o.ref, copy.deepcopy(o.body), o.source) for o in out]
        return out

    def dry_run_apply(self, *, body: Mapping[str, Any]) -> Any:
        out = self._c.dry_run_apply(body=body)
        self.data["apply"][_body_key(body)] = copy.deepcopy(out)
        return out

    def dry_run_create(self, *, body: Mapping[str, Any], twin_of: Any) -> Any:
        out = self._c.dry_run_create(body=body, twin_of=twin_of)
        self.data["create"][_ref_key(twin_of)] = copy.deepcopy(out)
        return out

    def get_object(self, *, ref: Any) -> Any:
        out = self._c.get_object(ref=ref)
        self.data["get"][_ref_key(ref)] = copy.deepcopy(out)
        return out

    def server_version(self) -> str:
        return "recorded"


class Replay:
    """A ``Cluster`` that answers from a recording; it notes which dry-runs were asked for."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._d = data
        self.asked: list[str] = []
        self.list_calls = 0

    def resource_for(self, *, api_version: str, kind: str) -> Any:
        return self._d["resources"][(api_version, kind)]

    def list_objects(self, *, selector: Any, page_size: int = 500) -> Any:
        from writeback.model import LiveObject

        self.list_calls += 1
        # a fresh decode per cycle, as a real list gives (pickle of plain JSON is a fast deep copy)
        return [LiveObject(ref=r, body=b, source=s) for r, b, s in pickle.loads(self._d["pickled_lists"][selector])]

    def _dry(self, table: str, key: tuple[str, str, str, str]) -> Any:
        from writeback.errors import ClusterError

        self.asked.append(f"{table} {'/'.join(key)}")
        if key not in self._d[table]:
            raise ClusterError(f"replay: the recording has no dry-run {table} of {key}: the decision changed")
        return copy.deepcopy(self._d[table][key])

    def dry_run_apply(self, *, body: Mapping[str, Any]) -> Any:
        return self._dry("apply", _body_key(body))

    def dry_run_create(self, *, body: Mapping[str, Any], twin_of: Any) -> Any:
        return self._dry("create", _ref_key(twin_of))

    def get_object(self, *, ref: Any) -> Any:
        return copy.deepcopy(self._d["get"][_ref_key(ref)])

    def server_version(self) -> str:
        return "recorded"


def record(args: argparse.Namespace) -> int:
    from writeback.adapters.kube.cluster import KubeCluster
    from writeback.pipeline.detecting import detect
    from writeback.pipeline.targets import Edges, TargetSpec

    rec = Recording(KubeCluster.connect(kubeconfig=args.kubeconfig))
    detection = detect(spec=TargetSpec(name="replay", path=args.path), repo=args.repo, edges=Edges(cluster=rec))
    with args.out.open("wb") as f:
        pickle.dump(rec.data, f, protocol=pickle.HIGHEST_PROTOCOL)
    lists = sum(len(v) for v in rec.data["lists"].values())
    print(f"recorded {lists} live objects, {len(rec.data['apply']) + len(rec.data['create'])} dry-runs, "
          f"{len(detection.report.drifts)} drifts -> {args.out}")  # fmt: skip
    return 0


def _cycle(
    args: argparse.Namespace, data: Mapping[str, Any], prof: cProfile.Profile | None = None
) -> tuple[dict[str, Any], float, float]:
    """One cycle: the report, and the cycle's CPU and wall seconds (the report's JSON form not included)."""
    from writeback.drift.engine import report_to_json
    from writeback.pipeline.detecting import detect
    from writeback.pipeline.planning import plan_target
    from writeback.pipeline.targets import Edges, TargetSpec
    from writeback.yaml import reading

    reading.set_cache(enabled=False)  # read as a one-shot command reads: nothing parsed kept across rounds
    cluster = Replay(data)
    explain = not args.no_explain
    spec, edges = TargetSpec(name="replay", path=args.path, explain=explain), Edges(cluster=cluster)
    out: dict[str, Any] = {}
    if prof is not None:
        prof.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    if args.plan:
        outcome = plan_target(spec=spec, repo=args.repo, edges=edges)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if prof is not None:
            prof.disable()
        assert outcome.detection is not None
        report = outcome.detection.report
        out["changesets"] = [
            {"id": cs.id, "fingerprint": cs.fingerprint, "files": [[f.path, f.before, f.after] for f in cs.files]}
            for cs in outcome.plan.changesets
        ]
    else:
        report = detect(spec=spec, repo=args.repo, edges=edges).report
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if prof is not None:
            prof.disable()
    out["report"] = report_to_json(report, explain=explain)
    out["dry_runs"] = sorted(cluster.asked)
    return out, cpu, wall


_STAGES = {  # module -> the functions of it whose CPU seconds --stages reports (calls made from that module)
    "writeback.pipeline.detecting": ("git_side", "compute_drift"),
    "writeback.pipeline.dryruns": ("prepare_object", "needs_dry_run"),
    "writeback.pipeline.snapshots": ("snapshot",),
}


def time_stages() -> dict[str, float]:
    """Wrap the stage functions so that each adds its CPU seconds to the returned dict (cumulative)."""
    import importlib

    spent: dict[str, float] = {}

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **kw: Any) -> Any:
            c0 = time.process_time()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - c0

        return wrapper

    for module_name, names in _STAGES.items():
        module = importlib.import_module(module_name)
        for name in names:
            if not hasattr(module, name):  # a stage that moved: say so rather than print a split without it
                raise RuntimeError(f"--stages: {module_name} has no {name} any more; update replay._STAGES")
            setattr(module, name, timed(name, getattr(module, name)))
    return spent


# Captures recorded before issue 20's moves pickled these classes under their old module paths.
_MOVED = {
    ("writeback.model", "ObjectRef"): ("writeback.kube.refs", "ObjectRef"),
    ("writeback.config", "Selector"): ("writeback.settings", "Selector"),
    ("writeback.adapters.cluster", "Resource"): ("writeback.adapters.kube.cluster", "Resource"),
}


class _Unpickler(pickle.Unpickler):
    """Loads a capture whatever the module paths it was recorded with (see ``_MOVED``)."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            return super().find_class(module, name)
        except (ImportError, AttributeError):
            if (module, name) not in _MOVED:
                raise
            return super().find_class(*_MOVED[(module, name)])


def run(args: argparse.Namespace) -> int:
    spent = time_stages() if args.stages else None
    with args.capture.open("rb") as f:
        data = _Unpickler(f).load()
    data["pickled_lists"] = {k: pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL) for k, v in data["lists"].items()}
    del data["lists"]
    from writeback.yaml import reading as yamlreading

    cpus, walls = [], []
    out: dict[str, Any] = {}
    for r in range(args.rounds):
        if args.cold:
            yamlreading.clear_cache()
        out, cpu, wall = _cycle(args, data)
        walls.append(wall)
        cpus.append(cpu)
        print(f"round {r + 1}: {cpu:.2f} s CPU, {wall:.2f} s wall", file=sys.stderr)
        if spent is not None:
            print("  " + ", ".join(f"{k} {v:.2f}" for k, v in spent.items()), file=sys.stderr)
            spent.clear()
    print(json.dumps({"cpu": statistics.median(cpus), "wall": statistics.median(walls), "cpus": cpus}))
    if args.report:
        args.report.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    if args.profile:
        if args.cold:
            yamlreading.clear_cache()
        prof = cProfile.Profile()
        _cycle(args, data, prof)
        text = io.StringIO()
        stats = pstats.Stats(prof, stream=text)
        stats.sort_stats("tottime").print_stats(args.profile)
        stats.sort_stats("cumulative").print_stats(args.profile)
        print(text.getvalue(), file=sys.stderr)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--kubeconfig", required=True)
    rec.add_argument("--repo", type=Path, required=True)
    rec.add_argument("--path", default=".")
    rec.add_argument("--out", type=Path, required=True)
    rp = sub.add_parser("run")
    rp.add_argument("--capture", type=Path, required=True)
    rp.add_argument("--repo", type=Path, required=True)
    rp.add_argument("--path", default=".")
    rp.add_argument("--plan", action="store_true", help="plan_target instead of detect")
    rp.add_argument(
        "--no-explain",
        action="store_true",
        help="as plan, run and the service do: no dropped fields kept (the report has none)",
    )
    rp.add_argument("--rounds", type=int, default=1)
    rp.add_argument("--cold", action="store_true", help="clear the YAML parse cache before each round")
    rp.add_argument("--report", type=Path)
    rp.add_argument("--stages", action="store_true", help="print the CPU seconds of the main stages per round")
    rp.add_argument("--profile", type=int, default=0, help="one more round under cProfile: print the top N")
    args = ap.parse_args()
    return record(args) if args.command == "record" else run(args)


if __name__ == "__main__":
    raise SystemExit(main())
