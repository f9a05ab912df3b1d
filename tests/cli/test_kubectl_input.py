"""Input as kubectl users produce it, on the real kube-apiserver: dumps of some kinds only, JSON dumps, a dump saved
inside the repository, a cluster-scoped custom resource, a command run from a subdirectory, and the objects the API
server creates itself (issue 19, section 2). Every dump here is the real kubectl's output."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli.process import environment, writeback
from tests.controlplane import cp
from tests.support.gitrepos import commit, init_repo, write_files

pytestmark = pytest.mark.controlplane

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {ns}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
        - name: app
          image: registry.example.com/web:1.0.0
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {ns}\ndata:\n  mode: slow\n"
SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: {ns}
spec:
  selector: {{app: web}}
  ports:
    - port: 80
      targetPort: 8080
"""
HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: {ns}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  minReplicas: 1
  maxReplicas: 3
"""


@dataclass(frozen=True)
class Shop:
    ns: str
    repo: Path  # a git repository whose apps/ declares the four objects, applied as Argo CD applies them
    plane: cp.ControlPlane

    def dump(self, *what: str, output: str = "yaml") -> str:
        """What the real ``kubectl get WHAT -n NS -o yaml|json --show-managed-fields`` prints."""
        return self.plane.kubectl("get", *what, "-n", self.ns, "-o", output, "--show-managed-fields").stdout


def _ns(plane: cp.ControlPlane) -> str:
    name = f"wb-{uuid.uuid4().hex[:10]}"
    plane.kubectl("create", "namespace", name)
    return name


@pytest.fixture(scope="module")
def shop(controlplane: cp.ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shop]:
    ns = _ns(controlplane)
    repo = tmp_path_factory.mktemp("shop") / "gitops"
    init_repo(repo)
    files = {f"apps/web/{n}.yaml": t.format(ns=ns) for n, t in
             (("deployment", DEPLOYMENT), ("configmap", CONFIGMAP), ("service", SERVICE), ("hpa", HPA))}  # fmt: skip
    commit(repo, "shop", files=files)
    controlplane.kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-f", str(repo / "apps/web"))
    controlplane.kubectl("set", "env", "deployment/web", "-n", ns, "TIMEOUT_MS=5000")  # a person, at 3 AM
    controlplane.kubectl("patch", "configmap", "settings", "-n", ns, "--type=merge", "-p", '{"data":{"mode":"fast"}}')
    yield Shop(ns=ns, repo=repo, plane=controlplane)
    controlplane.kubectl("delete", "namespace", ns, "--wait=false")


def _drifts(doc: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(d["resource"]["kind"], d["path"], d["decision"]) for d in doc["drifts"]}


WRITEBACKS = {
    ("Deployment", "spec.template.spec.containers[name=app].env[name=TIMEOUT_MS]", "writeback"),
    ("ConfigMap", "data.mode", "writeback"),
}


def test_a_dump_of_some_kinds_compares_only_those_kinds(shop: Shop) -> None:
    partial = shop.dump("deploy,cm")  # `kubectl get deploy,cm -n shop -o yaml`: no HPA, no Service
    git = ["--repo", str(shop.repo), "--path", "apps"]
    diff = writeback("diff", "--live", "-", *git, "--exit-code", "-o", "json", stdin=partial)
    assert diff.returncode == 1, diff.stderr  # the person's two edits are drift; nothing else is
    doc = json.loads(diff.stdout)
    assert _drifts(doc) == WRITEBACKS
    note = "--live holds no HorizontalPodAutoscaler, Service: not compared"
    assert any(n.startswith(note) for n in doc["notes"])
    text = writeback("diff", "--live", "-", *git, stdin=partial)
    assert text.returncode == 0 and text.stderr.count(f"writeback: note: {note}") == 1, text.stderr
    plan = writeback("plan", "--live", "-", *git, stdin=partial)
    assert plan.returncode == 0, plan.stderr
    assert "deleted" not in plan.stdout and "missing from the cluster" not in plan.stdout  # nor in the PR body

    explicit = writeback("diff", "--live", "-", *git, "--kinds", "deploy,cm,hpa", "--kinds", "svc", "-o", "json",
                         stdin=partial)  # fmt: skip
    assert explicit.returncode == 0, explicit.stderr  # --kinds says the dump is meant whole: they were deleted
    assert _drifts(json.loads(explicit.stdout)) == WRITEBACKS | {
        ("HorizontalPodAutoscaler", "", "deleted"), ("Service", "", "deleted")}  # fmt: skip
    assert "not compared" not in explicit.stderr
    one = writeback("diff", "--live", "-", *git, "--kinds", "Deployment", "-o", "json", stdin=partial)
    assert {k for k, _, _ in _drifts(json.loads(one.stdout))} == {"Deployment"}
    typo = writeback("diff", "--live", "-", *git, "--kinds", "deploy,hpas-typo", stdin=partial)
    assert typo.returncode == 2 and "--kinds hpas-typo: no such kind in Git or the live side" in typo.stderr


def test_json_dumps_read_as_kubectl_reads_them(shop: Shop, tmp_path: Path) -> None:
    git = ["--repo", str(shop.repo), "--path", "apps", "-o", "json"]
    as_yaml = writeback("diff", "--live", "-", *git, stdin=shop.dump("deploy,cm,svc,hpa"))
    assert as_yaml.returncode == 0, as_yaml.stderr
    expected = json.loads(as_yaml.stdout)["drifts"]
    assert {(d["resource"]["kind"], d["path"], d["decision"]) for d in expected} >= WRITEBACKS
    # `kubectl get deploy -o json; kubectl get cm,svc,hpa -o json`: two JSON documents, one after the other
    concatenated = shop.dump("deploy", output="json") + shop.dump("cm,svc,hpa", output="json")
    piped = writeback("diff", "--live", "-", *git, stdin=concatenated)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["drifts"] == expected
    dumps = tmp_path / "dumps"
    write_files(dumps, {"deploy.json": shop.dump("deploy", output="json"),
                        "rest.json": shop.dump("cm,svc,hpa", output="json")})  # fmt: skip
    directory = writeback("diff", "--live", str(dumps), *git)
    assert directory.returncode == 0, directory.stderr
    assert json.loads(directory.stdout)["drifts"] == expected
    broken = writeback("diff", "--live", "-", *git, stdin='{"apiVersion": "v1",\n "kind": }')
    assert broken.returncode == 2 and "<stdin>:2:10: not valid JSON: Expecting value" in broken.stderr


def test_a_dump_saved_in_the_repository_is_no_manifest(shop: Shop) -> None:
    (shop.repo / "live.yaml").write_text(shop.dump("deploy,cm,svc,hpa"))
    try:
        result = writeback("diff", "--live", "live.yaml", "--exit-code", "-o", "json", cwd=shop.repo)
        assert result.returncode == 1, result.stderr  # drift, and nothing else
        assert "declared more than once" not in result.stderr and "none of the kinds" not in result.stderr
        assert _drifts(json.loads(result.stdout)) == WRITEBACKS
        (shop.repo / "dumps").mkdir()
        (shop.repo / "live.yaml").rename(shop.repo / "dumps" / "live.yaml")
        in_dir = writeback("diff", "--live", "dumps", "--exit-code", "-o", "json", cwd=shop.repo)  # --live DIR
        assert in_dir.returncode == 1 and _drifts(json.loads(in_dir.stdout)) == WRITEBACKS, in_dir.stderr
    finally:
        (shop.repo / "live.yaml").unlink(missing_ok=True)
        (shop.repo / "dumps" / "live.yaml").unlink(missing_ok=True)
        if (shop.repo / "dumps").exists():
            (shop.repo / "dumps").rmdir()


def test_plan_exit_code_fails_on_a_write_back_it_cannot_resolve(shop: Shop) -> None:
    live = shop.dump("deploy,cm")
    # markers: no `$writeback` marker binds the edited fields, so neither can be written back
    args = ["--live", "-", "--repo", str(shop.repo), "--path", "apps", "--source", "markers"]
    result = writeback("plan", *args, "--exit-code", stdin=live)
    assert result.returncode == 1, result.stderr
    assert f"unresolved Deployment.apps {shop.ns}/web" in result.stdout and "no file changes" in result.stdout
    assert writeback("plan", *args, stdin=live).returncode == 0  # without --exit-code: a preview, exit 0
    resolved = writeback("plan", "--live", "-", "--repo", str(shop.repo), "--path", "apps", "--exit-code", stdin=live)
    assert resolved.returncode == 1 and "unresolved" not in resolved.stdout  # files change: drift too


OVERLAY = "resources:\n  - ../../base\nnamespace: {ns}\nnameSuffix: -prod\n"


def test_run_from_a_subdirectory_finds_the_repository_as_git_does(
    controlplane: cp.ControlPlane, kustomize_bin: Path, tmp_path: Path
) -> None:
    ns = _ns(controlplane)
    repo = tmp_path / "gitops"
    init_repo(repo)
    base = DEPLOYMENT.replace("  namespace: {ns}\n", "")
    commit(repo, "overlay", files={"base/deployment.yaml": base.format(), "base/kustomization.yaml":
                                   "resources: [deployment.yaml]\n", "overlays/prod/kustomization.yaml":
                                   OVERLAY.format(ns=ns)})  # fmt: skip
    rendered = subprocess_out([str(kustomize_bin), "build", str(repo / "overlays/prod")])
    controlplane.kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-f", "-", input=rendered)
    controlplane.kubectl("set", "env", "deployment/web-prod", "-n", ns, "TIMEOUT_MS=5000")
    (tmp_path / "live.yaml").write_text(controlplane.kubectl("get", "deploy", "-n", ns, "-o", "yaml",
                                                             "--show-managed-fields").stdout)  # fmt: skip
    env = environment(WRITEBACK_KUSTOMIZE=str(kustomize_bin))
    here = repo / "overlays" / "prod"
    result = writeback("plan", "--live", "../../../live.yaml", "--exit-code", cwd=here, env=env)
    assert result.returncode == 1, result.stderr  # a change set changes files
    assert "not found" not in result.stdout + result.stderr and "unresolved" not in result.stdout
    assert "branch:    writeback/prod/prod -> main" in result.stdout  # named after the current directory
    assert "+++ b/overlays/prod/" in result.stdout  # the overlay, as the top of the repository names it
    from_top = writeback("plan", "--live", str(tmp_path / "live.yaml"), "--path", "overlays/prod", cwd=repo, env=env)
    assert from_top.stdout == result.stdout
    below = writeback("diff", "--live", str(tmp_path / "live.yaml"), "--path", ".", "-o", "json", cwd=here, env=env)
    assert below.returncode == 0 and json.loads(below.stdout)["drifts"], below.stderr  # --path: from here, as git
    outside = writeback("diff", "--live", str(tmp_path / "live.yaml"), "--path", "../../..", cwd=here, env=env)
    assert outside.returncode == 2 and "is outside the repository" in outside.stderr
    controlplane.kubectl("delete", "namespace", ns, "--wait=false")


def subprocess_out(argv: list[str]) -> str:
    import subprocess

    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120).stdout


CLUSTER_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clustertests.{group}
spec:
  group: {group}
  scope: Cluster
  names: {{kind: ClusterTest, listKind: ClusterTestList, plural: clustertests, singular: clustertest}}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              x-kubernetes-preserve-unknown-fields: true
"""
CLUSTER_CR = "apiVersion: {group}/v1\nkind: ClusterTest\nmetadata:\n  name: global-config\nspec:\n  setting: value\n"


