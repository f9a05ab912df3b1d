"""``writeback run --config FILE`` without ``--once``: run every target on its schedule until SIGTERM.

    serve(config)   # blocks; returns 0 after a clean shutdown; exits the process with 3 if a step was abandoned

Wires the pieces: structured logs with secret redaction, metrics and health on ``metrics.address``, the
Lease coordinator (``writeback.service.sharding``), one watch cache per target with hotfix capture, and
the scheduler that calls ``writeback.pipeline.cycling.run_cycle`` (after ending the target's expired break-glass,
``writeback.service.breakglassing``).
"""

from __future__ import annotations

import logging
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from writeback import config as cfg
from writeback.adapters.hotfix_store import ConfigMapStore, DirectoryStore, HotfixStore
from writeback.adapters.kube.cluster import Cluster, KubeCluster
from writeback.adapters.kube.controllers import ControllerObjects
from writeback.adapters.kube.counting import CountingCluster
from writeback.adapters.kube.discovery import DiscoveryOnce
from writeback.adapters.kube.kubeconfigs import ClusterAccess, new_api_client
from writeback.adapters.kube.watching import WatchingCluster
from writeback.breakglass import flow as bgflow
from writeback.breakglass import targets as bgtargets
from writeback.errors import ExitCode, WritebackError
from writeback.model import Capture, Drift, EnsureResult, Outcome
from writeback.pipeline.cycling import CycleOptions, TargetRun
from writeback.pipeline.planning import PlanOutcome
from writeback.pipeline.targets import Edges, TargetSpec, spec_for, tools_for
from writeback.pipeline.warming import WarmState
from writeback.service import breakglassing
from writeback.service.guards import Coordinator
from writeback.service.hotfixing import CapturingCluster, HotfixCapturer
from writeback.service.logging import secret_values, setup_logging
from writeback.service.metrics import HealthServer, Metrics, Readiness
from writeback.service.scheduler import CycleContext, TargetScheduler, period_seconds

log = logging.getLogger(__name__)


class CycleFailed(WritebackError):
    """The cycle ran, but some of its change sets or the plan failed (retried with backoff)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CycleReport:
    results: tuple[EnsureResult, ...]
    drifts: tuple[Drift, ...] | None


class TargetRuntime:
    """One target's cluster connection, watch cache and hotfix capture, created on first use."""

    def __init__(
        self,
        *,
        target: cfg.Target,
        config: cfg.Config,
        metrics: Metrics,
        store: HotfixStore | None,
        on_capture: Callable[[Capture], None],
    ) -> None:
        self.target = target
        self._config = config
        self._metrics = metrics
        self._store = store
        self._on_capture = on_capture
        self._lock = threading.Lock()
        self.watching: WatchingCluster | None = None
        self.capturing: CapturingCluster | None = None
        self._cluster: Cluster | None = None
        self._direct: KubeCluster | None = None
        entry = next((c for c in config.clusters if c.name == target.cluster), None)
        self.access = ClusterAccess(
            kubeconfig=entry.kubeconfig if entry else None,
            context=entry.context if entry else None,
            in_cluster=entry.in_cluster if entry else False,
        )
        self.cluster_name = target.cluster or ""
        self._spec: TargetSpec | None = None
        self.memo = WarmState()  # results kept from this target's last cycle (pipeline.warming)

    def spec(self) -> TargetSpec:
        """The target resolved once (its fingerprint key read on first use: a missing one fails this target's
        cycles, not the service)."""
        with self._lock:
            if self._spec is None:
                self._spec = spec_for(self.target)
            return self._spec

    def cluster(self) -> Cluster:
        with self._lock:
            if self._cluster is None:
                self._cluster = self._connect()
            return self._cluster

    def _connect(self) -> Cluster:
        api_client = new_api_client(access=self.access)
        direct = self._direct = KubeCluster(api_client=api_client)
        if not self._config.watch.enabled:
            return CountingCluster(cluster=direct, count=self._count)
        name = self.target.name
        capturer = None
        if self._store is not None and self._config.watch.capture_hotfixes:
            capturer = HotfixCapturer(
                target=name, policy=self.target.policy, store=self._store, on_capture=self._on_capture
            )
        self.watching = WatchingCluster(
            cluster=direct,
            api_client=api_client,
            on_event=capturer,
            on_request=lambda verb: self._metrics.api_request(target=name, verb=verb),
        )
        if self._store is None:
            return self.watching
        self.capturing = CapturingCluster(
            cluster=self.watching,
            store=self._store,
            target=name,
            policy=self.target.policy,
            ttl_seconds=self._config.watch.capture_ttl_seconds,
        )
        return self.capturing

    def controller_objects(self) -> breakglassing.CountedObjects | None:
        """Break-glass reads/patches of the target's controller objects (the real cluster, never the watch cache);
        None when the target names no Argo CD Application or Flux Kustomization."""
        if not bgtargets.target_refs(self.target):
            return None
        self.cluster()
        assert self._direct is not None
        return breakglassing.CountedObjects(objects=ControllerObjects(cluster=self._direct), count=self._count)

    def discovery(self) -> DiscoveryOnce:
        """A cycle's reader of the cluster's version and discovery (the real cluster; read once, if a source asks:
        the Helm source renders with the cluster's capabilities)."""
        self.cluster()
        assert self._direct is not None
        return DiscoveryOnce(self._direct, count=self._count)

    def _count(self, verb: str) -> None:
        self._metrics.api_request(target=self.target.name, verb=verb)

    def warm_up(self) -> None:
        """Start the informers of the configured selectors now, so hotfixes are captured before the first cycle."""
        try:
            self.cluster()
            if self.watching is not None:
                for selector in self.target.selectors:
                    self.watching.informers_for(selector=selector)
        except WritebackError as e:
            log.warning("cannot watch yet: %s", e, extra={"target": self.target.name})

    def stop(self) -> None:
        if self.watching is not None:
            self.watching.stop()


