"""Smoke tests of the real control plane, its fixtures, and the up/down scripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.controlplane import cp, processes, webhook
from tests.support.objects import deployment
from tests.support.polling import wait_until

pytestmark = pytest.mark.controlplane
HERE = Path(__file__).resolve().parent
IMAGE = "nginx:1.27"  # the editor below looks for this tag


def get(controlplane: cp.ControlPlane, namespace: str, ref: str) -> dict[str, Any]:
    return json.loads(controlplane.kubectl("-n", namespace, "get", ref, "-o", "json", "--show-managed-fields").stdout)  # type: ignore[no-any-return]


def managers(obj: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(manager, operation, subresource) of every managedFields entry."""
    return {(e["manager"], e["operation"], e.get("subresource", "")) for e in obj["metadata"].get("managedFields", [])}


def ssa(k8s: Any, namespace: str, body: dict[str, Any], *, manager: str) -> None:
    client.AppsV1Api(k8s).patch_namespaced_deployment(
        name=body["metadata"]["name"],
        namespace=namespace,
        body=body,
        field_manager=manager,
        force=True,
        _content_type="application/apply-patch+yaml",
    )


def test_apiserver_answers_with_its_version(controlplane: cp.ControlPlane, k8s: Any) -> None:
    assert client.VersionApi(k8s).get_code().git_version == "v1.36.3"
    version = json.loads(controlplane.kubectl("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"] == "v1.36.3"
    assert version["clientVersion"]["gitVersion"] == "v1.36.3"
    assert controlplane.server.startswith("https://127.0.0.1:")
    assert "writeback-test" in controlplane.kubectl("config", "current-context").stdout


def test_server_side_apply_records_argocd_controller(controlplane: cp.ControlPlane, k8s: Any, namespace: str) -> None:
    ssa(k8s, namespace, deployment("web", image=IMAGE, replicas=1), manager="argocd-controller")
    assert ("argocd-controller", "Apply", "") in managers(get(controlplane, namespace, "deployment/web"))


def test_kubectl_records_its_real_manager_names(
    controlplane: cp.ControlPlane, k8s: Any, namespace: str, tmp_path: Path
) -> None:
    ssa(k8s, namespace, deployment("web", image=IMAGE, replicas=1), manager="argocd-controller")
    editor = tmp_path / "editor.py"
    editor.write_text(
        textwrap.dedent(
            """
            import sys
            path = sys.argv[-1]
            text = open(path).read()
            assert "image: nginx:1.27" in text, text
            open(path, "w").write(text.replace("image: nginx:1.27", "image: nginx:1.27.3"))
            """
        )
    )
    controlplane.kubectl("-n", namespace, "edit", "deployment/web", env={"KUBE_EDITOR": f"{sys.executable} {editor}"})
    controlplane.kubectl(
        "-n", namespace, "patch", "deployment/web", "--type=merge", "-p", '{"metadata":{"labels":{"team":"night"}}}'
    )
    controlplane.kubectl("-n", namespace, "scale", "deployment/web", "--replicas=4")
    controlplane.kubectl(
        "-n", namespace, "apply", "-f", "-", input=json.dumps(deployment("other", image=IMAGE, replicas=1))
    )
    live = get(controlplane, namespace, "deployment/web")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27.3"
    assert live["spec"]["replicas"] == 4
    assert {
        ("argocd-controller", "Apply", ""),
        ("kubectl-edit", "Update", ""),
        ("kubectl-patch", "Update", ""),
        ("kubectl", "Update", "scale"),
    } <= managers(live)
    other = get(controlplane, namespace, "deployment/other")
    assert ("kubectl-client-side-apply", "Update", "") in managers(other)


def test_hpa_like_scaling_records_kube_controller_manager_on_scale(
    controlplane: cp.ControlPlane, k8s: Any, namespace: str
) -> None:
    ssa(k8s, namespace, deployment("web", image=IMAGE, replicas=1), manager="argocd-controller")
    client.AppsV1Api(k8s).patch_namespaced_deployment_scale(
        name="web", namespace=namespace, body={"spec": {"replicas": 7}}, field_manager="kube-controller-manager"
    )
    live = get(controlplane, namespace, "deployment/web")
    assert live["spec"]["replicas"] == 7
    assert ("kube-controller-manager", "Update", "scale") in managers(live)


def containers(spec: dict[str, Any], field: str) -> list[str]:
    return [c["name"] for c in spec.get(field) or []]


def test_webhook_injects_sidecar_into_deployments_and_pods(
    controlplane: cp.ControlPlane, k8s: Any, namespace: str, sidecar_webhook: Any
) -> None:
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    apps.create_namespaced_deployment(  # a manifest dict: the client sends it as is
        namespace=namespace,
        body=deployment("plain", image=IMAGE, replicas=1),  # type: ignore[arg-type]
    )
    assert containers(get(controlplane, namespace, "deployment/plain")["spec"]["template"]["spec"], "containers") == [
        "app"
    ]

    sidecar_webhook.enable(namespace)
    ssa(k8s, namespace, deployment("web", image=IMAGE, replicas=1), manager="argocd-controller")
    template = get(controlplane, namespace, "deployment/web")["spec"]["template"]
    assert containers(template["spec"], "containers") == ["app", "istio-proxy"]
    assert containers(template["spec"], "initContainers") == ["istio-init"]
    assert "sidecar.istio.io/status" in template["metadata"]["annotations"]

    # UPDATE: a changed template keeps exactly one sidecar; a replaced template gets it back.
    ssa(k8s, namespace, deployment("web", image="nginx:1.28", replicas=1), manager="argocd-controller")
    controlplane.kubectl(
        "-n", namespace, "replace", "-f", "-", input=json.dumps(deployment("web", image="nginx:1.29", replicas=1))
    )
    template = get(controlplane, namespace, "deployment/web")["spec"]["template"]
    assert containers(template["spec"], "containers") == ["app", "istio-proxy"]
    assert containers(template["spec"], "initContainers") == ["istio-init"]
    assert template["spec"]["containers"][0]["image"] == "nginx:1.29"

    pod = client.V1Pod(metadata=client.V1ObjectMeta(name="pod"),
                       spec=client.V1PodSpec(containers=[client.V1Container(name="app", image="busybox")]))  # fmt: skip
    created = core.create_namespaced_pod(namespace=namespace, body=pod)
    assert created.spec is not None and created.metadata is not None
    assert [c.name for c in created.spec.containers] == ["app", "istio-proxy"]
    assert [c.name for c in created.spec.init_containers or ()] == ["istio-init"]
    assert "sidecar.istio.io/status" in (created.metadata.annotations or {})
    assert any(r["kind"]["kind"] == "Pod" and r["namespace"] == namespace for r in sidecar_webhook.requests)


def test_crds_are_established(controlplane: cp.ControlPlane, crds: list[str], namespace: str) -> None:
    assert "applications.argoproj.io" in crds
    assert "kustomizations.kustomize.toolkit.fluxcd.io" in crds
    assert "scaledobjects.keda.sh" in crds
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "guestbook"},
        "spec": {"project": "default", "destination": {"namespace": namespace}, "source": {"repoURL": "x"}},
    }
    controlplane.kubectl("-n", namespace, "apply", "--server-side", "-f", "-", input=json.dumps(app))
    assert get(controlplane, namespace, "applications.argoproj.io/guestbook")["metadata"]["name"] == "guestbook"


