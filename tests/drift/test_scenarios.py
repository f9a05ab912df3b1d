"""Issue 3 scenarios 1-7 and 10 on the real control plane, for each way a GitOps controller syncs.

One incident per sync mode (module-scoped, so the control plane is set up once per mode): Git is synced
with that controller's field manager, then people and controllers change things with real kubectl,
then ``writeback diff`` runs against the cluster and, offline, against ``kubectl get -o yaml`` dumps.
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import (
    EDITOR_SCRIPT,
    PEM_AFTER,
    PEM_BEFORE,
    ROTATED_LINE_NEW,
    ROTATED_LINE_OLD,
    SYNC_MODES,
    by_path,
    configmap,
    decisions,
    drifts_of,
    sync,
    write,
)
from tests.support.cli import run_cli
from tests.support.gitrepos import commit, init_repo
from tests.support.objects import deployment

pytestmark = pytest.mark.controlplane

APP = "spec.template.spec.containers[name=app]"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@dataclass(kw_only=True)
class Incident:
    mode: str
    plain: str  # namespace without injection
    injected: str  # namespace with the sidecar injector on
    repo: Path
    dumps: Path
    bare_dumps: Path  # without managedFields
    kubeconfig: str


def _namespace(controlplane: Any, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    controlplane.kubectl("create", "namespace", name)
    return name


@pytest.fixture(scope="module", params=sorted(SYNC_MODES))
def incident(
    request: pytest.FixtureRequest, controlplane: Any, sidecar_webhook: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Incident]:
    mode = str(request.param)
    tmp = tmp_path_factory.mktemp(f"incident-{mode}")
    plain, injected = _namespace(controlplane, "wb-plain"), _namespace(controlplane, "wb-inject")
    sidecar_webhook.enable(injected)
    repo = tmp / "gitops"
    init_repo(repo)
    (repo / "plain").mkdir()
    (repo / "plain" / "kustomization.yaml").write_text(f"namespace: {plain}\nresources: []\n")
    (repo / "injected").mkdir()
    (repo / "injected" / "kustomization.yaml").write_text(f"namespace: {injected}\nresources: []\n")
    files = [
        write(repo, "plain/web-defaults.yaml", deployment("web-defaults")),
        write(repo, "plain/web-hpa.yaml", deployment("web-hpa", replicas=3)),
        write(repo, "plain/web-hotfix.yaml", deployment("web-hotfix", env={"LOG_LEVEL": "info"})),
        write(repo, "plain/ca.yaml", configmap("ca-bundle", {"ca.crt": PEM_BEFORE, "mode": "strict"})),
        write(
            repo,
            "plain/web-removal.yaml",
            deployment("web-removal", env={"LOG_LEVEL": "debug", "FEATURE_X": "enabled"}),
        ),
        write(repo, "plain/web-priv.yaml", deployment("web-priv")),
    ]
    sidecar = write(repo, "injected/web-sidecar.yaml", deployment("web-sidecar", replicas=2))
    commit(repo, "apps")
    sync(controlplane, mode, plain, *files)
    sync(controlplane, mode, injected, sidecar)

    k = controlplane.kubectl
    # 1. the HPA war: kube-controller-manager scales through the scale subresource
    scale = '{"spec":{"replicas":45}}'
    k("patch", "deployment", "web-hpa", "-n", plain, "--subresource=scale", "--type=merge", "-p", scale,
      "--field-manager=kube-controller-manager")  # fmt: skip
    # 4. the 3 AM hotfix: kubectl edit of the CA bundle, set env, set image
    editor = tmp / "editor.py"
    editor.write_text(EDITOR_SCRIPT)
    k("edit", "configmap", "ca-bundle", "-n", plain, env={"KUBE_EDITOR": f"{sys.executable} {editor}"})
    k("set", "env", "deployment/web-hotfix", "-n", plain, "NEW_FLAG=true")
    k("set", "image", "deployment/web-hotfix", "-n", plain, "app=nginx:1.27")
    # 5. a person removes an env var Git declares
    k("set", "env", "deployment/web-removal", "-n", plain, "FEATURE_X-")
    # 6. a person makes a container privileged
    priv = '{"spec":{"template":{"spec":{"containers":[{"name":"app","securityContext":{"privileged":true}}]}}}}'
    k("patch", "deployment", "web-priv", "-n", plain, "--type=strategic", "-p", priv)

    dumps, bare = tmp / "dumps", tmp / "bare-dumps"
    dumps.mkdir()
    bare.mkdir()
    for ns in (plain, injected):
        full = k("get", "deployments,configmaps", "-n", ns, "-o", "yaml", "--show-managed-fields").stdout
        (dumps / f"{ns}.yaml").write_text(full)
        (bare / f"{ns}.yaml").write_text(k("get", "deployments,configmaps", "-n", ns, "-o", "yaml").stdout)
    yield Incident(
        mode=mode,
        plain=plain,
        injected=injected,
        repo=repo,
        dumps=dumps,
        bare_dumps=bare,
        kubeconfig=controlplane.kubeconfig,
    )
    for ns in (plain, injected):
        k("delete", "namespace", ns, "--wait=false", check=False)


@pytest.fixture(scope="module")
def cluster_doc(incident: Incident) -> dict[str, Any]:
    return _diff(incident, "--kubeconfig", incident.kubeconfig)


@pytest.fixture(scope="module")
def offline_doc(incident: Incident) -> dict[str, Any]:
    return _diff(incident, "--live", str(incident.dumps))


def _diff(incident: Incident, *args: str) -> dict[str, Any]:
    code, out, _ = run_cli("diff", "--repo", str(incident.repo), "--output", "json", "--exit-code", *args)
    doc: dict[str, Any] = json.loads(out)
    doc["_exit"] = code
    return doc


def test_hpa_war_is_ignored_and_names_the_owner(cluster_doc: dict[str, Any]) -> None:
    drifts = drifts_of(cluster_doc, kind="Deployment", name="web-hpa")
    replicas = by_path(drifts)["spec.replicas"]
    assert (replicas["live"], replicas["git"], replicas["op"]) == (45, 3, "change")
    assert replicas["decision"] == "ignore"
    assert replicas["manager"] == "kube-controller-manager"
    assert "kube-controller-manager" in replicas["reason"]
    assert [d for d in drifts if d["decision"] in ("writeback", "flag")] == []


def test_sidecar_injection_is_not_written_back(
    cluster_doc: dict[str, Any], controlplane: Any, incident: Incident
) -> None:
    live = controlplane.kubectl("get", "deploy", "web-sidecar", "-n", incident.injected, "-o", "json").stdout
    assert "istio-proxy" in live and "istio-init" in live  # the webhook really injected
    drifts = drifts_of(cluster_doc, kind="Deployment", name="web-sidecar")
    assert [d for d in drifts if d["decision"] in ("writeback", "flag", "new", "deleted")] == []


def test_defaults_are_no_drift(cluster_doc: dict[str, Any]) -> None:
    assert drifts_of(cluster_doc, kind="Deployment", name="web-defaults") == []


def test_3am_hotfix_is_written_back_with_manager_and_time(cluster_doc: dict[str, Any]) -> None:
    ca = by_path(drifts_of(cluster_doc, kind="ConfigMap", name="ca-bundle"))
    assert set(ca) == {'data["ca.crt"]'}
    pem = ca['data["ca.crt"]']
    assert (pem["op"], pem["decision"], pem["live"], pem["git"]) == ("change", "writeback", PEM_AFTER, PEM_BEFORE)
    assert pem["manager"] == "kubectl-edit" and pem["operation"] == "Update"
    assert TIME.match(pem["time"])

    web = by_path(drifts_of(cluster_doc, kind="Deployment", name="web-hotfix"))
    image = web[f"{APP}.image"]
    assert (image["op"], image["decision"], image["live"], image["git"]) == (
        "change",
        "writeback",
        "nginx:1.27",
        "nginx:1.25",
    )
    assert image["manager"] == "kubectl-set" and TIME.match(image["time"])
    added = {p: d for p, d in web.items() if p.startswith(f"{APP}.env[name=NEW_FLAG]")}
    assert added, web
    assert all(
        d["op"] == "add" and d["decision"] == "writeback" and d["manager"] == "kubectl-set" for d in added.values()
    )
    assert "git" not in next(iter(added.values()))  # the absent side is left out, not null
    assert not [p for p, d in web.items() if d["decision"] == "writeback" and p not in added and p != f"{APP}.image"]


def test_removal_is_a_writeback_remove_without_manager(cluster_doc: dict[str, Any]) -> None:
    web = by_path(drifts_of(cluster_doc, kind="Deployment", name="web-removal"))
    removed = web[f"{APP}.env[name=FEATURE_X]"]
    assert (removed["op"], removed["decision"], removed["manager"]) == ("remove", "writeback", None)
    assert removed["git"] == {"name": "FEATURE_X", "value": "enabled"} and "live" not in removed
    assert "remov" in removed["reason"]
    assert f"{APP}.env[name=LOG_LEVEL].value" not in web


def test_privileged_is_flagged(cluster_doc: dict[str, Any]) -> None:
    web = drifts_of(cluster_doc, kind="Deployment", name="web-priv")
    flagged = [d for d in web if d["decision"] == "flag"]
    assert [d["path"] for d in flagged] == [f"{APP}.securityContext.privileged"]
    assert flagged[0]["live"] is True and flagged[0]["op"] == "add" and "git" not in flagged[0]
    assert flagged[0]["manager"] == "kubectl-patch"
    assert [d for d in web if d["decision"] == "writeback"] == []


def test_cluster_mode_revision_and_exit_code(cluster_doc: dict[str, Any], incident: Incident) -> None:
    from tests.support.gitrepos import git

    assert cluster_doc["mode"] == "cluster"
    assert cluster_doc["revision"] == git("rev-parse", "HEAD", cwd=incident.repo)
    assert cluster_doc["_exit"] == 1  # --exit-code with writeback and flag drift
    assert cluster_doc["problems"] == []


OFFLINE_RESOURCES = {("Deployment", "web-hpa"), ("ConfigMap", "ca-bundle"), ("Deployment", "web-hotfix"),
                     ("Deployment", "web-removal"), ("Deployment", "web-priv")}  # fmt: skip


def test_offline_gives_the_same_decisions(cluster_doc: dict[str, Any], offline_doc: dict[str, Any]) -> None:
    assert offline_doc["mode"] == "offline"
    online = {k: v for k, v in decisions(cluster_doc).items() if k[:2] in OFFLINE_RESOURCES}
    offline = {k: v for k, v in decisions(offline_doc).items() if k[:2] in OFFLINE_RESOURCES}
    actionable = {k: v for k, v in online.items() if v in ("writeback", "flag")}
    assert actionable and {k: offline.get(k) for k in actionable} == actionable
    assert {k: v for k, v in offline.items() if v in ("writeback", "flag")} == actionable
    assert offline[("Deployment", "web-hpa", "spec.replicas")] == "ignore"
    assert offline_doc["revision"] == cluster_doc["revision"]
    assert any("offline" in n for n in offline_doc.get("notes", [])), offline_doc.get("notes")


def test_offline_without_managed_fields_says_what_it_could_not_judge(incident: Incident) -> None:
    doc = _diff(incident, "--live", str(incident.bare_dumps))
    assert doc["mode"] == "offline"
    assert any("managedFields" in n for n in doc.get("notes", [])), doc.get("notes")


def test_text_output_and_explain(incident: Incident, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli("diff", "--repo", str(incident.repo), "--kubeconfig", incident.kubeconfig,
                             "--explain")  # fmt: skip
    assert code == 0, err
    assert f"Deployment.apps {incident.plain}/web-hotfix" in out
    assert re.search(r"writeback\s+change\s+spec\.template\.spec\.containers\[name=app\]\.image", out)
    assert "kubectl-set" in out and "reason:" in out
    assert re.search(r"flag\s+add\s+spec\.template\.spec\.containers\[name=app\]\.securityContext\.privileged", out)
    assert "dropped before comparing" in out and "metadata.uid" in out
    assert f"| -{ROTATED_LINE_OLD}" in out and f"| +{ROTATED_LINE_NEW}" in out  # the PEM as changed lines


def test_the_sync_mode_is_what_the_apiserver_recorded(incident: Incident, controlplane: Any) -> None:
    live = json.loads(
        controlplane.kubectl(
            "get", "deploy", "web-defaults", "-n", incident.plain, "-o", "json", "--show-managed-fields"
        ).stdout
    )
    recorded = {(m["manager"], m["operation"]) for m in live["metadata"]["managedFields"]}
    expected = {
        "argocd-client-side": ("argocd-controller", "Update"),
        "argocd-server-side": ("argocd-controller", "Apply"),
        "flux-kustomize-controller": ("kustomize-controller", "Apply"),
    }[incident.mode]
    assert recorded == {expected}


def test_dry_run_only_for_objects_with_a_raw_diff(incident: Incident) -> None:
    from writeback.adapters.kube.cluster import KubeCluster
    from writeback.pipeline.detecting import detect
    from writeback.pipeline.targets import Edges, TargetSpec

    cluster = KubeCluster.connect(kubeconfig=incident.kubeconfig)
    found = detect(spec=TargetSpec(name="incident"), repo=incident.repo, edges=Edges(cluster=cluster))
    names = {r.name for r in cluster.dry_run_refs}
    assert cluster.dry_run_calls == len(cluster.dry_run_refs) == len(names)
    assert names and names <= {"ca-bundle", "web-hotfix", "web-removal", "web-priv", "web-sidecar"}
    assert "web-defaults" not in names and "web-hpa" not in names  # nothing to write back: no dry-run
    assert cluster.list_calls_by_kind == {"Deployment": 2, "ConfigMap": 1}  # per kind, per namespace Git uses
    assert sorted(o.ref.name for o in found.live) == sorted(
        ["ca-bundle", "web-defaults", "web-hotfix", "web-hpa", "web-priv", "web-removal", "web-sidecar"]
    )
