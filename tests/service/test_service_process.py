"""A real `writeback run --config FILE` process on the real control plane.

Four targets: `good` (GitHub fake, a short interval), `down` (its forge refuses connections), `hot` (a long
interval: only a captured hotfix makes it run) and `limited` (its forge asks for an hour's wait: rate limited).
The process runs cycles on schedule, serves /metrics, /healthz and /readyz, keeps going while `down` fails,
counts the rate limits of `limited`, captures a hotfix that the GitOps controller reverts and opens its PR
saying so, and exits 0 on SIGTERM with nothing left behind.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fakes.github_fake import (
    TOKEN,  # the fake's token: it must never show up in a log line
    GitHubFake,
)
from tests.support.gitrepos import seed_bare
from tests.support.polling import wait_until
from tests.support.services import free_port, metric, start_writeback, stop_writeback, stopped_records

pytestmark = pytest.mark.controlplane


def cm_manifest(namespace: str, name: str, value: str) -> str:
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
        f"  labels:\n    app: {name}\ndata:\n  setting: {value}  # reviewed value\n"
    )


def make_repo(tmp_path: Path, name: str, manifest: str) -> Path:
    bare = tmp_path / f"{name}.git"
    seed_bare(bare, tmp_path / f"{name}-seed", {"apps/config.yaml": manifest})
    return bare


def gitops_apply(controlplane: Any, manifest: str) -> None:
    controlplane.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=argocd-controller", "-f", "-", input=manifest
    )


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def target(name: str, *, namespace: str, bare: Path, forge_url: str, interval: float) -> dict[str, Any]:
    return {
        "name": name,
        "cluster": "test",
        "selectors": [
            {"apiVersion": "v1", "kind": "ConfigMap", "namespaces": [namespace], "labelSelector": f"app={name}"}
        ],
        "repo_url": str(bare),
        "path": "apps",
        "forge": {"kind": "github", "url": forge_url, "project": "octo-org/gitops", "token": {"env": "WB_TEST_TOKEN"},
                  "max_wait_seconds": 1},
        "schedule": {"interval_seconds": interval, "jitter_seconds": 0, "retry_initial_seconds": 1,
                     "retry_max_seconds": 2},
    }  # fmt: skip


@dataclass(kw_only=True)
class Service:
    """`writeback run` over the four targets of the module docstring, their ConfigMaps applied by 'Argo CD' and a
    person's change on `good`, `down` and `limited` made before it started."""

    controlplane: Any
    namespace: str
    tmp_path: Path
    fakes: dict[str, GitHubFake]  # good, hot, limited
    base: str  # http://127.0.0.1:PORT
    proc: subprocess.Popen[bytes]
    log: Path

    def scraped(self) -> str:
        return get(f"{self.base}/metrics")[1]

    def wait(self, what: str, predicate: Callable[[], object], *, timeout: float) -> None:
        wait_until(what, predicate, timeout=timeout, process=self.proc, stderr=self.log)

    def stop(self) -> list[dict[str, Any]]:
        """SIGTERM: it exits 0 and its log never holds the token; its log records (not a TTY: every line is
        JSON)."""
        return stopped_records(self.proc, self.log, secret=TOKEN)


@pytest.fixture
def service(controlplane: Any, namespace: str, tmp_path: Path) -> Iterator[Service]:
    names = ("good", "down", "hot", "limited")
    for name in names:
        gitops_apply(controlplane, cm_manifest(namespace, name, "v1"))
    # the person's 3 AM change on `good`, `down` and `limited`, before the service starts
    for name in ("good", "down", "limited"):
        controlplane.kubectl("patch", "configmap", name, "-n", namespace, "-p", '{"data":{"setting":"v2"}}')

    repos = {n: make_repo(tmp_path, n, cm_manifest(namespace, n, "v1")) for n in names}
    fakes = {n: GitHubFake(bare=repos[n]) for n in ("good", "hot", "limited")}
    for fake in fakes.values():
        fake.start()
    fakes["limited"].inject(429, headers={"Retry-After": "3600"}, times=10_000)  # an hour: past max_wait_seconds
    port = free_port()
    config = {
        "clusters": [{"name": "test", "kubeconfig": controlplane.kubeconfig, "context": "writeback-test"}],
        "targets": [
            target("good", namespace=namespace, bare=repos["good"], forge_url=fakes["good"].url, interval=2),
            target("down", namespace=namespace, bare=repos["down"], forge_url=f"http://127.0.0.1:{free_port()}",
                   interval=2),
            target("hot", namespace=namespace, bare=repos["hot"], forge_url=fakes["hot"].url, interval=3600),
            target("limited", namespace=namespace, bare=repos["limited"], forge_url=fakes["limited"].url,
                   interval=2),
        ],
        "metrics": {"address": f"127.0.0.1:{port}", "ready_intervals": 3},
        "watch": {"debounce_seconds": 1},
        "state_dir": str(tmp_path / "state"),
        "shutdown_grace_seconds": 20,
    }  # fmt: skip
    proc, log = start_writeback(config, workdir=tmp_path, env={"WB_TEST_TOKEN": TOKEN})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until("/healthz", lambda: get_quiet(f"{base}/healthz") == 200, timeout=30, process=proc, stderr=log)
        yield Service(controlplane=controlplane, namespace=namespace, tmp_path=tmp_path, fakes=fakes, base=base,
                      proc=proc, log=log)  # fmt: skip
    finally:
        try:
            if proc.poll() is None:
                stop_writeback(proc, timeout=40)
        finally:
            for fake in fakes.values():
                fake.stop()


