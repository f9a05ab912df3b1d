"""Defaults that arrive with a person's change are not the person's change (issue 15), on the real apiserver.

Git is synced as Argo CD does; then a person adds a probe, a container, an init container, a port, a volume and an
env ``valueFrom`` live, sets ``sessionAffinity: ClientIP``, turns a Service into a LoadBalancer, and switches a
Deployment's strategy to RollingUpdate. The server fills in more each time. Each case checks that the person's
field is written back with its manager, that the consequent defaults are not (nor in the patched files), and that
the PR body names them under "not written back".
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import by_path, drifts_of, sync, write
from tests.support.cli import run_cli
from tests.support.gitrepos import commit, init_repo
from tests.support.objects import deployment

pytestmark = pytest.mark.controlplane

APP = "spec.template.spec.containers[name=app]"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@dataclass(kw_only=True)
class Case:
    repo: Path
    ns: str
    cluster: dict[str, Any]
    offline: dict[str, Any]
    plan: str  # writeback plan (text) against the cluster: PR previews and diffs


def _service(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]}}  # fmt: skip


@pytest.fixture(scope="module")
def case(controlplane: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Case]:
    tmp = tmp_path_factory.mktemp("consequent")
    ns = f"wb-conseq-{uuid.uuid4().hex[:8]}"
    k = controlplane.kubectl
    k("create", "namespace", ns)
    repo = tmp / "gitops"
    init_repo(repo)
    recreate = deployment("web-strategy")
    recreate["spec"]["strategy"] = {"type": "Recreate"}
    names = ("web-probe", "web-sidecar", "web-port", "web-volume")
    files = [write(repo, f"apps/{n}.yaml", deployment(n)) for n in names]
    files += [write(repo, "apps/web-strategy.yaml", recreate)]
    files += [write(repo, f"apps/{n}.yaml", _service(n)) for n in ("affinity", "public")]
    commit(repo, "apps")
    sync(controlplane, "argocd-server-side", ns, *files)

    def patch(resource: str, body: Any) -> None:
        k("patch", resource, "-n", ns, "--type=strategic", "-p", json.dumps(body))

    def pod(spec: Any) -> Any:
        return {"spec": {"template": {"spec": spec}}}

    probe = {"httpGet": {"path": "/healthz", "port": 8080}}
    patch("deployment/web-probe", pod({"containers": [{"name": "app", "livenessProbe": probe}]}))
    patch("deployment/web-sidecar", pod({"containers": [{"name": "debug", "image": "busybox:1.36"}],
                                         "initContainers": [{"name": "wait", "image": "busybox:1.36"}]}))  # fmt: skip
    patch("deployment/web-port", pod({"containers": [{"name": "app", "ports": [{"containerPort": 9090,
                                                                                  "name": "metrics"}]}]}))  # fmt: skip
    env = {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    patch("deployment/web-volume", pod({"volumes": [{"name": "cfg", "configMap": {"name": "settings"}}],
                                        "containers": [{"name": "app", "env": [env]}]}))  # fmt: skip
    k("patch", "deployment/web-strategy", "-n", ns, "--type=merge", "-p",
      json.dumps({"spec": {"strategy": {"type": "RollingUpdate"}}}))  # fmt: skip
    patch("service/affinity", {"spec": {"sessionAffinity": "ClientIP"}})
    patch("service/public", {"spec": {"type": "LoadBalancer"}})

    dump = tmp / "dump.yaml"
    dump.write_text(k("get", "deploy,svc", "-n", ns, "-o", "yaml", "--show-managed-fields").stdout)
    flags = ["--repo", str(repo), "--namespace", ns]
    code, plan, err = run_cli("plan", *flags, "--kubeconfig", controlplane.kubeconfig)
    assert code == 0, err
    yield Case(
        repo=repo,
        ns=ns,
        cluster=_diff(*flags, "--kubeconfig", controlplane.kubeconfig),
        offline=_diff(*flags, "--live", str(dump)),
        plan=plan,
    )
    k("delete", "namespace", ns, "--wait=false", check=False)


def _diff(*args: str) -> dict[str, Any]:
    code, out, err = run_cli("diff", "--output", "json", *args)
    assert code == 0, out + err
    doc: dict[str, Any] = json.loads(out)
    return doc


def _person(drift: dict[str, Any]) -> None:
    assert drift["decision"] == "writeback" and drift["manager"] == "kubectl-patch", drift
    assert TIME.match(drift["time"]), drift


def _brought(drifts: dict[str, dict[str, Any]], path: str, cause: str) -> None:
    d = drifts[path]
    assert d["decision"] == "ignore", d
    assert f"by the API server because of {cause}" in d["reason"], d


def _in_pr_body(case: Case, *fields: str) -> None:
    """The PR preview lists each field under "Not written back", and no patched file carries it."""
    body, _, diffs = case.plan.partition("\n--- a/")
    section = body[body.index("Not written back") :]
    added = [line for line in diffs.splitlines() if line.startswith("+") and not line.startswith("+++")]
    for field in fields:
        assert field in section, field
        assert not [line for line in added if field in line], (field, added)


@pytest.fixture(params=["cluster", "offline"])
def doc(request: pytest.FixtureRequest, case: Case) -> dict[str, Any]:
    return case.cluster if request.param == "cluster" else case.offline


def test_a_probe_added_live(doc: dict[str, Any], case: Case) -> None:
    found = by_path(drifts_of(doc, kind="Deployment", name="web-probe"))
    for f in ("path", "port"):
        _person(found[f"{APP}.livenessProbe.httpGet.{f}"])
    for f in ("periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold", "httpGet.scheme"):
        _brought(found, f"{APP}.livenessProbe.{f}", f"{APP}.livenessProbe.httpGet")
    _in_pr_body(case, "periodSeconds", "failureThreshold")


def test_a_container_and_an_init_container_added_live(doc: dict[str, Any], case: Case) -> None:
    found = by_path(drifts_of(doc, kind="Deployment", name="web-sidecar"))
    for lst, name in (("containers", "debug"), ("initContainers", "wait")):
        item = f"spec.template.spec.{lst}[name={name}]"
        _person(found[item])
        assert found[item]["live"] == {"name": name, "image": "busybox:1.36"}, found[item]
        for f in ("terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy"):
            _brought(found, f"{item}.{f}", item)
    _in_pr_body(case, "terminationMessagePath", "terminationMessagePolicy")


def test_a_port_added_live(doc: dict[str, Any], case: Case) -> None:
    found = by_path(drifts_of(doc, kind="Deployment", name="web-port"))
    item = f"{APP}.ports[containerPort=9090,protocol=TCP]"
    _person(found[item])
    # the protocol stays: it is a key field that names the port in Git as well (ports[containerPort,protocol])
    assert found[item]["live"] == {"containerPort": 9090, "name": "metrics", "protocol": "TCP"}, found[item]


def test_a_volume_and_an_env_value_from_added_live(doc: dict[str, Any], case: Case) -> None:
    found = by_path(drifts_of(doc, kind="Deployment", name="web-volume"))
    volume, env = "spec.template.spec.volumes[name=cfg]", f"{APP}.env[name=POD_NAME]"
    _person(found[volume])
    _person(found[env])
    assert found[volume]["live"] == {"name": "cfg", "configMap": {"name": "settings"}}, found[volume]
    assert found[env]["live"] == {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    assert any(p.endswith("configMap.defaultMode") and d["decision"] == "ignore" for p, d in found.items())
    assert any(p.endswith("fieldRef.apiVersion") and d["decision"] == "ignore" for p, d in found.items())
    _in_pr_body(case, "defaultMode")


def test_session_affinity_set_live(case: Case) -> None:
    found = by_path(drifts_of(case.cluster, kind="Service", name="affinity"))
    _person(found["spec.sessionAffinity"])
    _brought(found, "spec.sessionAffinityConfig.clientIP.timeoutSeconds", "spec.sessionAffinity")
    _in_pr_body(case, "timeoutSeconds")
    offline = drifts_of(case.offline, kind="Service", name="affinity")
    assert [d["path"] for d in offline if d["decision"] == "writeback"] == ["spec.sessionAffinity"]


def test_a_service_turned_into_a_load_balancer(case: Case) -> None:
    found = by_path(drifts_of(case.cluster, kind="Service", name="public"))
    _person(found["spec.type"])
    for f in ("externalTrafficPolicy", "allocateLoadBalancerNodePorts"):
        _brought(found, f"spec.{f}", "spec.type")
    assert not [p for p, d in found.items() if "nodePort" in p and d["decision"] == "writeback"], found
    _in_pr_body(case, "externalTrafficPolicy")


def test_strategy_switched_to_rolling_update(case: Case) -> None:
    found = by_path(drifts_of(case.cluster, kind="Deployment", name="web-strategy"))
    assert found["spec.strategy.type"]["decision"] == "writeback", found
    for f in ("maxSurge", "maxUnavailable"):
        _brought(found, f"spec.strategy.rollingUpdate.{f}", "spec.strategy.type")
    _in_pr_body(case, "maxSurge")