def state_store(config: cfg.Config) -> HotfixStore | None:
    if config.state_configmap:
        return ConfigMapStore(api_client=new_api_client(access=ClusterAccess()), configmap=config.state_configmap)
    if config.state_dir:
        return DirectoryStore(state_dir=config.state_dir)
    return None


class Service:
    """The long-running process; ``serve`` below is its usual entry point."""

    def __init__(
        self,
        *,
        config: cfg.Config,
        workdir: Path,
        ownership: Coordinator | None = None,
        store: HotfixStore | None = None,
    ) -> None:
        self.config = config
        self.workdir = workdir
        self.metrics = Metrics(persistent_cycles=config.metrics.persistent_cycles)
        self.stopping = threading.Event()
        self._last_success: dict[str, float] = {}
        names = [t.name for t in config.targets]
        if ownership is None:
            from writeback.service.sharding import coordinator_for

            ownership = coordinator_for(leader=config.leader, targets=names)
        self.ownership = ownership  # which targets this replica runs now: a Lease coordinator or SoleReplica
        self.runtimes = {
            t.name: TargetRuntime(target=t, config=config, metrics=self.metrics, store=store, on_capture=self._captured)
            for t in config.targets
        }
        self.scheduler = TargetScheduler(
            targets=config.targets,
            run=self._run,
            ownership=ownership,
            on_success=self._succeeded,
            on_failure=lambda name, seconds, e: self.metrics.cycle_failed(target=name, seconds=seconds, error=e),
        )
        periods = {t.name: period_seconds(t.schedule) for t in config.targets}
        self.metrics.targets(periods=periods)
        self.readiness = Readiness(periods=periods, intervals=config.metrics.ready_intervals, started=time.time())
        self.server = HealthServer(
            address=config.metrics.address,
            metrics=self.metrics,
            ready=self._ready,
            alive=lambda: not self.stopping.is_set(),
            before_scrape=self._forget_unowned,
        )

    # ------------------------------------------------------------ callbacks

    def _captured(self, capture: Capture) -> None:
        self.metrics.hotfixes.labels(target=capture.target).inc()
        self.scheduler.trigger(capture.target, reason="hotfix", delay=self.config.watch.debounce_seconds)

    def _succeeded(self, name: str, seconds: float, report: Any) -> None:
        self._last_success[name] = time.time()
        self.metrics.cycle_done(target=name, seconds=seconds, now=self._last_success[name])

    def _ready(self) -> list[str]:
        if self.stopping.is_set():
            return ["shutting down"]
        problems = self.readiness.check(last_success=self._last_success.get)
        mine = self.ownership.owned_targets()
        return [p for p in problems if p.split(":", 1)[0] in mine]

    def _forget_unowned(self) -> None:
        """Before a scrape: no state gauges for the targets another replica runs now (HA)."""
        mine = self.ownership.owned_targets()
        for name in self.runtimes:
            if name not in mine:
                self.metrics.forget(target=name)

    def _run(self, ctx: CycleContext) -> CycleReport:
        name = ctx.target.name
        runtime = self.runtimes[name]
        cluster = runtime.cluster()
        if runtime.capturing is not None:
            runtime.capturing.begin_cycle()
        plans: list[PlanOutcome] = []
        options = CycleOptions(
            workdir=self.workdir,
            hotfixes=runtime.capturing.reverted if runtime.capturing is not None else None,
            on_plan=plans.append,
            keep_going=ctx.keep_going,
        )
        tools = tools_for(runtime.target, discovery=runtime.discovery())
        run = TargetRun(
            spec=runtime.spec(),
            edges=Edges(cluster=cluster, cluster_name=runtime.cluster_name, tools=tools, memo=runtime.memo),
            options=options,
        )
        expiry, results = self._break_glass(ctx, runtime=runtime, run=run)
        if expiry is None or not expiry.backported:  # a backport cycle that ran is this cycle
            active = expiry.active if expiry is not None else ()
            results = tuple(breakglassing.with_incident(run, active=active).run())
        self.metrics.results(target=name, results=results)
        if runtime.memo.recomputed is not None:
            self.metrics.recomputed(target=name, objects=runtime.memo.recomputed)
        drifts = None
        if plans and plans[0].detection is not None:
            drifts = plans[0].detection.report.drifts
            self.metrics.drifts(target=name, drifts=drifts)
            if runtime.capturing is not None and not plans[0].detection.problems:
                runtime.capturing.settle(drifts=drifts)
        problem = breakglassing.failure(expiry) if expiry is not None else None
        if problem is not None and ctx.keep_going():  # stopped (shutdown, lost Lease): the next owner retries
            raise problem
        failed = [r for r in results if r.outcome is Outcome.FAILED]
        if failed:
            raise CycleFailed("; ".join(r.detail or r.changeset_id for r in failed))
        for r in results:
            log.info("%s %s", r.outcome, r.url or "-", extra={"target": name, "changeset": r.changeset_id})
        return CycleReport(results=results, drifts=drifts)

    def _break_glass(
        self, ctx: CycleContext, *, runtime: TargetRuntime, run: TargetRun
    ) -> tuple[bgtargets.TargetExpiry | None, tuple[EnsureResult, ...]]:
        """End the target's expired break-glass (backport cycle first) and set its gauges; None: no object named."""
        objects = runtime.controller_objects()
        if objects is None:
            self.metrics.break_glass(target=ctx.target.name, expires=(), now=bgflow.now_utc())
            return None, ()
        expiry = breakglassing.check(objects=objects, run=run, keep_going=ctx.keep_going,
                                     settings=self.config.break_glass)  # fmt: skip
        expires = [h.record.expires for h in expiry.active]
        self.metrics.break_glass(target=ctx.target.name, expires=expires, now=bgflow.now_utc(),
                                 expired_waiting=expiry.expired_waiting)  # fmt: skip
        return expiry, tuple(r for e in expiry.ended for r in e.results)

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self.server.start()
        self.ownership.start()
        self.scheduler.start()
        for runtime in self.runtimes.values():
            threading.Thread(target=runtime.warm_up, name=f"warm-up {runtime.target.name}", daemon=True).start()
        log.info("serving", extra={"address": f"{self.config.metrics.address}", "port": self.server.port})

    def stop(self) -> bool:
        """Stop accepting runs, let the running steps finish (bounded), release Leases, stop watches."""
        self.stopping.set()
        grace = self.config.shutdown_grace_seconds
        clean = self.scheduler.shutdown(grace=grace)
        if not clean:
            log.warning("a running step did not finish within %.0fs; abandoning it", grace)
        self.ownership.stop(grace_seconds=0.0 if not clean else grace)
        for runtime in self.runtimes.values():
            runtime.stop()
        self.server.stop()
        return clean