def test_push_to_bare_remote(git_remote: Any) -> None:
    (git_remote.work / "app.yaml").write_text("replicas: 1\n")
    sha = git_remote.commit_all("add app")
    git_remote.push()
    heads = subprocess.run(
        ["git", "ls-remote", str(git_remote.bare), "refs/heads/main"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert heads[:2] == [sha, "refs/heads/main"]
    assert git_remote.git("rev-parse", "--abbrev-ref", "HEAD").strip() == "main"


def test_kustomize_binary_builds_a_kustomization(kustomize_bin: Path, tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: [cm.yaml]\nnamePrefix: dev-\n")
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n")
    out = subprocess.run([str(kustomize_bin), "build", str(tmp_path)], capture_output=True, text=True, check=True)
    assert "name: dev-cfg" in out.stdout


def _alive(pids: dict[str, int]) -> list[str]:
    return [name for name, pid in pids.items() if processes.running(pid)]


def test_up_and_down_scripts_leave_nothing_behind(tmp_path: Path) -> None:
    workdir = tmp_path / "cp"
    up = subprocess.run([str(HERE / "up"), str(workdir)], capture_output=True, text=True, timeout=300, check=False)
    assert up.returncode == 0, up.stderr
    pids = json.loads((workdir / "state.json").read_text())["pids"]
    try:
        assert sorted(_alive(pids)) == ["etcd", "kube-apiserver"]
        env = {**os.environ, "KUBECONFIG": str(workdir / "kubeconfig")}
        kubectl = json.loads((workdir / "state.json").read_text())["bin_dir"] + "/kubectl"
        out = subprocess.run([kubectl, "get", "ns", "default", "-o", "name"], env=env, capture_output=True, text=True)
        assert out.stdout.strip() == "namespace/default", out.stderr
    finally:
        down = subprocess.run([str(HERE / "down"), str(workdir)], capture_output=True, text=True, timeout=60)
    assert down.returncode == 0, down.stderr
    assert _alive(pids) == []


def test_start_timeout_names_the_apiserver_and_kills_everything(tmp_path: Path) -> None:
    before = set(processes.CHILDREN)
    with pytest.raises(cp.ControlPlaneError, match=r"not ready after|exited during startup") as info:
        cp.start(workdir=tmp_path / "cp", timeout=0.01)
    assert "kube-apiserver" in str(info.value)
    assert set(processes.CHILDREN) == before


def test_build_failure_says_which_step_and_how_to_retry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WRITEBACK_CP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no Go toolchain
    with pytest.raises(cp.ControlPlaneError) as info:
        cp.build_binaries()
    message = str(info.value)
    assert "'go' command is not on PATH" in message
    assert "retry with:" in message and "tests/controlplane/build" in message


def test_a_killed_test_process_takes_its_control_plane_along(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import json, sys, time
        sys.path.insert(0, {str(HERE.parents[1])!r})
        from tests.controlplane import cp
        plane = cp.start(workdir=__import__("pathlib").Path({str(tmp_path / "cp")!r}))
        print(json.dumps(plane.pids), flush=True)
        time.sleep(600)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pids = json.loads(proc.stdout.readline())
        assert sorted(_alive(pids)) == ["etcd", "kube-apiserver"]
    finally:
        proc.kill()  # SIGKILL: no atexit, no finally in the child
        proc.wait()
    wait_until("etcd and kube-apiserver gone with their parent", lambda: _alive(pids) == [], timeout=15)


def test_injection_patch_adds_only_what_is_missing() -> None:
    pod: dict[str, Any] = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app"}]}}
    ops = webhook.injection_patch(obj=pod, kind="Pod", operation="CREATE")
    assert [op["path"] for op in ops] == [
        "/metadata/annotations",
        "/metadata/annotations/sidecar.istio.io~1status",
        "/spec/initContainers",
        "/spec/containers/-",
    ]
    injected = {
        "metadata": {"name": "p", "annotations": {webhook.STATUS_ANNOTATION: "x"}},
        "spec": {"containers": [{"name": "app"}, webhook.SIDECAR], "initContainers": [webhook.INIT]},
    }
    assert webhook.injection_patch(obj=injected, kind="Pod", operation="CREATE") == []
    assert webhook.injection_patch(obj=pod, kind="Pod", operation="UPDATE") == []
    dep = {"spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "app"}]}}}}
    paths = [op["path"] for op in webhook.injection_patch(obj=dep, kind="Deployment", operation="UPDATE")]
    assert paths[0] == "/spec/template/metadata/annotations" and paths[-1] == "/spec/template/spec/containers/-"
