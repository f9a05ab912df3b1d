"""Shared fixtures: a real Kubernetes control plane (etcd + kube-apiserver), namespaces, CRDs, a sidecar-injecting
webhook, and git remotes. See docs/controlplane.md."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import cp, webhook
from tests.fakes import forge_server
from tests.support.buildscripts import needed, terminal_progress
from tests.support.gitrepos import GitRemote
from tests.support.polling import wait_until
from tests.support.testdata import CRDS

pytest_plugins = (
    "tests.flux.fixtures",  # the real Flux controllers: `flux`, `flux_sync` (docs/flux-tests.md)
    "tests.helm.fixtures",  # the real helm CLI: `helm_bin` (docs/helm-tests.md)
)

SHARED_CRDS = CRDS
_NEEDS_BINARIES = {"controlplane", "k8s", "namespace", "crds", "sidecar_webhook", "kustomize_bin"}
_BUILT: dict[str, Any] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that needs Go-built test infrastructure (the control plane, kubectl, kustomize, promtool) is a
    ``controlplane`` test, marked so or not: ``-m "not controlplane"`` runs without Go."""
    for item in items:
        needs = _NEEDS_BINARIES & set(getattr(item, "fixturenames", ())) or item.get_closest_marker("promtool")
        if needs and item.get_closest_marker("controlplane") is None:
            item.add_marker(pytest.mark.controlplane)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the binaries before the first test when any selected test needs them: a cold build takes minutes
    and must not count against one test's timeout. Progress goes to the terminal."""
    if not needed(session, _NEEDS_BINARIES):
        return
    with terminal_progress(session) as progress:
        try:
            _BUILT["bin_dir"] = cp.build_binaries(progress=progress)
        except cp.ControlPlaneError as exc:
            _BUILT["error"] = exc
            progress(f"controlplane: {exc}")


def _bin_dir() -> Path:
    """The built bin dir (built before the tests, or now when the hook did not run)."""
    if "error" in _BUILT:
        pytest.fail(str(_BUILT["error"]), pytrace=False)
    if "bin_dir" not in _BUILT:
        try:
            _BUILT["bin_dir"] = cp.build_binaries()
        except cp.ControlPlaneError as exc:
            _BUILT["error"] = exc
            pytest.fail(str(exc), pytrace=False)
    return Path(_BUILT["bin_dir"])


@pytest.fixture(autouse=True)
def _fake_forges_checked() -> Iterator[None]:
    """Every fake forge a test started is stopped after it, and fails it on any request or answer that breaks the
    official API description (``FakeForge.stop`` raises): the check is never opt-in."""
    yield
    left = sorted(forge_server.RUNNING, key=id)
    problems = []
    for fake in left:
        try:
            fake.stop()
        except forge_server.ForgeViolations as e:
            problems.append(str(e))
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def controlplane() -> Iterator[cp.ControlPlane]:
    """ONE real etcd + kube-apiserver for the whole session (built on first use; fails, never skips)."""
    bin_dir = _bin_dir()
    try:
        plane = cp.start(bin_dir=bin_dir)
    except cp.ControlPlaneError as exc:
        pytest.fail(f"the test control plane could not start: {exc}", pytrace=False)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def k8s(controlplane: cp.ControlPlane) -> Any:
    """kubernetes.client.ApiClient of the session control plane."""
    return controlplane.api_client


@pytest.fixture(scope="session")
def kustomize_bin() -> Path:
    """The real kustomize binary (builds the control-plane binaries if needed)."""
    return _bin_dir() / "kustomize"


@pytest.fixture
def namespace(k8s: Any) -> Iterator[str]:
    """A fresh namespace per test; deletion is requested afterwards (it stays Terminating: no controllers)."""
    from kubernetes import client

    core = client.CoreV1Api(k8s)
    name = f"wb-{uuid.uuid4().hex[:10]}"
    core.create_namespace(body=client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        yield name
    finally:
        try:
            core.delete_namespace(name=name, propagation_policy="Background")
        except client.ApiException as exc:
            if exc.status != 404:
                raise


@pytest.fixture(scope="session")
def crds(controlplane: cp.ControlPlane) -> list[str]:
    """Installs tests/data/crds (Argo CD, Flux, KEDA) and waits until Established; returns the CRD names."""
    files = sorted(SHARED_CRDS.glob("*.yaml"))
    if not files:
        pytest.fail(f"no CRD manifests in {SHARED_CRDS} (see tests/data/refresh)", pytrace=False)
    args = [a for f in files for a in ("-f", str(f))]
    applied = controlplane.kubectl("apply", "--server-side", "--field-manager=writeback-tests", "-o", "name", *args)
    names = [line.split("/", 1)[1] for line in applied.stdout.split() if line.strip()]
    controlplane.kubectl("wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{n}" for n in names))
    return names


@dataclass(kw_only=True)
class SidecarInjector:
    """The running webhook: `enable(namespace)` labels a namespace for injection; `requests` are the reviews seen."""

    server: webhook.SidecarWebhook
    api_client: Any
    label: str = webhook.INJECT_LABEL
    container: str = "istio-proxy"
    init_container: str = "istio-init"
    annotation: str = webhook.STATUS_ANNOTATION

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests

    def enable(self, namespace: str) -> None:
        from kubernetes import client

        body = {"metadata": {"labels": {self.label: "enabled"}}}
        client.CoreV1Api(self.api_client).patch_namespace(name=namespace, body=body)


@pytest.fixture(scope="session")
def sidecar_webhook(controlplane: cp.ControlPlane, k8s: Any) -> Iterator[SidecarInjector]:
    """An Istio-like sidecar injector served by this process over HTTPS, for namespaces labelled
    writeback-test/inject=enabled (use `sidecar_webhook.enable(ns)`). Returns once injection works."""
    from kubernetes import client

    server = webhook.serve()
    admission = client.AdmissionregistrationV1Api(k8s)
    core = client.CoreV1Api(k8s)
    admission.create_mutating_webhook_configuration(body=server.configuration())  # type: ignore[arg-type]  # a manifest dict: the client sends it as is
    injector = SidecarInjector(server=server, api_client=k8s)
    probe = f"wb-webhook-probe-{uuid.uuid4().hex[:6]}"
    core.create_namespace(body=client.V1Namespace(metadata=client.V1ObjectMeta(name=probe)))
    injector.enable(probe)
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name="probe"),
                       spec=client.V1PodSpec(containers=[client.V1Container(name="app", image="busybox")]))  # fmt: skip

    def injected() -> bool:
        spec = core.create_namespaced_pod(namespace=probe, body=pod, dry_run="All").spec
        return spec is not None and any(c.name == "istio-proxy" for c in spec.containers)

    wait_until(  # the apiserver picks the configuration up asynchronously
        "the apiserver calling the sidecar webhook",
        injected,
        timeout=60,
        step=0.2,
    )
    core.delete_namespace(name=probe)
    try:
        yield injector
    finally:
        try:
            admission.delete_mutating_webhook_configuration(name=server.name)
        finally:
            server.stop()


@pytest.fixture
def git_remote(tmp_path: Path) -> GitRemote:
    """A bare repo + working clone (real git CLI), user configured, initial branch main."""
    return GitRemote.create(bare=tmp_path / "remote.git", work=tmp_path / "work")
