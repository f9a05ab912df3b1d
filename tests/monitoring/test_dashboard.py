"""deploy/monitoring/dashboard.json: valid JSON, the panels the issue asks for, every query valid PromQL (the real
Prometheus parser, through promtool) and selecting only metrics that writeback's registry exports."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.monitoring.promtool import Promtool
from tests.monitoring.support import dashboard, dashboard_queries, exported_names, metric_names, panels
from writeback.kube.pathtypes import Key
from writeback.kube.refs import ObjectRef
from writeback.model import Decision, Drift, EnsureResult, Op, Outcome
from writeback.service.metrics import Metrics

pytestmark = pytest.mark.promtool


def test_the_dashboard_parses_and_its_panels_are_laid_out_once_each() -> None:
    board = dashboard()
    assert board["uid"] == "writeback" and board["title"] and isinstance(board["schemaVersion"], int)
    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    cells: set[tuple[int, int]] = set()
    for panel in panels(board):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        columns, rows = range(grid["x"], grid["x"] + grid["w"]), range(grid["y"], grid["y"] + grid["h"])
        mine = {(x, y) for x in columns for y in rows}
        assert not mine & cells, f"panel {panel['title']!r} overlaps another"
        cells |= mine
        if panel["type"] != "row":
            assert panel["targets"] and panel["datasource"]["uid"] == "${datasource}", panel["title"]
            assert len({t["refId"] for t in panel["targets"]}) == len(panel["targets"]), panel["title"]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus" and variables["target"]["multi"] is True


def test_every_query_selects_only_metrics_writeback_exports() -> None:
    exported = exported_names()
    queries = dashboard_queries(dashboard())
    used: set[str] = set()
    for where, query in queries:
        names = metric_names(query)
        assert names, f"{where}: selects no metric: {query}"
        assert names <= exported, f"{where}: {sorted(names - exported)} not in writeback's registry"
        used |= names
    # drift by target and decision, PRs by outcome, cycle time, break-glass state
    wanted = {
        "writeback_drift_fields", "writeback_pull_requests_total", "writeback_cycle_duration_seconds_bucket",
        "writeback_break_glass_active", "writeback_break_glass_expired", "writeback_last_success_timestamp_seconds",
    }  # fmt: skip
    assert wanted <= used, sorted(wanted - used)
    by_target_and_decision = [q for _, q in queries if "writeback_drift_fields" in q]
    assert any("by (target, decision)" in q for q in by_target_and_decision)
    assert any("by (outcome)" in q or "by (target, outcome)" in q for _, q in queries if "pull_requests" in q)


def test_the_checker_catches_a_metric_writeback_does_not_export() -> None:
    """The name check above can fail: a misspelt metric is not in the registry."""
    assert metric_names('sum(rate(writeback_cycle_total{result="ok"}[5m]))') == {"writeback_cycle_total"}
    assert "writeback_cycle_total" not in exported_names()
    assert "writeback_cycles_total" in exported_names()


def test_the_registry_names_are_what_a_real_scrape_shows() -> None:
    """exported_names reads the collectors without samples; a scrape after every kind of event agrees with it."""
    m = Metrics()
    web = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="shop", name="web")
    m.targets(periods={"a": 60.0})
    m.drifts(target="a", drifts=[Drift(resource=web, path=(Key("spec"),), op=Op.CHANGE, decision=Decision.FLAG)])
    m.results(target="a", results=[EnsureResult(outcome=Outcome.CREATED, target="a")])
    m.cycle_done(target="a", seconds=1.0)
    m.cycle_failed(target="a", seconds=1.0, error=TimeoutError())
    m.api_request(target="a", verb="list")
    m.hotfixes.labels(target="a").inc()
    m.recomputed(target="a", objects=3)
    m.break_glass(target="a", expires=[datetime.now(UTC)], now=datetime.now(UTC))
    scraped = {
        sample.name
        for family in text_string_to_metric_families(generate_latest(m.registry).decode())
        for sample in family.samples
    }
    names = exported_names(m)
    assert scraped <= names, sorted(scraped - names)
    assert {n for n in names if n.startswith("writeback_") and not n.endswith("_created")} <= scraped


def test_promtool_parses_every_dashboard_query(promtool: Promtool, tmp_path: Path) -> None:
    queries = dashboard_queries(dashboard())
    rules = [{"record": f"writeback:dashboard:query{i}", "expr": q} for i, (_, q) in enumerate(queries)]
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    done = promtool.run("check", "rules", str(path))
    where = "\n".join(f"query{i}: {w}" for i, (w, _) in enumerate(queries))
    assert done.returncode == 0, f"{done.stdout}{done.stderr}\n{where}"
    assert f"SUCCESS: {len(queries)} rules found" in done.stdout
