"""deploy/ applied to the real control plane with real kubectl; the ServiceAccount's rights checked by the
API server's own authorizer (SubjectAccessReview), and the dry-run-only use of its write verbs proven."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from tests.deploy.support import documents, find, render
from tests.support.objects import container, deployment
from tests.support.polling import wait_until
from writeback.adapters.kube.cluster import KubeCluster
from writeback.drift.evidence.twins import twin_manifest
from writeback.errors import ClusterError
from writeback.settings import Selector

pytestmark = pytest.mark.controlplane
APPS = "payments"  # a workload namespace somewhere else in the cluster


def apply_deploy(controlplane: Any, kustomize: Path, namespace: str, workdir: Path) -> str:
    """Render deploy/ into ``namespace`` (names suffixed: ClusterRoles are cluster-wide), apply it, return the user."""
    rendered = render(kustomize=kustomize, workdir=workdir, namespace=namespace, suffix=namespace)
    controlplane.kubectl("apply", "-f", "-", input=rendered)
    (sa,) = find(documents(rendered), "ServiceAccount")
    return f"system:serviceaccount:{namespace}:{sa['metadata']['name']}"


def allowed(
    api: Any, user: str, *, verb: str, resource: str, group: str = "", namespace: str = "", name: str = ""
) -> bool:
    namespace_of_user = user.split(":")[2]
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=user,
            groups=["system:serviceaccounts", f"system:serviceaccounts:{namespace_of_user}", "system:authenticated"],
            resource_attributes=client.V1ResourceAttributes(
                verb=verb, group=group, resource=resource, namespace=namespace, name=name
            ),
        )
    )
    status = client.AuthorizationV1Api(api).create_subject_access_review(body=review).status
    assert status is not None, "the API server answered the review without a status"
    return status.allowed


def test_service_account_is_allowed_exactly_what_it_needs(
    controlplane: Any, k8s: Any, kustomize_bin: Path, crds: list[str], namespace: str, tmp_path: Path
) -> None:
    user = apply_deploy(controlplane, kustomize_bin, namespace, tmp_path)
    ns = namespace
    must_allow = [
        dict(verb="list", group="apps", resource="deployments"),  # cluster-wide list/watch (informers)
        dict(verb="watch", group="apps", resource="deployments"),
        dict(verb="get", group="apps", resource="deployments", namespace=APPS, name="web"),
        dict(verb="patch", group="apps", resource="deployments", namespace=APPS, name="web"),  # SSA dry-run
        dict(verb="create", group="apps", resource="deployments", namespace=APPS),  # dry-run create of a twin
        dict(verb="create", resource="services", namespace=APPS),
        dict(verb="list", group="apps", resource="statefulsets"),
        dict(verb="patch", group="apps", resource="daemonsets", namespace=APPS),
        dict(verb="list", resource="configmaps"),
        dict(verb="patch", resource="configmaps", namespace=APPS, name="ca-bundle"),
        dict(verb="watch", resource="services"),
        dict(verb="list", group="autoscaling", resource="horizontalpodautoscalers"),
        dict(verb="list", group="batch", resource="cronjobs"),
        dict(verb="list", group="networking.k8s.io", resource="ingresses"),
        dict(verb="list", group="policy", resource="poddisruptionbudgets"),
        dict(verb="create", group="coordination.k8s.io", resource="leases", namespace=ns),
        dict(verb="update", group="coordination.k8s.io", resource="leases", namespace=ns, name="writeback-target-x"),
        dict(verb="list", group="coordination.k8s.io", resource="leases", namespace=ns),
        dict(verb="delete", group="coordination.k8s.io", resource="leases", namespace=ns, name="writeback-replica-y"),
        dict(verb="create", resource="configmaps", namespace=ns),
        dict(verb="update", resource="configmaps", namespace=ns, name="writeback-state"),
        dict(verb="get", resource="configmaps", namespace=ns, name="writeback-state"),
        dict(verb="create", resource="events", namespace=ns),
        dict(verb="create", group="events.k8s.io", resource="events", namespace=ns),
        dict(verb="list", group="argoproj.io", resource="applications"),
        dict(verb="patch", group="argoproj.io", resource="applications", namespace="argocd", name="payments"),
        dict(verb="watch", group="kustomize.toolkit.fluxcd.io", resource="kustomizations"),
        dict(verb="patch", group="kustomize.toolkit.fluxcd.io", resource="kustomizations", namespace="flux-system"),
        dict(verb="get", group="helm.toolkit.fluxcd.io", resource="helmreleases", namespace="flux-system"),
        dict(verb="list", group="source.toolkit.fluxcd.io", resource="gitrepositories"),
        # break-glass: the source revision, the ApplicationSet parent, the access review, who, and its Events
        dict(verb="get", group="source.toolkit.fluxcd.io", resource="gitrepositories", namespace="flux-system"),
        dict(verb="patch", group="argoproj.io", resource="applicationsets", namespace="argocd", name="teams"),
        dict(verb="create", group="authorization.k8s.io", resource="selfsubjectaccessreviews"),
        dict(verb="create", group="authentication.k8s.io", resource="selfsubjectreviews"),
        dict(verb="create", resource="events", namespace="argocd"),
        dict(verb="create", resource="events", namespace="flux-system"),
    ]
    must_deny = [
        dict(verb="get", resource="secrets", namespace=APPS, name="db"),
        dict(verb="list", resource="secrets"),
        dict(verb="watch", resource="secrets"),
        dict(verb="list", resource="secrets", namespace=ns),
        dict(verb="get", resource="secrets", namespace=ns, name="writeback-tokens"),
        dict(verb="delete", group="apps", resource="deployments", namespace=APPS, name="web"),
        dict(verb="update", group="apps", resource="deployments", namespace=APPS, name="web"),
        dict(verb="deletecollection", resource="configmaps", namespace=APPS),
        dict(verb="create", group="coordination.k8s.io", resource="leases", namespace="default"),
        dict(verb="get", group="coordination.k8s.io", resource="leases", namespace="kube-system", name="x"),
        dict(verb="update", group="coordination.k8s.io", resource="leases", namespace=APPS, name="writeback-target-x"),
        dict(verb="update", resource="configmaps", namespace=ns, name="someone-elses"),
        dict(verb="update", resource="events", namespace=APPS),  # Events: create only, wherever they go
        dict(verb="delete", resource="events", namespace="argocd"),
        dict(verb="list", resource="events", namespace="flux-system"),
        dict(verb="delete", group="argoproj.io", resource="applicationsets", namespace="argocd", name="teams"),
        dict(verb="delete", group="argoproj.io", resource="applications", namespace="argocd", name="payments"),
        dict(verb="create", group="argoproj.io", resource="applications", namespace="argocd"),
        dict(verb="update", group="helm.toolkit.fluxcd.io", resource="helmreleases", namespace="flux-system"),
        dict(verb="list", resource="pods"),
        dict(verb="create", resource="pods/exec", namespace=APPS),
        dict(verb="list", resource="nodes"),
        dict(verb="impersonate", resource="users"),
        dict(verb="bind", group="rbac.authorization.k8s.io", resource="clusterroles"),
        dict(verb="create", group="rbac.authorization.k8s.io", resource="rolebindings", namespace=ns),
    ]
    wait_until(  # the RBAC authorizer's cache catches up asynchronously
        "the applied ClusterRoleBinding taking effect",
        lambda: allowed(k8s, user, **must_allow[0]),
        timeout=30,
        step=0.2,
    )
    wrong = [("should be allowed", a) for a in must_allow if not allowed(k8s, user, **a)]
    wrong += [("should be denied", d) for d in must_deny if allowed(k8s, user, **d)]
    assert not wrong, "\n".join(f"{why}: {attrs}" for why, attrs in wrong)


def _as(controlplane: Any, user: str) -> Any:
    api = config.new_client_from_config(config_file=controlplane.kubeconfig)
    api.set_default_header("Impersonate-User", user)
    return api


def test_dry_run_through_the_cluster_adapter_works_as_the_service_account_and_changes_nothing(
    controlplane: Any, k8s: Any, kustomize_bin: Path, namespace: str, tmp_path: Path
) -> None:
    user = apply_deploy(controlplane, kustomize_bin, namespace, tmp_path / "a")
    apps = client.AppsV1Api(k8s)
    workload_ns = f"{namespace}-apps"
    client.CoreV1Api(k8s).create_namespace(body=client.V1Namespace(metadata=client.V1ObjectMeta(name=workload_ns)))
    try:
        web = deployment(
            "web", namespace=workload_ns, replicas=2, labelled=False, containers=[container("web", image="nginx:1.27")]
        )
        apps.create_namespaced_deployment(namespace=workload_ns, body=web)  # type: ignore[arg-type]  # a manifest dict
        before = apps.read_namespaced_deployment(name="web", namespace=workload_ns)
        cluster = KubeCluster(api_client=_as(controlplane, user))

        def listing() -> list[Any] | None:
            try:
                return cluster.list_objects(
                    selector=Selector(apiVersion="apps/v1", kind="Deployment", namespaces=(workload_ns,))
                )
            except ClusterError:
                return None  # the RBAC cache has not caught up yet

        wait_until("the RBAC cache allowing the list", lambda: listing() is not None, timeout=30, step=0.2)
        listed = listing()
        assert listed is not None
        assert [o.ref.name for o in listed] == ["web"]
        changed = json.loads(json.dumps(web))
        changed["spec"]["replicas"] = 5
        result = cluster.dry_run_apply(body=changed)
        assert result["spec"]["replicas"] == 5  # the server computed the write as the ServiceAccount ...
        after = apps.read_namespaced_deployment(name="web", namespace=workload_ns)
        assert after.metadata is not None and before.metadata is not None
        assert after.metadata.resource_version == before.metadata.resource_version  # ... and persisted nothing
        assert after.spec.replicas == 2
        twin = cluster.dry_run_create(body=twin_manifest(changed, listed[0].ref), twin_of=listed[0].ref)
        assert twin["metadata"]["name"].startswith("web-") and twin["spec"]["replicas"] == 5
        assert twin["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"  # defaulted
        names = [d.metadata.name for d in apps.list_namespaced_deployment(namespace=workload_ns).items if d.metadata]
        assert names == ["web"]  # the twin was never stored
        with pytest.raises(ClusterError, match=r"403|[Ff]orbidden"):
            cluster.get_object(ref=_secret_ref(workload_ns))
    finally:
        client.CoreV1Api(k8s).delete_namespace(name=workload_ns)


def _secret_ref(ns: str) -> Any:
    from writeback.kube.refs import ObjectRef

    return ObjectRef(api_version="v1", kind="Secret", namespace=ns, name="db")