@pytest.mark.parametrize("source", ["kustomize", "plain"])
def test_a_dumped_cluster_scoped_custom_resource_is_compared(
    controlplane: cp.ControlPlane, kustomize_bin: Path, tmp_path: Path, source: str
) -> None:
    """The custom resource has no entry in writeback's tables and its CRD is not in the dump; the dump shows it
    without a namespace, so it is cluster-scoped, although Kustomize's `namespace:` gives it one in Git."""
    group = f"t{uuid.uuid4().hex[:8]}.writeback.dev"
    controlplane.kubectl("apply", "-f", "-", input=CLUSTER_CRD.format(group=group))
    controlplane.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/clustertests.{group}")
    ns = f"wb-{uuid.uuid4().hex[:6]}"
    repo = tmp_path / "gitops"
    init_repo(repo)
    commit(repo, "cr", files={"apps/config.yaml": CLUSTER_CR.format(group=group),
                              "apps/kustomization.yaml": f"namespace: {ns}\nresources: [config.yaml]\n"})  # fmt: skip
    controlplane.kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-f",
                         str(repo / "apps/config.yaml"))  # fmt: skip
    controlplane.kubectl("patch", f"clustertests.{group}", "global-config", "--type=merge",
                         "-p", '{"spec":{"setting":"hotfix"}}')  # fmt: skip
    dump = controlplane.kubectl("get", f"clustertests.{group}", "-o", "yaml", "--show-managed-fields").stdout
    env = environment(WRITEBACK_KUSTOMIZE=str(kustomize_bin))
    result = writeback("diff", "--live", "-", "--repo", str(repo), "--path", "apps", "--source", source, "-o", "json",
                       stdin=dump, env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr
    [drift] = json.loads(result.stdout)["drifts"]
    assert drift["resource"] == {"apiVersion": f"{group}/v1", "kind": "ClusterTest", "namespace": None,
                                 "name": "global-config"}  # fmt: skip
    assert (drift["path"], drift["decision"], drift["live"]) == ("spec.setting", "writeback", "hotfix")
    controlplane.kubectl("delete", "crd", f"clustertests.{group}", "--wait=false")


CONTROL_PLANE = {"kube-apiserver", "api-priority-and-fairness-config-producer-v1", "kubernetes-service-cidr-controller"}


def _only_control_plane(o: dict[str, Any]) -> bool:
    """Written by the control plane alone; an object with no managedFields at all (another test's, written with
    them cleared) has no known writer."""
    managers = {m["manager"] for m in o["metadata"].get("managedFields", [])}
    return bool(managers) and managers <= CONTROL_PLANE


def _created_by_the_api_server(plane: cp.ControlPlane) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of the Services, ConfigMaps and Roles whose only writers are the control plane."""
    listed = json.loads(plane.kubectl("get", "svc,cm,roles", "-A", "-o", "json", "--show-managed-fields").stdout)
    return {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in listed["items"]
            if _only_control_plane(o)}  # fmt: skip


def test_objects_the_api_server_creates_are_never_new(controlplane: cp.ControlPlane, tmp_path: Path) -> None:
    """Git declares a Service in `default`, a ConfigMap in `kube-system` and a Role in `kube-public`: the API
    server's own objects there (Service default/kubernetes, ...) are listed, and none of them is `new`."""
    own = _created_by_the_api_server(controlplane)
    assert ("Service", "default", "kubernetes") in own and ("ConfigMap", "kube-system",
                                                            "extension-apiserver-authentication") in own  # fmt: skip
    repo = tmp_path / "gitops"
    init_repo(repo)
    name = f"wb-{uuid.uuid4().hex[:8]}"
    files = {
        "default/svc.yaml": SERVICE.format(ns="default").replace("name: web", f"name: {name}"),
        "system/cm.yaml": CONFIGMAP.format(ns="kube-system").replace("name: settings", f"name: {name}"),
        "public/role.yaml": f"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {name}\n"
        "  namespace: kube-public\nrules: []\n",
    }
    commit(repo, "declared, never applied", files=files)
    for extra in ((), ("-A",)):
        result = writeback("diff", "--kubeconfig", controlplane.kubeconfig, "--repo", str(repo), "-o", "json", *extra)
        assert result.returncode == 0, result.stderr
        doc = json.loads(result.stdout)
        theirs = [d for d in doc["drifts"] if (d["resource"]["kind"], d["resource"]["namespace"],
                                               d["resource"]["name"]) in own]  # fmt: skip
        assert theirs == [], [(d["resource"], d["reason"]) for d in theirs]
        assert {d["decision"] for d in doc["drifts"] if d["resource"]["name"] == name} == {"deleted"}


def test_all_namespaces_lists_git_kinds_everywhere(shop: Shop, tmp_path: Path) -> None:
    """A ConfigMap a person created in another namespace is `new` with -A, online and offline; unseen without."""
    other = _ns(shop.plane)
    shop.plane.kubectl("create", "configmap", "stray", "-n", other, "--from-literal=a=b")
    kc = ["--kubeconfig", shop.plane.kubeconfig, "--repo", str(shop.repo), "--path", "apps", "-o", "json"]
    dump = shop.plane.kubectl("get", "deploy,cm,svc,hpa", "-A", "-o", "yaml", "--show-managed-fields").stdout
    offline = ["--live", "-", "--repo", str(shop.repo), "--path", "apps", "-o", "json"]
    for args, stdin in ((kc, None), (offline, dump)):
        without = writeback("diff", *args, stdin=stdin)
        assert without.returncode == 0, without.stderr
        assert not [d for d in json.loads(without.stdout)["drifts"] if d["resource"]["namespace"] == other]
        everywhere = writeback("diff", *args, "-A", stdin=stdin)
        assert everywhere.returncode == 0, everywhere.stderr
        stray = [d for d in json.loads(everywhere.stdout)["drifts"] if d["resource"]["namespace"] == other]
        assert [(d["resource"]["name"], d["decision"]) for d in stray] == [("stray", "new")], stray
    shop.plane.kubectl("delete", "namespace", other, "--wait=false")