def serve(config: cfg.Config, *, workdir: Path | None = None, level: int = logging.INFO) -> int:
    """Run until SIGTERM or SIGINT; 0 after a clean shutdown (``os._exit(3)`` when a step had to be abandoned)."""
    setup_logging(level=level, secrets=secret_values(config))
    with tempfile.TemporaryDirectory(prefix="writeback-serve-") as tmp:
        base = workdir or (Path(config.state_dir) / "repos" if config.state_dir else Path(tmp))
        store = state_store(config)
        if store is None and config.watch.enabled and config.watch.capture_hotfixes:
            log.warning("no state_dir or state_configmap: captured hotfixes are kept only until this process exits")
            store = DirectoryStore(state_dir=Path(tmp) / "state")
        service = Service(config=config, workdir=base, store=store)
        done = threading.Event()

        def _signal(signum: int, frame: Any) -> None:
            log.info("received %s: shutting down", signal.Signals(signum).name)
            done.set()

        previous = {s: signal.signal(s, _signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            service.start()
            while not done.wait(1.0):
                pass
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            clean = service.stop()
        if not clean:
            # The step still running is abandoned: leave now rather than wait for its thread at interpreter exit.
            # Every step is idempotent; the next cycle (here or on another replica) completes it.
            log.warning("stopped, abandoning the running step", extra={"clean": False})
            logging.shutdown()
            os._exit(ExitCode.FAILED)
    log.info("stopped", extra={"clean": clean})
    return ExitCode.OK
