"""GitOps parents that would undo a break-glass, on the real kube-apiserver: an Argo CD app of apps, an
ApplicationSet, a chain of Flux Kustomizations. ``start`` refuses (exit 2, naming the parent, nothing
changed); ``--include-parents`` suspends the chain and ``end`` restores it exactly; ``--ignore-parent`` goes on."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.breakglass_record import record
from tests.support.cli import run_cli
from tests.support.controllers import AUTOMATED, argocd_app, flux_kustomization
from tests.support.kube import apply, get

pytestmark = pytest.mark.controlplane
APPS = "applications.argoproj.io"
APPSETS = "applicationsets.argoproj.io"
KS = "kustomizations.kustomize.toolkit.fluxcd.io"
# tests/data/crds has no ApplicationSet CRD: this stand-in serves the same group, version, kind and plural
# (no schema), so the real API server stores and patches ApplicationSets as it would Argo CD's.
APPSET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": APPSETS},
    "spec": {"group": "argoproj.io", "scope": "Namespaced",
             "names": {"kind": "ApplicationSet", "listKind": "ApplicationSetList", "plural": "applicationsets",
                       "singular": "applicationset"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}  # fmt: skip


@pytest.fixture(scope="module")
def applicationsets(controlplane: Any, crds: list[str]) -> Iterator[None]:
    controlplane.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(APPSET_CRD))
    controlplane.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{APPSETS}")
    yield


def _track(controlplane: Any, namespace: str, child: str, parent: str) -> None:
    tracking = f"argocd.argoproj.io/tracking-id={parent}:argoproj.io/Application:{namespace}/{child}"
    controlplane.kubectl("annotate", "-n", namespace, f"application/{child}", tracking)


def _rvs(controlplane: Any, namespace: str, *objects: tuple[str, str]) -> list[str]:
    return [get(controlplane, r, namespace, n)["metadata"]["resourceVersion"] for r, n in objects]


def test_an_app_of_apps_is_refused_included_or_ignored(
    controlplane: Any, crds: list[str], namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    kc = ("--kubeconfig", controlplane.kubeconfig, "--actor", "alice")
    argocd_app(controlplane, namespace, "root")
    argocd_app(controlplane, namespace, "web")
    _track(controlplane, namespace, "web", "root")
    start = ("break-glass", "start", "--argocd-app", f"{namespace}/web", "--reason", "r", "--ttl", "1h", *kc)
    before = _rvs(controlplane, namespace, (APPS, "web"), (APPS, "root"))
    code, out, err = run_cli(*start)
    assert code == 2, out + err
    assert (f"Application {namespace}/web is applied by Argo CD Application {namespace}/root, whose next sync "
            "would put auto-sync back") in err and "--include-parents" in err  # fmt: skip
    assert _rvs(controlplane, namespace, (APPS, "web"), (APPS, "root")) == before

    code, out, err = run_cli(*start, "--include-parents")
    assert code == 0, out + err
    assert f"also suspended the parent Argo CD Application {namespace}/root" in out
    web, root = get(controlplane, APPS, namespace, "web"), get(controlplane, APPS, namespace, "root")
    assert "automated" not in web["spec"]["syncPolicy"] and "automated" not in root["spec"]["syncPolicy"]
    web_rec, root_rec = record(web), record(root)
    assert web_rec is not None and root_rec is not None
    assert [p["name"] for p in web_rec["parents"]] == ["root"] and root_rec["heldFor"]["name"] == "web"
    assert root_rec["start"] == web_rec["start"] and root_rec["previous"] == {"present": True, "value": AUTOMATED}
    code, out, _ = run_cli("break-glass", "status", "--controller-namespace", namespace, *kc[:2])
    assert f"parent of Argo CD Application {namespace}/web" in out
    assert f"with parents Argo CD Application {namespace}/root" in out
    code, out, err = run_cli("break-glass", "end", "--argocd-app", f"{namespace}/root", "--no-backport", *kc)
    assert code == 2 and f"suspended as the parent of Argo CD Application {namespace}/web" in err

    code, out, err = run_cli("break-glass", "end", "--argocd-app", f"{namespace}/web", "--no-backport", *kc)
    assert code == 0, out + err
    for name in ("web", "root"):  # the chain restored exactly, the records gone
        app = get(controlplane, APPS, namespace, name)
        assert app["spec"]["syncPolicy"]["automated"] == AUTOMATED and record(app) is None

    code, out, err = run_cli(*start, "--ignore-parent")
    assert code == 0, out + err
    assert f"--ignore-parent: Application {namespace}/web is applied by Argo CD Application {namespace}/root" in err
    assert "automated" in get(controlplane, APPS, namespace, "root")["spec"]["syncPolicy"]  # left alone


def test_a_parent_whose_child_lost_its_record_resumes_once_past_its_ttl(
    controlplane: Any, crds: list[str], namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    kc = ("--kubeconfig", controlplane.kubeconfig, "--actor", "alice")
    argocd_app(controlplane, namespace, "root")
    argocd_app(controlplane, namespace, "web")
    _track(controlplane, namespace, "web", "root")
    code, out, err = run_cli("break-glass", "start", "--argocd-app", f"{namespace}/web", "--reason", "r",
                         "--ttl", "4s", "--include-parents", *kc)  # fmt: skip
    assert code == 0, out + err
    expire = ("break-glass", "expire", "--controller-namespace", namespace, "--no-backport", *kc)
    code, out, err = run_cli(*expire)  # within its TTL, and its child still holds it: left alone
    assert code == 0 and "automated" not in get(controlplane, APPS, namespace, "root")["spec"]["syncPolicy"]
    controlplane.kubectl("annotate", "-n", namespace, "application/web", "writeback.io/break-glass-")  # by hand
    expires = record(get(controlplane, APPS, namespace, "root"))["expires"]  # type: ignore[index]
    time.sleep(max(0.0, (datetime.fromisoformat(expires.replace("Z", "+00:00")) - datetime.now(UTC)).total_seconds()))
    time.sleep(0.2)
    code, out, err = run_cli(*expire)
    assert code == 0, out + err
    assert f"argocd  {namespace}/root  its child's break-glass is gone: auto-sync restored" in out
    root = get(controlplane, APPS, namespace, "root")
    assert root["spec"]["syncPolicy"]["automated"] == AUTOMATED and record(root) is None


def test_an_applicationset_parent_gets_an_ignore_entry_that_end_removes(
    controlplane: Any, applicationsets: None, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    kc = ("--kubeconfig", controlplane.kubeconfig, "--actor", "alice")
    template = {"spec": {"syncPolicy": {"automated": AUTOMATED}}}
    apply(controlplane, {"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                         "metadata": {"name": "teams", "namespace": namespace},
                         "spec": {"generators": [], "template": template}})  # fmt: skip
    uid = get(controlplane, APPSETS, namespace, "teams")["metadata"]["uid"]
    argocd_app(controlplane, namespace, "web")
    owner = {"metadata": {"ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                                               "name": "teams", "uid": uid}]}}  # fmt: skip
    controlplane.kubectl("patch", "application", "web", "-n", namespace, "--type=merge", "-p", json.dumps(owner))
    start = ("break-glass", "start", "--argocd-app", f"{namespace}/web", "--reason", "r", "--ttl", "1h", *kc)
    code, _, err = run_cli(*start)
    assert code == 2 and f"applied by Argo CD ApplicationSet {namespace}/teams" in err

    code, out, err = run_cli(*start, "--include-parents")
    assert code == 0, out + err
    appset = get(controlplane, APPSETS, namespace, "teams")
    assert appset["spec"]["ignoreApplicationDifferences"] == [{"name": "web", "jsonPointers": ["/spec/syncPolicy"]}]
    assert appset["spec"]["template"] == template  # the rest untouched
    code, out, err = run_cli("break-glass", "end", "--argocd-app", f"{namespace}/web", "--no-backport", *kc)
    assert code == 0, out + err
    appset = get(controlplane, APPSETS, namespace, "teams")
    assert "ignoreApplicationDifferences" not in appset["spec"] and record(appset) is None
    assert get(controlplane, APPS, namespace, "web")["spec"]["syncPolicy"]["automated"] == AUTOMATED


def _flux_child(controlplane: Any, namespace: str, name: str, parent: str) -> None:
    labels = {"kustomize.toolkit.fluxcd.io/name": parent, "kustomize.toolkit.fluxcd.io/namespace": namespace}
    controlplane.kubectl("label", "-n", namespace, f"kustomization/{name}", *(f"{k}={v}" for k, v in labels.items()))


def test_a_chain_of_flux_kustomizations_is_suspended_from_the_root_and_restored(
    controlplane: Any, crds: list[str], namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    kc = ("--kubeconfig", controlplane.kubeconfig, "--actor", "alice")
    flux_kustomization(controlplane, namespace, "flux-system")
    flux_kustomization(controlplane, namespace, "infra", suspend=False)
    flux_kustomization(controlplane, namespace, "apps")
    _flux_child(controlplane, namespace, "infra", "flux-system")
    _flux_child(controlplane, namespace, "apps", "infra")
    start = ("break-glass", "start", "--flux-kustomization", f"{namespace}/apps", "--reason", "r", "--ttl", "1h", *kc)
    code, _, err = run_cli(*start)
    assert code == 2
    assert f"applied by Flux Kustomization {namespace}/infra" in err
    assert f"(and 1 more up the chain: Flux Kustomization {namespace}/flux-system)" in err

    code, out, err = run_cli(*start, "--include-parents")
    assert code == 0, out + err
    for name in ("apps", "infra", "flux-system"):
        assert get(controlplane, KS, namespace, name)["spec"]["suspend"] is True
    code, out, err = run_cli("break-glass", "end", "--flux-kustomization", f"{namespace}/apps", "--no-backport",
                         *kc)  # fmt: skip
    assert code == 0, out + err
    specs = {n: get(controlplane, KS, namespace, n)["spec"] for n in ("apps", "infra", "flux-system")}
    assert "suspend" not in specs["apps"] and "suspend" not in specs["flux-system"]  # absent before, absent again
    assert specs["infra"]["suspend"] is False  # exactly as it was
    assert all(record(get(controlplane, KS, namespace, n)) is None for n in specs)
