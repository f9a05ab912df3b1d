"""deploy/monitoring/prometheusrule.yaml, checked and unit-tested by the real promtool.

Each story drives real `Metrics` registries (one per replica) minute by minute and feeds what Prometheus would
have scraped to `promtool test rules`: each alert fires on the series that should fire it, at the time its
`for:` allows, with the labels and text on-call gets, and stays quiet on the ones that should not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring.promtool import Promtool
from tests.monitoring.scrapes import JOB, NAMESPACE, Replica, Scrapes, unit_test_file
from tests.monitoring.support import ROOT, alerts, exported_names, metric_names, write_rule_file
from writeback.kube.pathtypes import Key
from writeback.kube.refs import ObjectRef
from writeback.model import Decision, Drift, EnsureResult, Op, Outcome, ResultReason
from writeback.service.metrics import Metrics

pytestmark = pytest.mark.promtool

RUNBOOK = "https://github.com/your-org/writeback/blob/main/"
WEB = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="shop", name="web")
REPLICAS = Drift(resource=WEB, path=(Key("spec"), Key("replicas")), op=Op.CHANGE, live=5, git=2)
STATUS = Drift(resource=WEB, path=(Key("status"),), op=Op.CHANGE, decision=Decision.IGNORE)


@pytest.fixture(scope="module")
def rule_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_rule_file(tmp_path_factory.mktemp("rules"))


def test_promtool_accepts_the_rules_with_every_lint(promtool: Promtool, rule_file: Path) -> None:
    done = promtool.run("check", "rules", "--lint=all", "--lint-fatal", str(rule_file))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in done.stdout


def test_promtool_rejects_a_broken_rule(promtool: Promtool, tmp_path: Path) -> None:
    """The check above can fail: the same rules with one expression broken do not pass."""
    groups = yaml.safe_load(write_rule_file(tmp_path).read_text())
    groups["groups"][0]["rules"][0]["expr"] = "max by (target) (writeback_persistent_drift_fields > 0"
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(groups))
    done = promtool.run("check", "rules", str(broken))
    assert done.returncode != 0 and "unclosed left parenthesis" in done.stdout + done.stderr


def _headings(markdown: str) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    anchors = set()
    for line in markdown.splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return anchors


def test_every_alert_waits_has_a_severity_text_and_a_runbook_section_in_the_docs() -> None:
    for rule in alerts():
        name = rule["alert"]
        assert re.fullmatch(r"\d+[mh]", rule["for"]) and not rule["for"].startswith("0"), name
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        notes = rule["annotations"]
        assert "{{ $labels.target }}" in notes["summary"] and len(notes["description"]) > 80, name
        url = notes["runbook_url"]
        assert url.startswith(RUNBOOK), name
        doc, _, anchor = url.removeprefix(RUNBOOK).partition("#")
        assert anchor == name.lower(), name
        assert anchor in _headings((ROOT / doc).read_text()), f"{name}: no heading #{anchor} in {doc}"
    assert {r["alert"] for r in alerts()} == {
        "WritebackPersistentDrift", "WritebackBreakGlassOverdue", "WritebackCyclesFailing",
        "WritebackNoSuccessfulCycle", "WritebackForgeRateLimited",
    }  # fmt: skip


def test_the_rules_use_only_metrics_writeback_exports() -> None:
    exported = exported_names()
    for rule in alerts():
        used = metric_names(rule["expr"])
        assert used and used <= exported, f"{rule['alert']}: {sorted(used - exported)} not in writeback's registry"


# ---------------------------------------------------------------- the stories


def fired(alert: str, target: str, *, value: str = "1") -> dict[str, Any]:
    """The alert as on-call gets it (the rule's text, rendered for this target and value)."""
    rule = next(r for r in alerts() if r["alert"] == alert)
    text = {
        "WritebackPersistentDrift": (
            f"Drift on writeback target {target} keeps coming back",
            f"{value} drifted field(s) of target {target} came back after their pull request merged, or are still "
            "there after metrics.persistent_cycles cycles: something keeps changing the live objects. The PR "
            "comment and `writeback diff` name the fields.",
        ),
        "WritebackBreakGlassOverdue": (
            f"Break-glass on writeback target {target} is past its TTL, auto-sync still suspended",
            f"{value} break-glass record(s) of target {target} expired, but the backport pull request could not "
            "be ensured, so Argo CD / Flux auto-sync stays suspended. writeback retries every cycle; the reason "
            'is in its logs and in writeback_errors_total{kind="BreakGlassSuspended"}.',
        ),
        "WritebackCyclesFailing": (
            f"Every cycle of writeback target {target} fails",
            f"The cycles of target {target} have failed for at least 15 minutes and none succeeded in the last "
            f'30: its drift is not written back. writeback_errors_total{{target="{target}"}} by kind and the logs '
            "(field target) say why.",
        ),
        "WritebackNoSuccessfulCycle": (
            f"No successful cycle of writeback target {target} in 3 intervals",
            f"Target {target} has had no successful cycle for {value}, more than 3 of its schedule intervals: "
            "its drift and its break-glass expiry go unchecked. WritebackCyclesFailing, /readyz and the logs "
            "say why.",
        ),
        "WritebackForgeRateLimited": (
            f"The forge keeps rate-limiting writeback target {target}",
            f"For 30 minutes the forge of target {target} has kept asking writeback to wait longer than "
            "forge.max_wait_seconds, so the target's pull requests are skipped until a later cycle.",
        ),
    }[alert]
    summary, description = text
    runbook = rule["annotations"]["runbook_url"]
    return {
        "exp_labels": {"severity": rule["labels"]["severity"], "namespace": NAMESPACE, "job": JOB, "target": target},
        "exp_annotations": {"summary": summary, "description": description, "runbook_url": runbook},
    }


def at(minute: int) -> datetime:
    return datetime.fromtimestamp(minute * 60, UTC)


def persistent_drift() -> tuple[Scrapes, list[dict[str, Any]]]:
    a = Replica(pod="writeback-a", metrics=Metrics(persistent_cycles=3))
    scrapes = Scrapes(minutes=50)
    for minute in scrapes.minutes():  # one cycle of every target a minute
        a.metrics.drifts(target="shop", drifts=[REPLICAS, STATUS])  # never written back: persistent at cycle 3
        a.metrics.drifts(target="cart", drifts=[REPLICAS] if not 6 <= minute < 10 else [])  # merged, came back
        a.metrics.drifts(target="calm", drifts=[REPLICAS] if minute < 2 else [STATUS])  # merged, stays merged
        scrapes.record(minute=minute, replica=a)
    alert = "WritebackPersistentDrift"
    return scrapes, [
        {"eval_time": "31m", "alertname": alert, "exp_alerts": []},  # shop: pending since 2m
        {"eval_time": "32m", "alertname": alert, "exp_alerts": [fired(alert, "shop")]},
        {"eval_time": "45m", "alertname": alert, "exp_alerts": [fired(alert, "shop"), fired(alert, "cart")]},
    ]


def break_glass_overdue() -> tuple[Scrapes, list[dict[str, Any]]]:
    a, b = Replica(pod="writeback-a"), Replica(pod="writeback-b")
    scrapes = Scrapes(minutes=60)
    for minute in scrapes.minutes():
        now = at(minute)
        a.metrics.break_glass(target="shop", expires=[at(10)], now=now)  # its backport PR is never ensured
        a.metrics.break_glass(target="cart", expires=[at(10)] if minute < 12 else [], now=now)  # ended at 12m
        a.metrics.break_glass(target="held", expires=[at(120)], now=now)  # still within its TTL
        if minute < 5:  # overdue on a, until its Lease moved to b, which ends it
            a.metrics.break_glass(target="moved", expires=[at(-30)], now=now)
        else:
            a.metrics.forget(target="moved")  # what a's scrape does for a target it no longer owns
            b.metrics.break_glass(target="moved", expires=[], now=now)
        scrapes.record(minute=minute, replica=a)
        scrapes.record(minute=minute, replica=b)
    alert = "WritebackBreakGlassOverdue"
    return scrapes, [
        {"eval_time": "24m", "alertname": alert, "exp_alerts": []},
        {"eval_time": "25m", "alertname": alert, "exp_alerts": [fired(alert, "shop")]},
        {"eval_time": "60m", "alertname": alert, "exp_alerts": [fired(alert, "shop")]},
    ]


def cycles_failing() -> tuple[Scrapes, list[dict[str, Any]]]:
    a = Replica(pod="writeback-a")
    a.metrics.targets(periods={name: 60 for name in ("down", "flaky", "good", "recovered")})
    scrapes = Scrapes(minutes=45)
    for minute in scrapes.minutes():
        ok = {"down": False, "flaky": minute % 2 == 0, "good": True, "recovered": minute > 20}
        for target, succeeded in ok.items():
            if succeeded:
                a.metrics.cycle_done(target=target, seconds=2.0, now=minute * 60)
            else:
                a.metrics.cycle_failed(target=target, seconds=2.0, error=TimeoutError("forge timed out"))
        scrapes.record(minute=minute, replica=a)
    alert = "WritebackCyclesFailing"
    return scrapes, [
        {"eval_time": "15m", "alertname": alert, "exp_alerts": []},  # pending since 1m (the second failure)
        {"eval_time": "16m", "alertname": alert, "exp_alerts": [fired(alert, "down"), fired(alert, "recovered")]},
        {"eval_time": "40m", "alertname": alert, "exp_alerts": [fired(alert, "down")]},
    ]


def no_successful_cycle() -> tuple[Scrapes, list[dict[str, Any]]]:
    a, b = Replica(pod="writeback-a"), Replica(pod="writeback-b")
    periods = {"good": 60.0, "stuck": 60.0, "never": 60.0, "moved": 60.0, "slow": 600.0}
    for replica in (a, b):
        replica.metrics.targets(periods=periods)  # every replica knows every target
    scrapes = Scrapes(minutes=30)
    for minute in scrapes.minutes():
        now = minute * 60.0
        a.metrics.cycle_done(target="good", seconds=1.0, now=now)
        if minute <= 10:
            a.metrics.cycle_done(target="stuck", seconds=1.0, now=now)  # then its cycles hang
        a.metrics.cycle_failed(target="never", seconds=1.0, error=TimeoutError("forge timed out"))
        if minute <= 5:  # then its Lease moves to b
            a.metrics.cycle_done(target="moved", seconds=1.0, now=now)
        else:
            b.metrics.cycle_done(target="moved", seconds=1.0, now=now)
        if minute in (0, 20):
            b.metrics.cycle_done(target="slow", seconds=1.0, now=now)  # every 10 minutes is its schedule
        scrapes.record(minute=minute, replica=a)
        scrapes.record(minute=minute, replica=b)
    alert = "WritebackNoSuccessfulCycle"
    return scrapes, [
        {"eval_time": "8m", "alertname": alert, "exp_alerts": []},  # never: pending since 4m (> 3 x 60 s)
        {"eval_time": "9m", "alertname": alert, "exp_alerts": [fired(alert, "never", value="9m 0s")]},
        {"eval_time": "18m", "alertname": alert, "exp_alerts": [fired(alert, "never", value="18m 0s")]},
        {"eval_time": "19m", "alertname": alert,
         "exp_alerts": [fired(alert, "never", value="19m 0s"), fired(alert, "stuck", value="9m 0s")]},
    ]  # fmt: skip


def forge_rate_limited() -> tuple[Scrapes, list[dict[str, Any]]]:
    a = Replica(pod="writeback-a")
    a.metrics.targets(periods={"limited": 300.0, "once": 300.0, "fine": 300.0})
    limited = EnsureResult(outcome=Outcome.SKIPPED, target="", detail="rate limit", reason=ResultReason.RATE_LIMITED)
    created = EnsureResult(outcome=Outcome.CREATED, target="")
    scrapes = Scrapes(minutes=50)
    for minute in scrapes.minutes():
        if minute % 5 == 0:  # a cycle every 5 minutes
            a.metrics.results(target="limited", results=[limited])
            a.metrics.results(target="once", results=[limited if minute == 10 else created])
            a.metrics.results(target="fine", results=[created])
        scrapes.record(minute=minute, replica=a)
    alert = "WritebackForgeRateLimited"
    return scrapes, [
        {"eval_time": "34m", "alertname": alert, "exp_alerts": []},  # pending since 5m (the second limit)
        {"eval_time": "35m", "alertname": alert, "exp_alerts": [fired(alert, "limited")]},
        {"eval_time": "50m", "alertname": alert, "exp_alerts": [fired(alert, "limited")]},
    ]


STORIES: dict[str, Callable[[], tuple[Scrapes, list[dict[str, Any]]]]] = {
    "persistent drift": persistent_drift,
    "break-glass overdue": break_glass_overdue,
    "cycles failing": cycles_failing,
    "no successful cycle": no_successful_cycle,
    "forge rate limited": forge_rate_limited,
}


@pytest.mark.parametrize("story", STORIES)
def test_the_alert_fires_on_the_series_that_should_fire_it_and_only_then(
    story: str, promtool: Promtool, rule_file: Path, tmp_path: Path
) -> None:
    scrapes, cases = STORIES[story]()
    tests = tmp_path / "tests.yaml"
    tests.write_text(yaml.safe_dump(unit_test_file(rule_file=str(rule_file), scrapes=scrapes, cases=cases)))
    done = promtool.run("test", "rules", str(tests))
    assert done.returncode == 0, f"promtool test rules {tests}:\n{done.stdout}{done.stderr}"
    assert "SUCCESS" in done.stdout + done.stderr
