"""The cluster adapter against the real kube-apiserver: discovery, pagination, SSA dry-run, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.objects import container, deployment
from writeback.adapters.kube.cluster import KubeCluster
from writeback.errors import ClusterError, InputError
from writeback.kube.refs import ObjectRef
from writeback.settings import Selector

pytestmark = pytest.mark.controlplane


@pytest.fixture
def cluster(controlplane: Any) -> KubeCluster:
    return KubeCluster.connect(kubeconfig=controlplane.kubeconfig)


def selector(**kw: Any) -> Selector:
    return Selector.model_validate(kw)


def test_discovery_resolves_plural_and_scope(cluster: KubeCluster) -> None:
    dep = cluster.resource_for(api_version="apps/v1", kind="Deployment")
    assert (dep.plural, dep.namespaced) == ("deployments", True)
    role = cluster.resource_for(api_version="rbac.authorization.k8s.io/v1", kind="ClusterRole")
    assert (role.plural, role.namespaced) == ("clusterroles", False)
    assert dep.object_path(namespace="a", name="b") == "/apis/apps/v1/namespaces/a/deployments/b"
    with pytest.raises(ClusterError, match=r"Gizmo \(apps/v1\)"):
        cluster.resource_for(api_version="apps/v1", kind="Gizmo")
    with pytest.raises(ClusterError, match=r"example\.com/v9"):
        cluster.resource_for(api_version="example.com/v9", kind="Thing")


def test_pagination_page_size_two_seven_objects(cluster: KubeCluster, controlplane: Any, namespace: str) -> None:
    for i in range(7):
        controlplane.kubectl("create", "configmap", f"cm-{i}", "-n", namespace, f"--from-literal=i={i}")
    controlplane.kubectl("create", "configmap", "other", "-n", namespace)
    controlplane.kubectl("label", "configmap", "-n", namespace, "--all", "page=yes")
    controlplane.kubectl("label", "configmap", "-n", namespace, "other", "page-")

    before = cluster.list_calls
    objs = cluster.list_objects(
        selector=selector(apiVersion="v1", kind="ConfigMap", namespaces=[namespace], labelSelector="page=yes"),
        page_size=2,
    )
    assert sorted(o.ref.name for o in objs) == [f"cm-{i}" for i in range(7)]
    assert cluster.list_calls - before == 4  # 2+2+2+1
    assert all(o.body["kind"] == "ConfigMap" and o.body["apiVersion"] == "v1" for o in objs)
    assert all(o.ref.namespace == namespace for o in objs)
    assert objs[0].body["metadata"]["managedFields"]  # raw JSON, managedFields kept

    excluded = cluster.list_objects(
        selector=selector(
            apiVersion="v1", kind="ConfigMap", namespaces=[namespace], exclude=["cm-0", f"{namespace}/cm-1"]
        )
    )
    assert sorted(o.ref.name for o in excluded) == ["cm-2", "cm-3", "cm-4", "cm-5", "cm-6", "other"]


def test_dry_run_apply_shows_defaults_keeps_undeclared_fields_and_persists_nothing(
    cluster: KubeCluster, controlplane: Any, namespace: str
) -> None:
    import json

    live = deployment("web", namespace=namespace, replicas=45, labelled=False, containers=[container()])
    controlplane.kubectl(
        "apply", "--server-side", "--field-manager=argocd-controller", "-f", "-", input=json.dumps(live)
    )
    body = deployment("web", namespace=namespace, labelled=False, containers=[container(image="nginx:1.27")])

    result = cluster.dry_run_apply(body=body)

    app = result["spec"]["template"]["spec"]["containers"][0]
    assert app["image"] == "nginx:1.27"
    assert app["imagePullPolicy"] == "IfNotPresent"  # defaulted
    assert app["terminationMessagePath"] == "/dev/termination-log"
    assert result["spec"]["replicas"] == 45  # SSA leaves alone what this manager does not declare
    managers = {m["manager"] for m in result["metadata"]["managedFields"]}
    assert "writeback-dryrun" in managers
    stored = json.loads(
        controlplane.kubectl("get", "deploy", "web", "-n", namespace, "-o", "json", "--show-managed-fields").stdout
    )
    assert stored["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert "writeback-dryrun" not in {m["manager"] for m in stored["metadata"]["managedFields"]}
    assert cluster.dry_run_calls == 1


def test_errors_name_the_resource(cluster: KubeCluster, namespace: str) -> None:
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": namespace}, "data": {"a": 1}}
    with pytest.raises(ClusterError, match=f"ConfigMap {namespace}/x"):
        cluster.dry_run_apply(body=bad)
    no_ns = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    with pytest.raises(ClusterError, match=r"metadata\.namespace"):
        cluster.dry_run_apply(body=no_ns)
    ref = ObjectRef(api_version="v1", kind="ConfigMap", namespace=namespace, name="missing")
    assert cluster.get_object(ref=ref) is None


def test_unreachable_cluster_is_a_cluster_error(controlplane: Any, tmp_path: Path) -> None:
    text = Path(controlplane.kubeconfig).read_text().replace(controlplane.server, "https://127.0.0.1:1")
    cfg = tmp_path / "kubeconfig"
    cfg.write_text(text)
    cluster = KubeCluster.connect(kubeconfig=str(cfg))
    with pytest.raises(ClusterError, match="discovery of apps/v1"):
        cluster.resource_for(api_version="apps/v1", kind="Deployment")
    with pytest.raises(InputError, match="no such file"):
        KubeCluster.connect(kubeconfig=str(tmp_path / "nope"))
