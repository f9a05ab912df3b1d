"""A person's edits are written back, however small the object; the server's defaults are not (issue 9 §1).

On the real apiserver, for each way a GitOps controller syncs: Git is synced with that controller's field manager,
then a person edits with real kubectl (edit, label, annotate, set resources, patch, set env, replace), and
``writeback diff`` runs against the cluster and, offline, against a ``--show-managed-fields`` dump of it.

The lost-hotfix case: on a small ConfigMap, a ``kubectl edit`` that changes one of its two keys and adds a third
touches half of the fields Git declares. The added key must be written back with its manager and time, not
dropped as a "default" because a dry-run of the Git manifest keeps a field the person owns.
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

from tests.drift.support import SYNC_MODES, by_path, configmap, drifts_of, sync, to_yaml, write
from tests.support.cli import run_cli
from tests.support.gitrepos import commit, init_repo
from tests.support.objects import deployment

pytestmark = pytest.mark.controlplane

APP = "spec.template.spec.containers[name=app]"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
ACTIONABLE = ("writeback", "flag")

# A KUBE_EDITOR that sets values in the object kubectl edit opens, as a person does in vi. WB_EDIT holds a JSON list
# of [path, value] pairs (path: a list of keys).
EDITOR = """\
import json, os, sys
import yaml
p = sys.argv[-1]
doc = yaml.safe_load(open(p))
for path, value in json.loads(os.environ["WB_EDIT"]):
    node = doc
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
open(p, "w").write(yaml.safe_dump(doc))
"""


def service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]},
    }


@dataclass(kw_only=True)
class Edits:
    mode: str
    namespace: str
    repo: Path
    cluster: dict[str, Any]  # writeback diff --output json against the cluster
    offline: dict[str, Any]  # the same against a --show-managed-fields dump


@pytest.fixture(scope="module", params=sorted(SYNC_MODES))
def edits(
    request: pytest.FixtureRequest, controlplane: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Edits]:
    mode = str(request.param)
    tmp = tmp_path_factory.mktemp(f"edits-{mode}")
    ns = f"wb-edits-{uuid.uuid4().hex[:8]}"
    controlplane.kubectl("create", "namespace", ns)
    repo = tmp / "gitops"
    init_repo(repo)
    replaced = deployment("web-replaced")
    files = [
        write(repo, "apps/settings.yaml", configmap("settings", {"mode": "strict", "level": "info"})),
        write(repo, "apps/front.yaml", service("front")),
        write(repo, "apps/web-edit.yaml", deployment("web-edit")),
        write(repo, "apps/web-meta.yaml", deployment("web-meta")),
        write(repo, "apps/web-res.yaml", deployment("web-res")),
        write(repo, "apps/web-patch.yaml", deployment("web-patch")),
        write(repo, "apps/web-env.yaml", deployment("web-env", env={"LOG_LEVEL": "info", "DEBUG_DUMP": "full"})),
        write(repo, "apps/web-patched.yaml", deployment("web-patched")),
        write(repo, "apps/web-replaced.yaml", replaced),
    ]
    commit(repo, "apps")
    sync(controlplane, mode, ns, *files)

    k = controlplane.kubectl
    editor = tmp / "editor.py"
    editor.write_text(EDITOR)

    def edit(resource: str, *changes: tuple[list[str], Any]) -> None:
        env = {"KUBE_EDITOR": f"{sys.executable} {editor}", "WB_EDIT": json.dumps(changes)}
        k("edit", resource, "-n", ns, env=env)

    # the lost hotfix: one of two keys changed, one added (half of what Git declares is touched)
    edit("configmap/settings", (["data", "mode"], "permissive"), (["data", "circuit-breaker"], "open"))
    # a small Service: its selector changed and a field added
    edit("service/front", (["spec", "selector", "app"], "front-v2"), (["spec", "publishNotReadyAddresses"], True))
    # fields the Git manifest lacks, added by kubectl edit
    edit(
        "deployment/web-edit",
        (["spec", "minReadySeconds"], 10),
        (["spec", "template", "spec", "terminationGracePeriodSeconds"], 60),
    )
    k("label", "deployment/web-meta", "-n", ns, "team=payments")
    k("annotate", "deployment/web-meta", "-n", ns, "oncall=alice")
    k("set", "resources", "deployment/web-res", "-n", ns, "--limits=cpu=500m,memory=256Mi")
    toleration = {"key": "dedicated", "operator": "Equal", "value": "payments", "effect": "NoSchedule"}
    port = {"containerPort": 9090, "name": "metrics"}
    patch = {
        "spec": {"template": {"spec": {"tolerations": [toleration], "containers": [{"name": "app", "ports": [port]}]}}}
    }
    k("patch", "deployment/web-patch", "-n", ns, "--type=strategic", "-p", json.dumps(patch))
    k("set", "env", "deployment/web-env", "-n", ns, "DEBUG_DUMP-")
    # the converse: a patch of one field, and a person's PUT of the whole object (kubectl replace --force deletes
    # and creates it, so kubectl-replace owns every field, the server's defaults included)
    k("set", "image", "deployment/web-patched", "-n", ns, "app=nginx:1.27")
    replaced["metadata"]["namespace"] = ns
    replaced["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    k("replace", "--force", "-f", "-", input=to_yaml(replaced))

    dump = tmp / "dump.yaml"
    dump.write_text(k("get", "deployments,configmaps,services", "-n", ns, "-o", "yaml", "--show-managed-fields").stdout)
    cluster = _diff(repo, "--kubeconfig", controlplane.kubeconfig, "--namespace", ns)
    # the evidence was the dry-run create of each Git manifest's twin, not the fallback
    assert not [n for n in cluster.get("notes", []) if "twin" in n or "built-in defaults" in n], cluster["notes"]
    yield Edits(
        mode=mode,
        namespace=ns,
        repo=repo,
        cluster=cluster,
        offline=_diff(repo, "--live", str(dump), "--namespace", ns),
    )
    k("delete", "namespace", ns, "--wait=false", check=False)


def _diff(repo: Path, *args: str) -> dict[str, Any]:
    code, out, err = run_cli("diff", "--repo", str(repo), "--output", "json", "--explain", *args)
    assert code == 0, out + err
    doc: dict[str, Any] = json.loads(out)
    return doc


def _written_back(doc: dict[str, Any], kind: str, name: str) -> dict[str, dict[str, Any]]:
    return {p: d for p, d in by_path(drifts_of(doc, kind=kind, name=name)).items() if d["decision"] in ACTIONABLE}


def _person(drift: dict[str, Any], manager: str, *, op: str, live: Any = None) -> None:
    assert drift["op"] == op, drift
    assert drift["decision"] == "writeback", drift
    assert drift["manager"] == manager and drift["operation"] == "Update", drift
    assert TIME.match(drift["time"]), drift
    if live is not None:
        assert drift["live"] == live, drift


@pytest.fixture(params=["cluster", "offline"])
def doc(request: pytest.FixtureRequest, edits: Edits) -> dict[str, Any]:
    return edits.cluster if request.param == "cluster" else edits.offline


def test_a_key_added_to_a_small_configmap_is_written_back(doc: dict[str, Any]) -> None:
    found = _written_back(doc, "ConfigMap", "settings")
    assert set(found) == {"data.mode", "data.circuit-breaker"}
    _person(found["data.mode"], "kubectl-edit", op="change", live="permissive")
    _person(found["data.circuit-breaker"], "kubectl-edit", op="add", live="open")
    assert not [d for d in doc.get("dropped", []) if "circuit-breaker" in d["path"]]


def test_a_small_service_edit_is_written_back(doc: dict[str, Any]) -> None:
    found = _written_back(doc, "Service", "front")
    assert set(found) == {"spec.selector.app", "spec.publishNotReadyAddresses"}
    _person(found["spec.selector.app"], "kubectl-edit", op="change", live="front-v2")
    _person(found["spec.publishNotReadyAddresses"], "kubectl-edit", op="add", live=True)


def test_fields_added_by_kubectl_edit_to_a_deployment(doc: dict[str, Any]) -> None:
    found = _written_back(doc, "Deployment", "web-edit")
    assert set(found) == {"spec.minReadySeconds", "spec.template.spec.terminationGracePeriodSeconds"}
    _person(found["spec.minReadySeconds"], "kubectl-edit", op="add", live=10)
    _person(found["spec.template.spec.terminationGracePeriodSeconds"], "kubectl-edit", op="add", live=60)


def test_label_and_annotation(doc: dict[str, Any]) -> None:
    found = _written_back(doc, "Deployment", "web-meta")
    assert set(found) == {"metadata.labels.team", "metadata.annotations.oncall"}
    _person(found["metadata.labels.team"], "kubectl-label", op="add", live="payments")
    _person(found["metadata.annotations.oncall"], "kubectl-annotate", op="add", live="alice")


def test_limits_from_kubectl_set_resources(doc: dict[str, Any]) -> None:
    found = _written_back(doc, "Deployment", "web-res")
    assert set(found) == {f"{APP}.resources.limits.cpu", f"{APP}.resources.limits.memory"}
    _person(found[f"{APP}.resources.limits.cpu"], "kubectl-set", op="add", live="500m")
    _person(found[f"{APP}.resources.limits.memory"], "kubectl-set", op="add", live="256Mi")


def test_toleration_and_port_from_kubectl_patch(doc: dict[str, Any]) -> None:
    found = _written_back(doc, "Deployment", "web-patch")
    toleration = "spec.template.spec.tolerations"
    port = f"{APP}.ports[containerPort=9090,protocol=TCP]"
    assert set(found) == {toleration, port}, found
    _person(found[toleration], "kubectl-patch", op="add")
    assert found[toleration]["live"] == [
        {"key": "dedicated", "operator": "Equal", "value": "payments", "effect": "NoSchedule"}
    ]
    _person(found[port], "kubectl-patch", op="add")
    assert found[port]["live"]["name"] == "metrics"


def test_env_var_removed_by_kubectl_set_env(doc: dict[str, Any]) -> None:
    found = _written_back(doc, "Deployment", "web-env")
    assert set(found) == {f"{APP}.env[name=DEBUG_DUMP]"}
    removed = found[f"{APP}.env[name=DEBUG_DUMP]"]
    assert (removed["op"], removed["decision"]) == ("remove", "writeback")
    assert removed["git"] == {"name": "DEBUG_DUMP", "value": "full"}


DEFAULTED = (
    f"{APP}.imagePullPolicy",
    f"{APP}.terminationMessagePath",
    f"{APP}.ports[containerPort=8080,protocol=TCP].protocol",
    "spec.strategy",
    "spec.revisionHistoryLimit",
)


@pytest.mark.parametrize("name", ["web-edit", "web-patched", "web-replaced"])
def test_real_defaults_stay_dropped(doc: dict[str, Any], name: str) -> None:
    reported = {d["path"] for d in drifts_of(doc, kind="Deployment", name=name)}
    assert not reported & set(DEFAULTED), reported
    dropped = {d["path"] for d in doc.get("dropped", []) if d["resource"]["name"] == name}
    if name == "web-replaced":  # kubectl-replace owns them all; they are still defaults
        assert {f"{APP}.imagePullPolicy", f"{APP}.terminationMessagePath", "spec.revisionHistoryLimit"} <= dropped


@pytest.mark.parametrize("name", ["web-patched", "web-replaced"])
def test_the_image_change_is_the_only_change(doc: dict[str, Any], name: str) -> None:
    found = _written_back(doc, "Deployment", name)
    assert set(found) == {f"{APP}.image"}
    manager = "kubectl-set" if name == "web-patched" else "kubectl-replace"
    _person(found[f"{APP}.image"], manager, op="change", live="nginx:1.27")