def test_targets_run_on_schedule_and_a_dead_forge_never_blocks_the_others(service: Service) -> None:
    """`good` runs on schedule and opens its PR; `down` fails and is retried, never blocking `good`; /metrics says
    so, with every series there from the start."""
    service.wait(
        "three good cycles",
        lambda: metric(service.scraped(), "writeback_cycles_total", target="good", result="ok") >= 3,
        timeout=90,
    )
    service.wait(
        "two failed cycles of down",
        lambda: metric(service.scraped(), "writeback_cycles_total", target="down", result="failed") >= 2,
        timeout=60,
    )
    text = service.scraped()
    assert [pr["title"] for pr in service.fakes["good"].prs.values()], "good opened no PR"
    assert metric(text, "writeback_pull_requests_total", target="good", outcome="created") == 1
    assert metric(text, "writeback_pull_requests_total", target="good", outcome="unchanged") >= 1
    assert metric(text, "writeback_drift_fields", target="good", decision="writeback") >= 1
    assert metric(text, "writeback_errors_total", target="down") >= 2
    assert metric(text, "writeback_last_success_timestamp_seconds", target="good") > time.time() - 60
    assert metric(text, "writeback_last_success_timestamp_seconds", target="down") == 0
    assert metric(text, "writeback_cycle_duration_seconds_count", target="good") >= 3
    # the watch cache: one list for the target's kind, then warm cycles list nothing
    assert metric(text, "writeback_api_requests_total", target="good", verb="list") == 1
    assert metric(text, "writeback_api_requests_total", target="good", verb="watch") >= 1
    # the kept results (pipeline.warming): the first cycle's dry-run create and its PR's verification (a
    # dry-run apply and a get) are not sent again, and warm cycles compute no object
    assert metric(text, "writeback_api_requests_total", target="good", verb="create") == 1
    assert metric(text, "writeback_api_requests_total", target="good", verb="patch") == 1
    assert metric(text, "writeback_cycle_objects_recomputed", target="good") == 0
    assert metric(text, "writeback_objects_recomputed_total", target="good") == 1
    assert TOKEN not in text
    assert exported(text, "writeback_forge_rate_limited_total", target="good")  # there from the start, at 0
    assert exported(text, "writeback_cycles_total", target="hot", result="failed")
    assert metric(text, "writeback_schedule_interval_seconds", target="hot") == 3600
    assert metric(text, "process_start_time_seconds") > time.time() - 600
    records = service.stop()
    assert any(r.get("target") == "down" and r["level"] == "error" for r in records)


def test_a_rate_limited_forge_skips_the_pr_work_each_cycle_counted_for_the_alert(service: Service) -> None:
    """`limited`: its forge asks for an hour's wait, past max_wait_seconds."""
    service.wait(
        "two rate limits of limited",
        lambda: metric(service.scraped(), "writeback_forge_rate_limited_total", target="limited") >= 2,
        timeout=60,
    )
    assert metric(service.scraped(), "writeback_pull_requests_total", target="limited", outcome="skipped") >= 2
    service.stop()


def test_readyz_names_the_target_that_never_succeeded_within_its_intervals(service: Service) -> None:
    """`down` never succeeded within 3 intervals (6 s): /readyz is 503 naming it, not `good`."""
    service.wait("/readyz 503", lambda: get(f"{service.base}/readyz")[0] == 503, timeout=30)
    status, body = get(f"{service.base}/readyz")
    assert status == 503 and "down:" in body and "good:" not in body
    service.stop()


