"""Break-glass in the service loop, on the real control plane with the real Argo CD CRD.

A `writeback run --config FILE` process: the target whose Argo CD Application's break-glass expired backports the
person's live change by PR (the record in the incident field) and then restores `syncPolicy.automated` exactly;
the target whose forge is down keeps its Application suspended, and counts and logs the error each retry; the
target whose break-glass still runs opens its regular PR with the record as its incident and stays suspended.
The per-target step reads only the objects a target names (GETs, never a list).
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.github_fake import PROJECT, TOKEN, GitHubFake
from tests.support.breakglass_record import events, record
from tests.support.cli import run_cli
from tests.support.controllers import AUTOMATED, argocd_app, synced_to
from tests.support.gitrepos import git, seed_bare
from tests.support.kube import get
from tests.support.objects import WEB_MANIFEST
from tests.support.polling import wait_until
from tests.support.services import free_port, metric, start_writeback, stop_writeback, stopped_records
from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.controllers import ControllerObjects
from writeback.breakglass import targets
from writeback.config import Target
from writeback.errors import ConfigError
from writeback.pipeline.cycling import CycleOptions, TargetRun
from writeback.pipeline.targets import Edges, spec_for

pytestmark = pytest.mark.controlplane
TOKEN_ENV = "WB_BG_TOKEN"  # where the service finds the fake forge's token
APPS = "applications.argoproj.io"
REASON = "checkout errors: FEATURE_X off"
INCIDENT = "https://status.example.com/inc/77"


def make_repo(tmp_path: Path, app: str) -> Path:
    """A bare remote whose main holds apps/<app>.yaml (the Deployment `app`), synced to the cluster by 'Argo CD'."""
    root = tmp_path / app
    root.mkdir()
    bare, seed = root / "gitops.git", root / "seed"
    manifest = WEB_MANIFEST.replace("web", app)
    manifest = manifest.replace(f"  name: {app}\n", f"  name: {app}\n  labels:\n    app: {app}\n", 1)
    seed_bare(bare, seed, {f"apps/{app}.yaml": manifest})
    return bare


def service_target(name: str, *, app: str, namespace: str, bare: Path, forge_url: str) -> dict[str, Any]:
    return {
        "name": name, "cluster": "test", "repo_url": str(bare), "path": "apps", "namespace": namespace,
        "selectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "namespaces": [namespace],
                       "labelSelector": f"app={app}"}],
        "argocd_application": f"{namespace}/{app}",
        "forge": {"kind": "github", "url": forge_url, "project": PROJECT, "token": {"env": TOKEN_ENV},
                  "max_retries": 0, "backoff_seconds": 0, "max_wait_seconds": 1, "throttle": False},
        "schedule": {"interval_seconds": 2, "jitter_seconds": 0, "retry_initial_seconds": 1, "retry_max_seconds": 2},
    }  # fmt: skip


def scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            return str(resp.read().decode())
    except OSError:
        return ""


def start_break_glass(controlplane: Any, namespace: str, app: str, *, ttl: str) -> None:
    code, _, err = run_cli(
        "break-glass", "start", "--argocd-app", f"{namespace}/{app}", "--reason", REASON, "--ttl", ttl,
        "--incident", INCIDENT, "--actor", "oncall-bob", "--kubeconfig", controlplane.kubeconfig,
    )  # fmt: skip
    assert code == 0, err


@dataclass(kw_only=True)
class Incidents:
    """Three Applications under break-glass, each with a person's hotfix, served by one `writeback run`:

    - ``shop`` (app ``web``): its break-glass expired, its forge is up;
    - ``down`` (app ``api``): its break-glass expired, nothing listens where its forge should be;
    - ``held`` (app ``cart``): its break-glass runs for 2 more hours, its forge is up.
    """

    controlplane: Any
    namespace: str
    repos: dict[str, Path]  # app -> its bare remote
    fake: GitHubFake  # shop's forge
    fake_cart: GitHubFake  # held's forge
    port: int  # of /metrics
    proc: subprocess.Popen[bytes]
    log: Path
    expires: datetime  # when the 1 s break-glasses of shop and down expired
    held_api: dict[str, Any]  # down's record, as break-glass start wrote it
    held_cart: dict[str, Any]  # held's record

    def scrape(self) -> str:
        return scrape(self.port)

    def wait(self, what: str, predicate: Callable[[], object], *, timeout: float) -> None:
        wait_until(what, predicate, timeout=timeout, process=self.proc, stderr=self.log)

    def application(self, app: str) -> dict[str, Any]:
        return get(self.controlplane, APPS, self.namespace, app)

    def stop(self) -> list[dict[str, Any]]:
        """Stops the service: it exits 0 and its log never holds the token; its log records."""
        return stopped_records(self.proc, self.log, secret=TOKEN)


@pytest.fixture
def incidents(controlplane: Any, crds: list[str], namespace: str, tmp_path: Path) -> Iterator[Incidents]:
    repos = {app: make_repo(tmp_path, app) for app in ("web", "api", "cart")}
    for app in repos:
        controlplane.kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-n", namespace,
                             "-f", str(tmp_path / app / "seed" / "apps"))  # fmt: skip
        argocd_app(controlplane, namespace, app)
        start_break_glass(controlplane, namespace, app, ttl="2h" if app == "cart" else "1s")
        # the person's 3 AM fix, kept alive by break-glass
        controlplane.kubectl("set", "env", "-n", namespace, f"deployment/{app}", "FEATURE_X=off")
    held_api = record(get(controlplane, APPS, namespace, "api"))
    held_cart = record(get(controlplane, APPS, namespace, "cart"))
    assert held_api is not None and held_cart is not None
    expires = datetime.fromisoformat(held_api["expires"].replace("Z", "+00:00"))
    time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds() + 0.2))  # both TTLs have passed

    fake, fake_cart = GitHubFake(bare=repos["web"]), GitHubFake(bare=repos["cart"])
    fake.start()
    fake_cart.start()
    port = free_port()
    config = {
        "clusters": [{"name": "test", "kubeconfig": controlplane.kubeconfig, "context": "writeback-test"}],
        "targets": [
            service_target("shop", app="web", namespace=namespace, bare=repos["web"], forge_url=fake.url),
            service_target("down", app="api", namespace=namespace, bare=repos["api"],
                           forge_url=f"http://127.0.0.1:{free_port()}"),  # nothing listens there
            service_target("held", app="cart", namespace=namespace, bare=repos["cart"], forge_url=fake_cart.url),
        ],
        "metrics": {"address": f"127.0.0.1:{port}"},
        "state_dir": str(tmp_path / "state"),
        "shutdown_grace_seconds": 20,
    }  # fmt: skip
    proc, log = start_writeback(config, workdir=tmp_path, env={TOKEN_ENV: TOKEN})
    try:
        yield Incidents(
            controlplane=controlplane, namespace=namespace, repos=repos, fake=fake, fake_cart=fake_cart, port=port,
            proc=proc, log=log, expires=expires, held_api=held_api, held_cart=held_cart,
        )  # fmt: skip
    finally:
        try:
            if proc.poll() is None:
                stop_writeback(proc, timeout=40)
        finally:
            fake.stop()
            fake_cart.stop()


def test_an_expired_break_glass_is_backported_by_pr_and_auto_sync_restored_once_merged(
    incidents: Incidents,
) -> None:
    """`shop`: the backport PR with the break-glass record as its incident, then auto-sync back exactly."""
    fake, web = incidents.fake, incidents.repos["web"]
    incidents.wait("the backport PR", lambda: bool(fake.prs), timeout=60)
    [pr] = fake.prs.values()
    body = pr["body"]
    assert "Break-glass on Application" in body and "oncall-bob" in body
    assert "checkout errors: FEATURE\\_X off" in body and INCIDENT in body
    assert "kubectl-set" in body and "FEATURE\\_X" in body
    branch = pr["head"]
    patched = git("--git-dir", str(web), "show", f"{branch}:apps/web.yaml")
    assert 'value: "off"' in patched or "value: off" in patched

    # merged first: past its TTL, with the PR open, auto-sync stays suspended; an Event and a gauge say so
    incidents.wait(
        "shop's expired-waiting gauge",
        lambda: metric(incidents.scrape(), "writeback_break_glass_expired_waiting", target="shop") == 1,
        timeout=30,
    )
    warnings = [e[:2] for e in events(incidents.controlplane, incidents.namespace, "web")]
    assert ("Warning", "BreakGlassExpiredWaiting") in warnings
    assert record(incidents.application("web")) is not None
    # the reviewer merges, and Argo CD resolves main to the merge commit: the next cycle resumes auto-sync
    [number] = fake.prs
    fake.merge(number)
    synced_to(incidents.controlplane, incidents.namespace, "web", git("--git-dir", str(web), "rev-parse", "main"))
    incidents.wait("auto-sync restored on web", lambda: record(incidents.application("web")) is None, timeout=30)
    assert incidents.application("web")["spec"]["syncPolicy"]["automated"] == AUTOMATED

    incidents.wait(
        "the gauge of shop back to 0",
        lambda: metric(incidents.scrape(), "writeback_break_glass_active", target="shop") == 0,
        timeout=30,
    )
    text = incidents.scrape()
    assert metric(text, "writeback_break_glass_expired_waiting", target="shop") == 0
    assert metric(text, "writeback_break_glass_expired", target="shop") == 0
    assert 'writeback_break_glass_expires_timestamp_seconds{target="shop"}' not in text  # ended: none left
    assert metric(text, "writeback_pull_requests_total", target="shop", outcome="created") == 1
    assert metric(text, "writeback_api_requests_total", target="shop", verb="list") == 1  # the watch's only
    assert [p["head"] for p in fake.prs.values()] == [branch]  # shop's backport opened one PR only
    assert fake.violations == []

    records = incidents.stop()
    assert any(r.get("target") == "shop" and "break-glass" in r["msg"] and "auto-sync restored" in r["msg"]
               for r in records)  # fmt: skip


def test_an_expired_break_glass_stays_suspended_while_its_forge_is_down(incidents: Incidents) -> None:
    """`down`: the backport cannot be ensured, so the Application stays suspended; counted, logged and retried."""
    incidents.wait(
        "two failed break-glass expiries of down",
        lambda: metric(incidents.scrape(), "writeback_errors_total", target="down", kind="BreakGlassSuspended") >= 2,
        timeout=60,
    )
    text = incidents.scrape()
    assert metric(text, "writeback_break_glass_active", target="down") == 1
    assert metric(text, "writeback_break_glass_expired", target="down") == 1  # past its TTL, still suspended
    expires_api = metric(text, "writeback_break_glass_expires_timestamp_seconds", target="down")
    assert expires_api == pytest.approx(incidents.expires.timestamp(), abs=1)
    assert metric(text, "writeback_api_requests_total", target="down", verb="list") == 1
    app = incidents.application("api")
    assert "automated" not in app["spec"]["syncPolicy"] and record(app) == incidents.held_api

    records = incidents.stop()
    stays = [r for r in records if r.get("target") == "down" and r["level"] == "error" and "stays" in r["msg"]]
    assert stays and "auto-sync stays suspended" in stays[0]["msg"]


def test_a_running_break_glass_rides_on_the_regular_pr_and_keeps_auto_sync_off(incidents: Incidents) -> None:
    """`held`: its break-glass runs for 2 more hours: the regular cycle's PR carries the record, auto-sync stays
    off."""
    fake_cart = incidents.fake_cart
    incidents.wait("the PR of held", lambda: bool(fake_cart.prs), timeout=30)
    [pr] = fake_cart.prs.values()
    assert "Break-glass on Application" in pr["body"] and INCIDENT in pr["body"]
    text = incidents.scrape()
    assert metric(text, "writeback_break_glass_active", target="held") == 1
    assert metric(text, "writeback_break_glass_expired", target="held") == 0  # 2 hours to go
    assert metric(text, "writeback_break_glass_expires_timestamp_seconds", target="held") > time.time() + 3600
    app = incidents.application("cart")
    assert "automated" not in app["spec"]["syncPolicy"] and record(app) == incidents.held_cart
    assert fake_cart.violations == []
    incidents.stop()


def test_the_per_target_step_only_gets_the_objects_the_target_names(
    controlplane: Any, crds: list[str], namespace: str, tmp_path: Path
) -> None:
    argocd_app(controlplane, namespace, "web")
    code, _, err = run_cli("break-glass", "start", "--argocd-app", f"{namespace}/web", "--reason", REASON,
                       "--ttl", "2h", "--kubeconfig", controlplane.kubeconfig)  # fmt: skip
    assert code == 0, err
    cluster = KubeCluster.connect(kubeconfig=controlplane.kubeconfig)
    objects = ControllerObjects(cluster=cluster)
    options = CycleOptions(workdir=tmp_path)  # no backport runs: nothing is due
    base = {"repo_url": str(tmp_path / "none.git")}

    named = Target.model_validate({**base, "name": "shop", "argocd_application": f"{namespace}/web",
                                   "flux_kustomization": f"{namespace}/absent"})  # fmt: skip
    expiry = targets.expire_for_target(objects=objects, run=_run(named, options))
    assert [(h.ref.kind, h.name, h.record.reason) for h in expiry.held] == [("Application", f"{namespace}/web", REASON)]
    assert expiry.ended == () and [h.name for h in expiry.active] == [f"{namespace}/web"]

    nothing = Target.model_validate({**base, "name": "plain"})
    assert targets.target_refs(nothing) == ()
    assert targets.expire_for_target(objects=objects, run=_run(nothing, options)).held == ()
    assert cluster.list_calls == 0 and objects.patch_calls == 0  # GETs only, and nothing was due

    # an hour later the record is due: the backport runs with the target's forge, which is not configured here,
    # so auto-sync stays suspended and the record is untouched
    later = datetime.now(UTC).replace(microsecond=0) + (expiry.held[0].record.expires - expiry.held[0].record.start)
    due = targets.expire_for_target(objects=objects, run=_run(named, options), now=later)
    [ended] = due.failed
    assert "auto-sync stays suspended" in ended.detail and "forge" in ended.detail
    assert [h.name for h in due.active] == [f"{namespace}/web"]
    assert objects.patch_calls == 0 and cluster.list_calls == 0
    assert "automated" not in get(controlplane, APPS, namespace, "web")["spec"]["syncPolicy"]

    bad = Target.model_validate({**base, "name": "bad", "argocd_application": "web"})
    with pytest.raises(ConfigError, match=r"targets\[bad\]\.argocd_application: 'web': expected NAMESPACE/NAME"):
        targets.target_refs(bad)


def _run(target: Target, options: CycleOptions) -> TargetRun:
    return TargetRun(spec=spec_for(target), edges=Edges(), options=options)
