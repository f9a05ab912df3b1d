"""deploy/monitoring/ as the tests read it, and the metric names writeback's registry exports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import promql_parser
import yaml

from writeback.service.metrics import Metrics

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
RULE = MONITORING / "prometheusrule.yaml"
DASHBOARD = MONITORING / "dashboard.json"

# The series each metric type puts into the text exposition format (prometheus_client writes these).
_SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
    "info": ("_info",),
    "stateset": ("",),
    "unknown": ("",),
}


def exported_names(metrics: Metrics | None = None) -> set[str]:
    """Every series name in writeback's registry: read from the collectors of a real ``Metrics``."""
    registry = (metrics or Metrics()).registry
    return {family.name + suffix for family in registry.collect() for suffix in _SUFFIXES[family.type]}


def rule_groups() -> dict[str, Any]:
    """The PrometheusRule's spec: a Prometheus rule file (``groups:``)."""
    resource = yaml.safe_load(RULE.read_text())
    assert resource["apiVersion"] == "monitoring.coreos.com/v1" and resource["kind"] == "PrometheusRule"
    spec: dict[str, Any] = resource["spec"]
    return spec


def alerts() -> list[dict[str, Any]]:
    return [r for g in rule_groups()["groups"] for r in g["rules"] if "alert" in r]


def write_rule_file(directory: Path) -> Path:
    path = directory / "writeback-rules.yaml"
    path.write_text(yaml.safe_dump(rule_groups(), sort_keys=False))
    return path


def metric_names(expr: str) -> set[str]:
    """The metric names an expression selects (``name{...}`` and ``{__name__="name"}``), by the PromQL parser."""
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            if node.name:
                names.add(node.name)
            names.update(m.value for m in node.matchers.matchers if m.name == "__name__")

    promql_parser.walk(promql_parser.parse(expr), visit)
    return names


# Grafana's variables, as a query sends them to Prometheus (a multi-value $target is a regex)
_GRAFANA = {"$__rate_interval": "2m", "$__range": "6h", "$__interval": "1m", "$namespace": "writeback", "$target": ".*"}
_LABEL_VALUES = re.compile(r"^label_values\((?:(?P<selector>.+),\s*)?(?P<label>[a-zA-Z_]\w*)\)$")


def grafana_to_promql(query: str) -> str:
    """A dashboard query with Grafana's variables filled in; ``label_values(SELECTOR, label)`` -> SELECTOR."""
    for variable, value in sorted(_GRAFANA.items(), key=lambda kv: -len(kv[0])):
        query = query.replace(variable, value)
    match = _LABEL_VALUES.match(query.strip())
    if match:
        selector = match.group("selector")
        assert selector, f"label_values without a metric selects every series: {query}"
        return selector
    return query


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def panels(board: dict[str, Any]) -> Iterable[dict[str, Any]]:
    for panel in board["panels"]:
        yield panel
        yield from panel.get("panels", [])  # a collapsed row holds its panels


def dashboard_queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and every query variable."""
    out = []
    for panel in panels(board):
        for target in panel.get("targets", []):
            out.append((f"panel {panel['title']!r} {target['refId']}", grafana_to_promql(target["expr"])))
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            text = query["query"] if isinstance(query, dict) else query
            out.append((f"variable {variable['name']!r}", grafana_to_promql(text)))
    return out
