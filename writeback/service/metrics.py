"""Prometheus metrics, and one HTTP server for /metrics, /healthz and /readyz.

Labels carry only target names, decisions, outcomes, verbs and error kinds (class names): never a value
from a resource, a URL with credentials or a token.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from writeback.errors import ConfigError
from writeback.model import Decision, Drift, EnsureResult

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

    def break_glass_waiting(self, *, target: str, active: int, expired_waiting: int) -> None:
        """The break-glass gauges of one target after its sweep: records in place, and those past their TTL still
        waiting for their backport PR to merge."""
        self.break_glass_active.labels(target=target).set(1 if active else 0)
        self.break_glass_expired_waiting.labels(target=target).set(expired_waiting)

    def api_request(self, *, target: str, verb: str) -> None:
        self.api_requests.labels(target=target, verb=verb).inc()

    def error(self, *, target: str, error: BaseException | str) -> None:
        kind = error if isinstance(error, str) else type(error).__name__
        self.errors.labels(target=target, kind=kind).inc()

    def cycle_failed(self, *, target: str, seconds: float, error: BaseException) -> None:
        self.cycle_seconds.labels(target=target).observe(seconds)
        self.cycles.labels(target=target, result="failed").inc()
        self.error(target=target, error=error)

    def cycle_done(self, *, target: str, seconds: float, now: float | None = None) -> None:
        self.cycle_seconds.labels(target=target).observe(seconds)
        self.cycles.labels(target=target, result="ok").inc()
        self.last_success.labels(target=target).set(time.time() if now is None else now)

    def results(self, *, target: str, results: Iterable[EnsureResult]) -> None:
        """One count per pull request outcome (created, updated, unchanged, closed, skipped, failed)."""
        for result in results:
            self.pull_requests.labels(target=target, outcome=str(result.outcome)).inc()

    def drifts(self, *, target: str, drifts: Iterable[Drift]) -> None:
        """The drift gauges of one cycle: fields by decision, and persistent drift."""
        self._drifts(target=target, drifts=list(drifts))

    def _drifts(self, *, target: str, drifts: list[Drift]) -> None:
        counts = {str(d): 0 for d in Decision}
        for d in drifts:
            counts[str(d.decision)] += 1
        for decision, n in counts.items():
            self.drift_fields.labels(target=target, decision=decision).set(n)
        keys = {_key(d) for d in drifts if d.decision in (Decision.WRITEBACK, Decision.FLAG)}
        with self._lock:
            before = self._seen.get(target, {})
            merged = self._merged.setdefault(target, set())
            merged.update(k for k in before if k not in keys)  # gone: its PR merged (or it was reverted)
            now = {k: before.get(k, 0) + 1 for k in keys}
            self._seen[target] = now
            persistent = sum(1 for k, n in now.items() if n >= self._persistent_cycles or k in merged)
        self.persistent_drift.labels(target=target).set(persistent)


def _key(d: Drift) -> tuple[str, str]:
    from writeback.paths import format_path

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
        self, *, address: str, metrics: Metrics, ready: Callable[[], list[str]], alive: Callable[[], bool]
    ) -> None:
        host, _, port = address.rpartition(":")
        handler = _handler(metrics=metrics, ready=ready, alive=alive)
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
    *, metrics: Metrics, ready: Callable[[], list[str]], alive: Callable[[], bool]
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
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
