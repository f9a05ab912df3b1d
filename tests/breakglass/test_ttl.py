"""The pure part of break-glass: TTL parsing (errors exit 2 naming the flag), the record, and the JSON patches."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import writeback.cli
from writeback.breakglass import patches
from writeback.breakglass import record as bg
from writeback.durations import format_duration
from writeback.errors import InputError
from writeback.gitops import argocd, flux
from writeback.gitops.registry import parent_of as parent_ref
from writeback.kube.wellknown import BREAK_GLASS_ANNOTATION as ANNOTATION

NOW = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "seconds"), [("2h", 7200), ("30m", 1800), ("1h30m", 5400), ("1d", 86400), ("90s", 90), ("2H", 7200)]
)
def test_ttl_parses(text: str, seconds: int) -> None:
    assert bg.parse_ttl(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize(("text", "why"), [("", "expected a duration"), ("2x", "expected a duration"),
                                           ("h2", "expected a duration"), ("1h 30m", "expected a duration"),
                                           ("0m", "longer than zero"), ("25h", "at most 1d"),
                                           ("99999999999999h", "at most 1d")])  # fmt: skip
def test_ttl_errors_exit_2_naming_the_flag(text: str, why: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = writeback.cli.main(["break-glass", "start", "--argocd-app", "argocd/web", "--reason", "r", "--ttl", text])
    err = capsys.readouterr().err
    assert code == 2
    assert f"--ttl {text!r}" in err and why in err


def test_status_and_start_flags_are_checked() -> None:
    with pytest.raises(InputError, match="--argocd-app 'web': expected NAMESPACE/NAME"):
        argocd.APPLICATION.ref("web")
    assert writeback.cli.main(["break-glass", "start", "--argocd-app", "a/b", "--ttl", "1h"]) == 2  # no --reason


def _app(automated: object, *, annotations: dict[str, str] | None = None) -> dict[str, object]:
    meta: dict[str, object] = {"name": "web", "namespace": "argocd", "resourceVersion": "41"}
    if annotations is not None:
        meta["annotations"] = annotations
    sync = {} if automated is None else {"automated": automated}
    return {"metadata": meta, "spec": {"syncPolicy": sync}}


def test_the_record_round_trips_and_tells_the_time_left() -> None:
    rec = bg.new_record(kind=argocd.APPLICATION, body=_app({"selfHeal": True}), by="alice", reason=" failover ",
                        ttl=timedelta(hours=2), now=NOW, incident="INC-1", kube_user="admin")  # fmt: skip
    again = bg.load_record(bg.dump_record(rec), where="x")
    assert again == rec and again.reason == "failover"
    assert again.remaining(now=NOW + timedelta(minutes=30)) == timedelta(minutes=90)
    assert not again.expired(now=NOW + timedelta(minutes=119)) and again.expired(now=NOW + timedelta(hours=2))
    assert format_duration(timedelta(minutes=119, seconds=5)) == "1h59m"
    with pytest.raises(InputError, match=r"annotation writeback\.io/break-glass is not a valid"):
        bg.load_record('{"by": "x"}', where="Application argocd/web")
    text = bg.incident_text(rec, ref=argocd.APPLICATION.ref("argocd/web"))
    assert "alice (Kubernetes user admin)" in text and "failover" in text and "INC-1" in text


def test_patches_test_the_resource_version_and_restore_exactly() -> None:
    prev = {"enabled": True, "prune": False}
    body = _app(prev)
    rec = bg.new_record(kind=argocd.APPLICATION, body=body, by="a", reason="r", ttl=timedelta(hours=1), now=NOW)
    ops = patches.suspend_patch(kind=argocd.APPLICATION, body=body, record=rec)
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "41"}
    assert ops[1]["path"] == "/metadata/annotations"  # no annotations yet: the whole map is added
    assert ops[2] == {"op": "remove", "path": "/spec/syncPolicy/automated"}
    suspended = _app(None, annotations={ANNOTATION: bg.dump_record(rec)})
    back = patches.resume_patch(kind=argocd.APPLICATION, body=suspended, record=rec)
    assert back[1] == {"op": "remove", "path": "/metadata/annotations/writeback.io~1break-glass"}
    assert back[2] == {"op": "add", "path": "/spec/syncPolicy/automated", "value": prev}
    # auto-sync already off (Argo CD's automated.enabled: false) is recognised
    assert not patches.auto_sync_on(kind=argocd.APPLICATION, body=_app({"enabled": False}))
    assert patches.auto_sync_on(kind=argocd.APPLICATION, body=_app({}))
    # Flux: suspend true; an absent field is removed again on resume
    ks = {"metadata": {"resourceVersion": "7", "annotations": {}}, "spec": {"interval": "5m"}}
    frec = bg.new_record(kind=flux.KUSTOMIZATION, body=ks, by="a", reason="r", ttl=timedelta(hours=1), now=NOW)
    assert patches.suspend_patch(kind=flux.KUSTOMIZATION, body=ks, record=frec)[2] == {
        "op": "add", "path": "/spec/suspend", "value": True}  # fmt: skip
    held = {"metadata": {"resourceVersion": "8", "annotations": {ANNOTATION: "{}"}}, "spec": {"suspend": True}}
    assert patches.resume_patch(kind=flux.KUSTOMIZATION, body=held, record=frec)[2] == {
        "op": "remove", "path": "/spec/suspend"}  # fmt: skip


def test_the_gitops_parent_is_recognised() -> None:
    applied = {"metadata": {"labels": {"kustomize.toolkit.fluxcd.io/name": "infra",
                                       "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}}}  # fmt: skip
    assert parent_ref(applied, namespace="apps") == flux.KUSTOMIZATION.at(namespace="flux-system", name="infra")
    owned = {"metadata": {"ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                                               "name": "teams"}]}}  # fmt: skip
    assert parent_ref(owned, namespace="argocd") == argocd.APPLICATIONSET.at(namespace="argocd", name="teams")
    foreign = {"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x"}]}}
    assert parent_ref(foreign, namespace="argocd") is None  # only GitOps owners re-apply auto-sync
    tracking = "argocd.argoproj.io/tracking-id"
    tracked = {"metadata": {"annotations": {tracking: "root:argoproj.io/Application:argocd/web"}}}
    assert parent_ref(tracked, namespace="argocd") == argocd.APPLICATION.at(namespace="argocd", name="root")
    anyns = {"metadata": {"annotations": {tracking: "team-a_root:argoproj.io/Application:x/y"}}}
    assert parent_ref(anyns, namespace="argocd") == argocd.APPLICATION.at(namespace="team-a", name="root")
    assert parent_ref({"metadata": {"labels": {"app.kubernetes.io/instance": "web"}}}, namespace="a") is None


def test_an_applicationset_parent_is_held_by_an_ignore_entry_and_restored_exactly() -> None:
    before = [{"jsonPointers": ["/spec/source/targetRevision"]}]
    appset = {"metadata": {"resourceVersion": "3"}, "spec": {"ignoreApplicationDifferences": before}}
    app = argocd.APPLICATION.at(namespace="argocd", name="web")
    assert patches.auto_sync_on(kind=argocd.APPLICATIONSET, body=appset, application="web")
    rec = bg.new_record(kind=argocd.APPLICATIONSET, body=appset, by="a", reason="r", ttl=timedelta(hours=1),
                        now=NOW, held_for=app)  # fmt: skip
    ops = patches.suspend_patch(kind=argocd.APPLICATIONSET, body=appset, record=rec)
    entry = {"name": "web", "jsonPointers": ["/spec/syncPolicy"]}
    assert ops[2] == {"op": "add", "path": "/spec/ignoreApplicationDifferences", "value": [*before, entry]}
    held = {"metadata": {"resourceVersion": "4", "annotations": {ANNOTATION: bg.dump_record(rec)}},
            "spec": {"ignoreApplicationDifferences": [*before, entry]}}  # fmt: skip
    assert not patches.auto_sync_on(kind=argocd.APPLICATIONSET, body=held, application="web")
    assert patches.auto_sync_on(kind=argocd.APPLICATIONSET, body=held, application="api")  # only web's
    back = patches.resume_patch(kind=argocd.APPLICATIONSET, body=held, record=rec)
    assert back[2] == {"op": "add", "path": "/spec/ignoreApplicationDifferences", "value": before}
    assert bg.load_record(bg.dump_record(rec), where="x").held_for == app


def test_a_record_notes_its_merged_prs_and_says_it_waits_for_the_controllers_source() -> None:
    rec = bg.new_record(kind=flux.KUSTOMIZATION, body={"spec": {}}, by="bob", reason="new CA",
                        ttl=timedelta(hours=1), now=NOW)  # fmt: skip
    waiting = rec.ended(by="bob", now=NOW, target="shop", pulls=(bg.PullRef(number=2), bg.PullRef(number=1)))
    assert waiting.ending is not None and waiting.ending.waiting_text() == "waiting for PRs #1, #2 to merge"
    one = waiting.with_merged({1})
    assert one.ending is not None and one.ending.waiting_text() == "waiting for PR #2 to merge"
    both = one.with_merged({1, 2})
    assert both.ending is not None
    merged = "PRs #1, #2 merged; waiting for the controller's source to have the merge commit"
    assert both.ending.waiting_text() == merged
    again = bg.load_record(bg.dump_record(both), where="x")
    assert again == both and bg.load_record(bg.dump_record(waiting), where="x") == waiting
    assert '"merged"' not in bg.dump_record(waiting)  # records written before stay as they were
    assert rec.with_merged({1}) == rec  # nothing to note without an ending