def test_a_hotfix_the_controller_reverts_at_once_still_gets_its_pr_saying_so(service: Service) -> None:
    """`hot` (an hour's interval: only a captured hotfix makes it run): a person edits, the GitOps controller reverts
    at once; the PR still comes, saying so."""
    namespace = service.namespace

    # its informer is warmed up in the background after start, and its first (scheduled) cycle runs at start: the
    # edit must come once it watches and that cycle is over, or that cycle reads the edit before it is reverted
    def ready() -> bool:
        text = service.scraped()
        watching = metric(text, "writeback_api_requests_total", target="hot", verb="watch") >= 1
        return watching and metric(text, "writeback_cycle_duration_seconds_count", target="hot") >= 1

    service.wait("the watch of hot's ConfigMaps and its first cycle", ready, timeout=30)
    service.controlplane.kubectl("patch", "configmap", "hot", "-n", namespace, "-p", '{"data":{"setting":"hotfix"}}')
    gitops_apply(service.controlplane, cm_manifest(namespace, "hot", "v1"))
    live = json.loads(service.controlplane.kubectl("get", "cm", "hot", "-n", namespace, "-o", "json").stdout)
    assert live["data"]["setting"] == "v1"
    service.wait("the hotfix PR", lambda: bool(service.fakes["hot"].prs), timeout=60)
    [pr] = service.fakes["hot"].prs.values()
    assert "Already reverted in the cluster" in pr["body"] and "argocd-controller" in pr["body"]
    assert "kubectl-patch" in pr["body"] and "break-glass" in pr["body"]
    assert list((service.tmp_path / "state" / "hotfixes").glob("hot__*.json"))
    assert metric(service.scraped(), "writeback_hotfixes_captured_total", target="hot") == 1
    service.stop()


def test_sigterm_stops_it_cleanly_with_nothing_left_behind(service: Service) -> None:
    """Exit 0 on SIGTERM after some cycles: no process of its group (git, ssh) left, its port closed, and it logs
    that it stopped."""
    service.wait(
        "a good cycle",
        lambda: metric(service.scraped(), "writeback_cycles_total", target="good", result="ok") >= 1,
        timeout=90,
    )
    records = service.stop()
    with pytest.raises(ProcessLookupError):  # no process of its group (git, ssh) is left behind
        os.killpg(service.proc.pid, 0)
    assert get_quiet(f"{service.base}/healthz") is None  # the port is closed
    assert any(r["msg"] == "stopped" for r in records)


def exported(text: str, name: str, **labels: str) -> bool:
    """A sample called ``name`` with these labels is in the exposition (whatever its value)."""
    return any(
        sample.name == name and sample.labels == labels
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    )


def get_quiet(url: str) -> int | None:
    try:
        return get(url)[0]
    except (OSError, urllib.error.URLError):
        return None


class BlackHole:
    """A TCP server that accepts connections and never answers: a forge call that hangs."""

    def __init__(self) -> None:
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = int(self.sock.getsockname()[1])
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


def test_sigterm_abandons_a_hung_step_after_the_grace_period(controlplane: Any, namespace: str, tmp_path: Path) -> None:
    gitops_apply(controlplane, cm_manifest(namespace, "slow", "v1"))
    controlplane.kubectl("patch", "configmap", "slow", "-n", namespace, "-p", '{"data":{"setting":"v2"}}')
    hole = BlackHole()
    port = free_port()
    bare = make_repo(tmp_path, "slow", cm_manifest(namespace, "slow", "v1"))
    config = {
        "clusters": [{"name": "test", "kubeconfig": controlplane.kubeconfig, "context": "writeback-test"}],
        "targets": [target("slow", namespace=namespace, bare=bare, forge_url=f"http://127.0.0.1:{hole.port}",
                           interval=3600)],
        "metrics": {"address": f"127.0.0.1:{port}"},
        "shutdown_grace_seconds": 2,
    }  # fmt: skip
    proc, log = start_writeback(config, workdir=tmp_path, env={"WB_TEST_TOKEN": TOKEN})
    try:
        wait_until("the forge call in flight", lambda: bool(hole.accepted), timeout=60, process=proc, stderr=log)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        began = time.monotonic()
        code = proc.wait(timeout=30)
        took = time.monotonic() - began
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        hole.close()
    output = log.read_text()
    assert code == 3, output[-3000:]
    assert 1.5 <= took < 10  # waited for the grace period, then left
    assert "abandoning the running step" in output
    assert TOKEN not in output
