"""``writeback break-glass start`` and ``status`` on the real kube-apiserver with the real Argo CD and Flux CRDs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.breakglass.support import ADMIN, managers
from tests.support.breakglass_record import events, record
from tests.support.cli import run_cli
from tests.support.controllers import AUTOMATED, argocd_app, flux_helmrelease, flux_kustomization
from tests.support.kube import get

pytestmark = pytest.mark.controlplane


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True, kw_only=True)
class Started:
    """A break-glass started on the Argo CD Application ``web`` by alice, for 2 hours."""

    controlplane: Any
    namespace: str
    kc: tuple[str, ...]  # --kubeconfig KUBECONFIG
    before: datetime  # just before the start
    out: str  # what `break-glass start` printed
    app: dict[str, Any]  # the Application right after
    rec: dict[str, Any]  # its record

    def record_now(self) -> dict[str, Any] | None:
        return record(get(self.controlplane, "applications.argoproj.io", self.namespace, "web"))


@pytest.fixture
def started(
    controlplane: Any, crds: list[str], namespace: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Started:  # fmt: skip
    monkeypatch.setenv("USER", "mallory")  # a local name proves nothing: the record says who the API server says
    argocd_app(controlplane, namespace, "web")
    kc = ("--kubeconfig", controlplane.kubeconfig)
    before = datetime.now(UTC)
    code, out, err = run_cli(
        "break-glass", "start", "--argocd-app", f"{namespace}/web", "--reason", "DB failover, pin replicas",
        "--ttl", "2h", "--incident", "https://status.example.com/inc/42", "--actor", "alice", *kc,
    )  # fmt: skip
    assert code == 0, err
    app = get(controlplane, "applications.argoproj.io", namespace, "web")
    rec = record(app)
    assert rec is not None
    return Started(controlplane=controlplane, namespace=namespace, kc=kc, before=before, out=out, app=app, rec=rec)


def test_start_suspends_argocd_and_records_who_why_and_until_when(started: Started) -> None:
    assert f"break-glass started: Application {started.namespace}/web" in started.out
    sync = started.app["spec"]["syncPolicy"]
    assert "automated" not in sync  # auto-sync off
    assert sync["syncOptions"] == ["ServerSideApply=true"] and sync["retry"] == {"limit": 2}  # the rest untouched
    rec = started.rec
    assert rec["reason"] == "DB failover, pin replicas" and rec["incident"] == "https://status.example.com/inc/42"
    assert rec["by"] == "alice" and rec["controller"] == "argocd"
    assert rec["kubeUser"] == ADMIN  # the SelfSubjectReview's user name, not $USER or the kubeconfig's alias
    assert rec["previous"] == {"present": True, "value": AUTOMATED}
    expires = _time(rec["expires"])
    assert timedelta(hours=2) - timedelta(seconds=5) <= expires - started.before <= timedelta(hours=2, seconds=5)
    assert "writeback-break-glass" in managers(started.app)


def test_status_lists_it_with_its_remaining_time(started: Started) -> None:
    """One object, the namespace, and JSON."""
    namespace, kc, rec = started.namespace, started.kc, started.rec
    code, out, _ = run_cli("break-glass", "status", "--argocd-app", f"{namespace}/web", *kc)
    assert code == 0 and f"argocd  {namespace}/web  by alice  until {rec['expires']}" in out
    assert "1h59m left" in out or "2h left" in out
    code, out, _ = run_cli("break-glass", "status", "--controller-namespace", namespace, "-o", "json", *kc)
    [item] = json.loads(out)
    assert item["name"] == "web" and item["reason"] == "DB failover, pin replicas" and not item["expired"]
    assert 7100 <= item["remainingSeconds"] <= 7200


def test_a_second_start_is_refused_saying_until_when(started: Started) -> None:
    code, _, err = run_cli("break-glass", "start", "--argocd-app", f"{started.namespace}/web", "--reason", "again",
                       "--ttl", "30m", *started.kc)  # fmt: skip
    assert code == 2
    assert "already in break-glass" in err and started.rec["expires"] in err and "--extend" in err
    assert started.record_now() == started.rec  # unchanged


def test_extend_sets_a_new_expiry_keeps_the_previous_value_and_each_step_is_an_event(started: Started) -> None:
    """--extend: a new expiry from now, the previous value kept (not the suspended state)."""
    namespace, rec = started.namespace, started.rec
    code, out, err = run_cli("break-glass", "start", "--argocd-app", f"{namespace}/web", "--reason",
                             "still failing over", "--ttl", "4h", "--extend", "--actor", "alice",
                             *started.kc)  # fmt: skip
    assert code == 0, err
    assert "break-glass extended" in out
    ext = started.record_now()
    assert ext is not None and _time(ext["expires"]) > _time(rec["expires"]) + timedelta(hours=1)
    assert ext["previous"] == rec["previous"] and ext["start"] == rec["start"]
    assert ext["extensions"][0]["reason"] == "still failing over"
    # each step is a Kubernetes Event on the Application
    assert events(started.controlplane, namespace, "web") == [
        ("Normal", "BreakGlassStarted", f"auto-sync suspended by alice until {rec['expires']}: DB failover, pin "
         "replicas (incident: https://status.example.com/inc/42)"),
        ("Normal", "BreakGlassExtended", f"break-glass extended by alice until {ext['expires']}: still failing over "
         "(incident: https://status.example.com/inc/42)"),
    ]  # fmt: skip


def test_a_ttl_past_max_ttl_is_refused_before_anything_is_read(started: Started) -> None:
    """break_glass.max_ttl defaults to 24h."""
    code, _, err = run_cli("break-glass", "start", "--argocd-app", f"{started.namespace}/web", "--reason", "r",
                       "--ttl", "25h", "--extend", *started.kc)  # fmt: skip
    assert code == 2 and "--ttl '25h': at most 1d (break_glass.max_ttl" in err
    assert started.record_now() == started.rec


def test_flux_objects_are_suspended_and_resumed_exactly(
    controlplane: Any, crds: list[str], namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    kc = ("--kubeconfig", controlplane.kubeconfig)
    flux_kustomization(controlplane, namespace, "apps")  # no suspend field at all
    flux_helmrelease(controlplane, namespace, "podinfo", suspend=False)
    for flag, name in (("--flux-kustomization", "apps"), ("--flux-helmrelease", "podinfo")):
        code, _, err = run_cli("break-glass", "start", flag, f"{namespace}/{name}", "--reason", "incident",
                           "--ttl", "45m", *kc)  # fmt: skip
        assert code == 0, err
    ks = get(controlplane, "kustomizations.kustomize.toolkit.fluxcd.io", namespace, "apps")
    hr = get(controlplane, "helmreleases.helm.toolkit.fluxcd.io", namespace, "podinfo")
    assert ks["spec"]["suspend"] is True and hr["spec"]["suspend"] is True
    assert record(ks)["previous"] == {"present": False, "value": None}  # type: ignore[index]
    assert record(hr)["previous"] == {"present": True, "value": False}  # type: ignore[index]

    code, out, _ = run_cli("break-glass", "status", "-A", "-o", "json", *kc)
    mine = {(i["controller"], i["name"]) for i in json.loads(out) if i["namespace"] == namespace}
    assert mine == {("flux-kustomization", "apps"), ("flux-helmrelease", "podinfo")}

    for flag, name in (("--flux-kustomization", "apps"), ("--flux-helmrelease", "podinfo")):
        code, out, err = run_cli("break-glass", "end", flag, f"{namespace}/{name}", "--no-backport", *kc)
        assert code == 0, err
        assert "auto-sync restored" in out and "no backport" in err
    ks = get(controlplane, "kustomizations.kustomize.toolkit.fluxcd.io", namespace, "apps")
    hr = get(controlplane, "helmreleases.helm.toolkit.fluxcd.io", namespace, "podinfo")
    assert "suspend" not in ks["spec"] and hr["spec"]["suspend"] is False  # exactly as before
    assert record(ks) is None and record(hr) is None
    code, out, _ = run_cli("break-glass", "status", "--controller-namespace", namespace, *kc)
    assert code == 0 and out.strip() == "no break-glass"


def test_dry_run_changes_nothing_and_a_missing_object_is_named(
    controlplane: Any, crds: list[str], namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    kc = ("--kubeconfig", controlplane.kubeconfig)
    argocd_app(controlplane, namespace, "web")
    # an app of apps: the parent Application applies this one; it is not there, so nothing would undo it
    tracking = f"argocd.argoproj.io/tracking-id=apps:argoproj.io/Application:{namespace}/web"
    controlplane.kubectl("annotate", "-n", namespace, "application/web", tracking)
    rv = get(controlplane, "applications.argoproj.io", namespace, "web")["metadata"]["resourceVersion"]
    code, out, err = run_cli("break-glass", "start", "--argocd-app", f"{namespace}/web", "--reason", "x",
                         "--ttl", "1h", "--dry-run", *kc)  # fmt: skip
    assert code == 0, err
    assert "would start" in out and '"op": "remove"' in out and '"path": "/spec/syncPolicy/automated"' in out
    app = get(controlplane, "applications.argoproj.io", namespace, "web")
    assert app["metadata"]["resourceVersion"] == rv and app["spec"]["syncPolicy"]["automated"] == AUTOMATED

    code, _, err = run_cli("break-glass", "start", "--argocd-app", f"{namespace}/nope", "--reason", "x",
                       "--ttl", "1h", *kc)  # fmt: skip
    assert code == 2 and f"Application {namespace}/nope: not found" in err
    code, _, err = run_cli("break-glass", "end", "--argocd-app", f"{namespace}/web", "--no-backport", *kc)
    assert code == 2 and "is not in break-glass" in err
