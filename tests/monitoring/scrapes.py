"""Input series for `promtool test rules`, taken from writeback's real metrics registry.

A test drives real `Metrics` objects (one per replica) through a story minute by minute, on promtool's clock
(time 0 is the first scrape), and records after each minute what Prometheus would have scraped: every sample
of the registry, with the labels the ServiceMonitor adds (namespace, job, pod). A series that a replica stops
exporting (`Metrics.forget`) is marked stale, as Prometheus does.

    scrapes = Scrapes(minutes=60)
    for minute in scrapes.minutes():
        replica.metrics.cycle_done(target="shop", seconds=2.0, now=minute * 60)
        scrapes.record(minute=minute, replica=replica)
    scrapes.input_series()      # [{"series": 'writeback_cycles_total{...}', "values": "0 1 2 ..."}, ...]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from writeback.service.metrics import Metrics

NAMESPACE = "writeback"
JOB = "writeback-metrics"  # prometheus-operator's job label: the Service's name
START = "process_start_time_seconds"  # the real one is this test process's start, on the wall clock


@dataclass(kw_only=True)
class Replica:
    """One writeback pod: its own registry, and when it started on promtool's clock (seconds)."""

    pod: str
    started: float = 0.0
    metrics: Metrics = field(default_factory=Metrics)


def series_text(name: str, labels: dict[str, str]) -> str:
    def quoted(value: str) -> str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    return name + "{" + ",".join(f"{k}={quoted(v)}" for k, v in sorted(labels.items())) + "}"


class Scrapes:
    """What Prometheus stored from scraping the replicas once a minute."""

    def __init__(self, *, minutes: int) -> None:
        self._count = minutes + 1
        self._values: dict[str, list[float | None]] = {}
        self._pods: dict[str, str] = {}  # series -> the pod that exports it
        self._scraped: set[tuple[int, str]] = set()  # (minute, pod)

    def minutes(self) -> range:
        return range(self._count)

    def record(self, *, minute: int, replica: Replica) -> None:
        """One scrape of ``replica`` at ``minute``: the writeback_* samples and its start time."""
        labels = {"namespace": NAMESPACE, "job": JOB, "pod": replica.pod}
        self._scraped.add((minute, replica.pod))
        for name, sample_labels, value in _samples(replica):
            key = series_text(name, {**sample_labels, **labels})
            self._values.setdefault(key, [None] * self._count)[minute] = value
            self._pods[key] = replica.pod

    def input_series(self) -> list[dict[str, str]]:
        out = []
        for key, values in sorted(self._values.items()):
            words: list[str] = []
            exported = False
            for minute, value in enumerate(values):
                if value is not None:
                    words.append(repr(value))
                    exported = True
                elif exported and (minute, self._pods[key]) in self._scraped:
                    words.append("stale")  # scraped, and the series was gone
                    exported = False
                else:
                    words.append("_")
            out.append({"series": key, "values": " ".join(words)})
        return out


def _samples(replica: Replica) -> Iterator[tuple[str, dict[str, str], float]]:
    for family in replica.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == START:
                yield sample.name, dict(sample.labels), replica.started
            elif sample.name.startswith("writeback_") and not sample.name.endswith("_created"):
                yield sample.name, dict(sample.labels), float(sample.value)


def unit_test_file(*, rule_file: str, scrapes: Scrapes, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """A promtool rule unit test file: one test, the series scraped once a minute, the alert cases."""
    return {
        "rule_files": [rule_file],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": scrapes.input_series(), "alert_rule_test": cases}],
    }
