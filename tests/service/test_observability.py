"""Logs (JSON off a TTY, rich on one, secrets redacted), metrics and the health endpoints."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.coordinators import OwnsOnly
from tests.support.services import metric
from writeback.config import Config, parse_config
from writeback.errors import RateLimited
from writeback.kube.pathtypes import Key
from writeback.kube.refs import ObjectRef
from writeback.model import Decision, Drift, EnsureResult, Op, Outcome, ResultReason
from writeback.service.logging import REDACTED, secret_values, setup_logging
from writeback.service.metrics import HealthServer, Metrics, Readiness
from writeback.service.serving import Service

WEB = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="shop", name="web")


def config(tmp_path: Path) -> Config:
    key_file = tmp_path / "gitlab-token"
    key_file.write_text("glpat-from-a-file-123456\n")
    return parse_config(
        {
            "targets": [
                {"name": "a", "repo_url": "https://x/a.git", "forge": {"kind": "github", "token": {"env": "WB_GH"}}},
                {"name": "b", "repo_url": "https://x/b.git",
                 "forge": {"kind": "gitlab", "token": {"file": str(key_file)}}},
            ]
        },
        source="test",
    )  # fmt: skip


def test_secret_values_come_from_every_secret_ref(tmp_path: Path) -> None:
    values = secret_values(config(tmp_path), environ={"WB_GH": "ghp_env_secret_abcdef"})
    assert {"ghp_env_secret_abcdef", "glpat-from-a-file-123456"} <= values


def test_json_lines_off_a_tty_with_every_secret_redacted(tmp_path: Path, root_logging: None) -> None:
    secrets = secret_values(config(tmp_path), environ={"WB_GH": "ghp_env_secret_abcdef"})
    stream = io.StringIO()
    setup_logging(secrets=secrets, stream=stream)
    log = logging.getLogger("writeback.test")
    log.info("pushing with %s", "https://x:ghp_env_secret_abcdef@host/r.git", extra={"target": "a"})
    log.warning("token glpat-from-a-file-123456 refused", extra={"detail": "ghp_env_secret_abcdef again"})
    try:
        raise RuntimeError("auth failed for glpat-from-a-file-123456")
    except RuntimeError:
        log.exception("cycle failed")
    out = stream.getvalue()
    assert "ghp_env_secret_abcdef" not in out and "glpat-from-a-file-123456" not in out
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["level"] for r in records] == ["info", "warning", "error"]
    assert records[0]["msg"] == f"pushing with https://x:{REDACTED}@host/r.git" and records[0]["target"] == "a"
    assert records[1]["detail"] == f"{REDACTED} again"
    assert "RuntimeError" in records[2]["exc"] and REDACTED in records[2]["exc"]
    assert all(r["ts"].endswith("Z") for r in records)


def test_readable_rich_lines_on_a_tty(root_logging: None) -> None:
    main, other = os.openpty()
    with os.fdopen(main, "r", errors="replace") as reader, os.fdopen(other, "w") as tty:
        assert tty.isatty()
        setup_logging(secrets={"s3cr3t-value"}, stream=tty)
        logging.getLogger("writeback.test").info("hello s3cr3t-value world")
        try:
            raise ValueError("bad token s3cr3t-value")
        except ValueError:
            logging.getLogger("writeback.test").exception("it failed")
        tty.flush()
        time.sleep(0.1)
        text = re.sub(r"\x1b\[[0-9;]*m", "", os.read(reader.fileno(), 65536).decode(errors="replace"))
    assert "hello" in text and "s3cr3t-value" not in text
    assert "ValueError: bad token [REDACTED]" in text  # the traceback, redacted
    assert not text.lstrip().startswith("{")  # not JSON


def test_metrics_by_target_and_persistent_drift() -> None:
    m = Metrics(persistent_cycles=3)
    drift = Drift(resource=WEB, path=(Key("spec"), Key("replicas")), op=Op.CHANGE, live=5, git=2)
    ignored = Drift(resource=WEB, path=(Key("status"),), op=Op.CHANGE, decision=Decision.IGNORE)
    for _ in range(2):
        m.drifts(target="a", drifts=[drift, ignored])
    sample = m.registry.get_sample_value
    assert sample("writeback_drift_fields", {"target": "a", "decision": "writeback"}) == 1
    assert sample("writeback_drift_fields", {"target": "a", "decision": "ignore"}) == 1
    assert sample("writeback_persistent_drift_fields", {"target": "a"}) == 0
    m.drifts(target="a", drifts=[drift])  # third cycle in a row: persistent
    assert sample("writeback_persistent_drift_fields", {"target": "a"}) == 1
    m.drifts(target="b", drifts=[drift])
    m.drifts(target="b", drifts=[])  # its PR merged: gone
    assert sample("writeback_persistent_drift_fields", {"target": "b"}) == 0
    m.drifts(target="b", drifts=[drift])  # ... and it came back
    assert sample("writeback_persistent_drift_fields", {"target": "b"}) == 1
    m.results(target="a", results=[EnsureResult(outcome=Outcome.CREATED, target="a")])
    m.error(target="a", error=TimeoutError("x"))
    m.api_request(target="a", verb="list")
    assert sample("writeback_pull_requests_total", {"target": "a", "outcome": "created"}) == 1
    assert sample("writeback_errors_total", {"target": "a", "kind": "TimeoutError"}) == 1
    assert sample("writeback_api_requests_total", {"target": "a", "verb": "list"}) == 1


def test_configured_targets_break_glass_and_rate_limits() -> None:
    m = Metrics()
    sample = m.registry.get_sample_value
    m.targets(periods={"a": 300.0, "b": 60.0})
    assert sample("writeback_schedule_interval_seconds", {"target": "a"}) == 300
    assert sample("writeback_cycles_total", {"target": "b", "result": "failed"}) == 0  # there before any cycle
    assert sample("writeback_forge_rate_limited_total", {"target": "b"}) == 0
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    overdue, running = now - timedelta(minutes=1), now + timedelta(hours=1)
    m.break_glass(target="a", expires=[running, overdue], now=now)
    assert sample("writeback_break_glass_active", {"target": "a"}) == 1
    assert sample("writeback_break_glass_expired", {"target": "a"}) == 1  # the overdue one only
    assert sample("writeback_break_glass_expires_timestamp_seconds", {"target": "a"}) == overdue.timestamp()
    m.break_glass(target="a", expires=[], now=now)  # ended: auto-sync restored
    assert sample("writeback_break_glass_active", {"target": "a"}) == 0
    assert sample("writeback_break_glass_expired", {"target": "a"}) == 0
    assert sample("writeback_break_glass_expires_timestamp_seconds", {"target": "a"}) is None
    limited = EnsureResult(outcome=Outcome.SKIPPED, target="a", detail="wait 3600s", reason=ResultReason.RATE_LIMITED)
    skipped = EnsureResult(outcome=Outcome.SKIPPED, target="a", detail="no change set")
    m.results(target="a", results=[limited, skipped])
    assert sample("writeback_forge_rate_limited_total", {"target": "a"}) == 1
    m.cycle_failed(target="a", seconds=1.0, error=RateLimited("GitHub rate limit while trying to get a token"))
    m.cycle_failed(target="a", seconds=1.0, error=TimeoutError("x"))
    assert sample("writeback_forge_rate_limited_total", {"target": "a"}) == 2
    assert sample("writeback_errors_total", {"target": "a", "kind": "RateLimited"}) == 1


def test_forget_drops_the_state_gauges_and_keeps_counters_and_the_last_success() -> None:
    m = Metrics(persistent_cycles=2)
    sample = m.registry.get_sample_value
    drift = Drift(resource=WEB, path=(Key("spec"), Key("replicas")), op=Op.CHANGE, live=5, git=2)
    m.targets(periods={"a": 60.0})
    m.drifts(target="a", drifts=[drift])
    m.drifts(target="a", drifts=[])  # gone: merged
    now = datetime(2026, 3, 1, tzinfo=UTC)
    m.break_glass(target="a", expires=[now], now=now)
    m.cycle_done(target="a", seconds=1.0, now=1000.0)
    m.forget(target="a")
    for name, labels in (
        ("writeback_drift_fields", {"target": "a", "decision": "writeback"}),
        ("writeback_persistent_drift_fields", {"target": "a"}),
        ("writeback_break_glass_active", {"target": "a"}),
        ("writeback_break_glass_expired", {"target": "a"}),
        ("writeback_break_glass_expires_timestamp_seconds", {"target": "a"}),
    ):
        assert sample(name, labels) is None, name
    assert sample("writeback_cycles_total", {"target": "a", "result": "ok"}) == 1
    assert sample("writeback_last_success_timestamp_seconds", {"target": "a"}) == 1000.0
    assert sample("writeback_schedule_interval_seconds", {"target": "a"}) == 60
    m.forget(target="a")  # twice: nothing left to drop, no error
    m.drifts(target="a", drifts=[drift])  # owned again: its history went with the old owner
    assert sample("writeback_persistent_drift_fields", {"target": "a"}) == 0


def test_a_replica_scrape_has_no_state_gauges_of_targets_another_replica_runs(tmp_path: Path) -> None:
    service = Service(config=config(tmp_path), workdir=tmp_path, ownership=OwnsOnly({"a"}))
    now = datetime.now(UTC)
    drift = Drift(resource=WEB, path=(Key("spec"), Key("replicas")), op=Op.CHANGE, live=5, git=2)
    for name in ("a", "b"):  # b ran here before its Lease moved
        service.metrics.drifts(target=name, drifts=[drift])
        service.metrics.break_glass(target=name, expires=[now - timedelta(hours=1)], now=now)
        service.metrics.cycle_done(target=name, seconds=1.0, now=1000.0)
    service.server.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{service.server.port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
    finally:
        service.server.stop()
    assert metric(text, "writeback_break_glass_expired", target="a") == 1
    assert metric(text, "writeback_drift_fields", target="a", decision="writeback") == 1
    assert 'target="b"' in text  # its counters, interval and last success stay
    assert metric(text, "writeback_last_success_timestamp_seconds", target="b") == 1000.0
    state = ("drift_fields", "persistent_drift_fields", "break_glass_active", "break_glass_expired")
    for name in (*state, "break_glass_expires_timestamp_seconds"):
        assert not re.search(rf'^writeback_{name}{{[^}}]*target="b"', text, re.M), name


def test_readiness_counts_intervals_per_target() -> None:
    r = Readiness(periods={"a": 10, "b": 60}, intervals=3, started=1000)
    last = {"a": 1000.0}
    assert r.check(last_success=last.get, now=1020) == []  # b is young: no cycle expected yet
    problems = r.check(last_success=last.get, now=1031)
    assert len(problems) == 1 and problems[0].startswith("a: last successful cycle 31s ago")
    assert [p.split(":")[0] for p in r.check(last_success=last.get, now=1200)] == ["a", "b"]


def test_one_server_for_metrics_healthz_and_readyz() -> None:
    m = Metrics()
    m.cycle_done(target="a", seconds=1.5, now=1234.0)
    problems: list[str] = []
    scrapes: list[float] = []
    server = HealthServer(
        address="127.0.0.1:0", metrics=m, ready=lambda: problems, alive=lambda: True,
        before_scrape=lambda: scrapes.append(time.monotonic()),
    )  # fmt: skip
    server.start()
    base = f"http://127.0.0.1:{server.port}"

    def get(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(base + path, timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    try:
        status, text = get("/metrics")
        assert status == 200 and 'writeback_last_success_timestamp_seconds{target="a"} 1234.0' in text
        assert get("/healthz") == (200, "ok\n")
        assert get("/readyz") == (200, "ok\n")
        problems.append("a: last successful cycle 99s ago")
        assert get("/readyz") == (503, "a: last successful cycle 99s ago\n")
        assert get("/nope")[0] == 404
        assert len(scrapes) == 1  # before /metrics only
    finally:
        server.stop()


def test_a_busy_address_is_a_config_error() -> None:
    from writeback.errors import ConfigError

    first = HealthServer(address="127.0.0.1:0", metrics=Metrics(), ready=list, alive=lambda: True)
    try:
        with pytest.raises(ConfigError, match=f"metrics.address 127.0.0.1:{first.port}: cannot listen"):
            HealthServer(address=f"127.0.0.1:{first.port}", metrics=Metrics(), ready=list, alive=lambda: True)
    finally:
        first.stop()
