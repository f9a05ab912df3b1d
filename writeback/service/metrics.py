"""Prometheus metrics, and one HTTP server for /metrics, /healthz and /readyz.

Labels carry only target names, decisions, outcomes, verbs and error kinds (class names): never a value
from a resource, a URL with credentials or a token. The alerts and the dashboard in deploy/monitoring/ are
built on these names (tests/monitoring checks them against this registry).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)

from writeback.errors import ConfigError, RateLimited
from writeback.model import Decision, Drift, EnsureResult, ResultReason

_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)


class Metrics:
    """Every writeback metric, in its own registry (no global state)."""

    def __init__(self, *, persistent_cycles: int = 3) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.drift_fields = Gauge(
            "writeback_drift_fields",
            "Drifted fields in the last cycle, by decision",
            ["target", "decision"],
            registry=r,
        )
        self.pull_requests = Counter(
            "writeback_pull_requests", "Pull/merge requests ensured, by outcome", ["target", "outcome"], registry=r
        )
        self.cycle_seconds = Histogram(
            "writeback_cycle_duration_seconds", "Duration of one cycle", ["target"], buckets=_BUCKETS, registry=r
        )
        self.cycles = Counter(
            "writeback_cycles", "Cycles run, by result (ok, failed)", ["target", "result"], registry=r
        )
        self.api_requests = Counter(
            "writeback_api_requests", "Kubernetes API requests, by verb", ["target", "verb"], registry=r
        )
        self.errors = Counter("writeback_errors", "Errors, by kind", ["target", "kind"], registry=r)
        self.last_success = Gauge(
            "writeback_last_success_timestamp_seconds", "Unix time of the last successful cycle", ["target"], registry=r
        )
        self.persistent_drift = Gauge(
            "writeback_persistent_drift_fields",
            "Drift that came back after its PR merged, or outlived the configured number of cycles",
            ["target"],
            registry=r,
        )
        self.hotfixes = Counter(
            "writeback_hotfixes_captured", "Writes by a person captured from the watch", ["target"], registry=r
        )
        self.break_glass_active = Gauge(
            "writeback_break_glass_active",
            "1 while a break-glass record is on the target's Argo CD Application or Flux Kustomization",
            ["target"],
            registry=r,
        )
        self.break_glass_expired = Gauge(
            "writeback_break_glass_expired",
            "Break-glass records past their TTL still in place (auto-sync suspended until the backport PR is ensured)",
            ["target"],
            registry=r,
        )
        self.break_glass_expires = Gauge(
            "writeback_break_glass_expires_timestamp_seconds",
            "Unix time the earliest break-glass record on the target expires (absent: none)",
            ["target"],
            registry=r,
        )
        self.forge_rate_limited = Counter(
            "writeback_forge_rate_limited",
            "Forge rate limits that asked for a wait past forge.max_wait_seconds: PR work skipped until the next cycle",
            ["target"],
            registry=r,
        )
        self.schedule_interval = Gauge(
            "writeback_schedule_interval_seconds",
            "Seconds between two scheduled cycles of the target (cron: the time between two runs)",
            ["target"],
            registry=r,
        )
        self.objects_recomputed = Gauge(
            "writeback_cycle_objects_recomputed",
            "Objects whose drift the last cycle computed; the others' results were kept from the cycle before",
            ["target"],
            registry=r,
        )
        self.objects_recomputed_total = Counter(
            "writeback_objects_recomputed", "Objects whose drift a cycle computed, summed over cycles", ["target"],
            registry=r,
        )  # fmt: skip
        ProcessCollector(registry=r)  # process_start_time_seconds: how long a target has had for its first success
        self.break_glass_expired_waiting = Gauge(
            "writeback_break_glass_expired_waiting",
            "Break-glass records past their TTL whose backport PR is not merged: auto-sync stays suspended (page)",
            ["target"],
            registry=r,
        )
        self._persistent_cycles = persistent_cycles
        self._seen: dict[str, dict[tuple[str, str], int]] = {}  # target -> drift key -> consecutive cycles
        self._merged: dict[str, set[tuple[str, str]]] = {}  # target -> drift keys whose PR went away
        self._lock = threading.Lock()

    def targets(self, *, periods: Mapping[str, float]) -> None:
        """The configured targets (every replica): their intervals, and their counters at 0 so that the first
        failure or rate limit is an increase too."""
        for target, seconds in periods.items():
            self.schedule_interval.labels(target=target).set(seconds)
            for result in ("ok", "failed"):
                self.cycles.labels(target=target, result=result)
            self.forge_rate_limited.labels(target=target)

    def break_glass(self, *, target: str, expires: Sequence[datetime], now: datetime, expired_waiting: int = 0) -> None:
        """The break-glass gauges of one target from the expiry times of the records still in place, and the
        number of those past their TTL still waiting for their backport PR to merge."""
        self.break_glass_active.labels(target=target).set(1 if expires else 0)
        self.break_glass_expired_waiting.labels(target=target).set(expired_waiting)
        self.break_glass_expired.labels(target=target).set(sum(1 for e in expires if e <= now))
        if expires:
            self.break_glass_expires.labels(target=target).set(min(expires).timestamp())
        else:
            with contextlib.suppress(KeyError):
                self.break_glass_expires.remove(target)

    def forget(self, *, target: str) -> None:
        """Drop the gauges of a target's current state once another replica runs it: a stale value here would
        keep an alert firing. Counters, the interval and the last success stay (alerts aggregate those)."""
        series: list[tuple[Gauge, tuple[str, ...]]] = [(self.drift_fields, (target, str(d))) for d in Decision]
        state = (self.persistent_drift, self.break_glass_active, self.break_glass_expired, self.break_glass_expires,
                 self.break_glass_expired_waiting, self.objects_recomputed)  # fmt: skip
        series += [(gauge, (target,)) for gauge in state]
        for gauge, labels in series:
            with contextlib.suppress(KeyError):  # prometheus_client < 0.21 raises for a series never set
                gauge.remove(*labels)
        with self._lock:
            self._seen.pop(target, None)
            self._merged.pop(target, None)

    def api_request(self, *, target: str, verb: str) -> None:
        self.api_requests.labels(target=target, verb=verb).inc()

    def error(self, *, target: str, error: BaseException | str) -> None:
        kind = error if isinstance(error, str) else type(error).__name__
        self.errors.labels(target=target, kind=kind).inc()

    def cycle_failed(self, *, target: str, seconds: float, error: BaseException) -> None:
        self.cycle_seconds.labels(target=target).observe(seconds)
        self.cycles.labels(target=target, result="failed").inc()
        self.error(target=target, error=error)
        if isinstance(error, RateLimited):  # before any PR work (a GitHub App token, say): the whole cycle
            self.forge_rate_limited.labels(target=target).inc()

    def cycle_done(self, *, target: str, seconds: float, now: float | None = None) -> None:
        self.cycle_seconds.labels(target=target).observe(seconds)
        self.cycles.labels(target=target, result="ok").inc()
        self.last_success.labels(target=target).set(time.time() if now is None else now)

    def results(self, *, target: str, results: Iterable[EnsureResult]) -> None:
        """One count per pull request outcome (created, updated, unchanged, closed, skipped, failed), and one per
        forge rate limit (a skipped result with the reason ``RATE_LIMITED``)."""
        for result in results:
            self.pull_requests.labels(target=target, outcome=str(result.outcome)).inc()
            if result.reason is ResultReason.RATE_LIMITED:
                self.forge_rate_limited.labels(target=target).inc()

    def recomputed(self, *, target: str, objects: int) -> None:
        """How many objects a cycle computed (a warm cycle: those whose live object, Git document, applied revision
        or policy changed)."""
        self.objects_recomputed.labels(target=target).set(objects)
        self.objects_recomputed_total.labels(target=target).inc(objects)

    def drifts(self, *, target: str, drifts: Iterable[Drift]) -> None:
        """The drift gauges of one cycle: fields by decision, and persistent drift."""
        self._drifts(target=target, drifts=list(drifts))

    def _drifts(self, *, target: str, drifts: list[Drift]) -> None:
        counts = {str(d): 0 for d in Decision}
        for d in drifts:
            counts[str(d.decision)] += 1
        for decision, n in counts.items():
            self.drift_fields.labels(target=target, decision=decision).set(n)
        keys = {_key(d) for d in drifts if d.decision.written}
        with self._lock:
            before = self._seen.get(target, {})
            merged = self._merged.setdefault(target, set())
            merged.update(k for k in before if k not in keys)  # gone: its PR merged (or it was reverted)
            now = {k: before.get(k, 0) + 1 for k in keys}
            self._seen[target] = now
            persistent = sum(1 for k, n in now.items() if n >= self._persistent_cycles or k in merged)
        self.persistent_drift.labels(target=target).set(persistent)


def _key(d: Drift) -> tuple[str, str]:
    from writeback.kube.paths import format_path

    return (str(d.resource), format_path(d.path))


@dataclass(frozen=True, slots=True, kw_only=True)
class Readiness:
    """/readyz: every scheduled target had a successful cycle no older than ``intervals`` of its period."""

    periods: Mapping[str, float]  # target -> seconds between runs
    intervals: float
    started: float

    def check(self, *, last_success: Callable[[str], float | None], now: float | None = None) -> list[str]:
        """The problems (empty when ready)."""
        at = time.time() if now is None else now
        problems = []
        for target, period in sorted(self.periods.items()):
            limit = self.intervals * period
            last = last_success(target)
            if last is None:
                if at - self.started > limit:
                    problems.append(f"{target}: no successful cycle in {at - self.started:.0f}s")
            elif at - last > limit:
                problems.append(f"{target}: last successful cycle {at - last:.0f}s ago (limit {limit:.0f}s)")
        return problems


class HealthServer:
    """/metrics, /healthz and /readyz on one threaded HTTP server."""

    def __init__(
        self,
        *,
        address: str,
        metrics: Metrics,
        ready: Callable[[], list[str]],
        alive: Callable[[], bool],
        before_scrape: Callable[[], None] | None = None,
    ) -> None:
        host, _, port = address.rpartition(":")
        handler = _handler(metrics=metrics, ready=ready, alive=alive, before_scrape=before_scrape)
        try:
            self._server = ThreadingHTTPServer((host.strip("[]"), int(port)), handler)
        except OSError as e:
            raise ConfigError(f"metrics.address {address}: cannot listen: {e.strerror or e}") from e
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="writeback-http", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()


def _handler(
    *,
    metrics: Metrics,
    ready: Callable[[], list[str]],
    alive: Callable[[], bool],
    before_scrape: Callable[[], None] | None,
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                if before_scrape is not None:
                    before_scrape()
                self._send(200, generate_latest(metrics.registry), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                ok = alive()
                self._send(200 if ok else 503, b"ok\n" if ok else b"stopping\n")
            elif path == "/readyz":
                problems = ready()
                body = ("ok\n" if not problems else "\n".join(problems) + "\n").encode()
                self._send(503 if problems else 200, body)
            else:
                self._send(404, b"not found\n")

        def _send(self, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return  # probes every few seconds would flood the log

    return Handler
