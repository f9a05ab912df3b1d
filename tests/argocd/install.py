"""What Argo CD needs in the cluster before it starts: its CRDs (copied by tests/argocd/build from the module's
manifests/crds/), and in its namespace the ConfigMap argocd-cm, the Secret argocd-secret and the AppProject
`default` (upstream's API server creates that project; the controller alone does not).

All applied server-side with the field manager `writeback-tests`, so a second start is a no-op."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.controlplane.cp import ControlPlane, KubectlError

FIELD_MANAGER = "writeback-tests"
PART_OF = {"app.kubernetes.io/part-of": "argocd"}  # the controller finds its settings by this label
CRD_NAMES = ("application-crd.yaml", "appproject-crd.yaml", "applicationset-crd.yaml")
REQUIRED_CRDS = CRD_NAMES[:2]  # the controller needs these two; ApplicationSet is installed when there


class ArgoCDError(RuntimeError):
    """Argo CD could not be built, set up, started or stopped; the message names the step."""


def crd_files(bin_dir: Path) -> list[Path]:
    """The CRDs of the module's manifests/crds/, copied by the build next to the bin dir."""
    crds = bin_dir.parent / "crds"
    return [crds / n for n in CRD_NAMES if (crds / n).is_file()]


def _apply(plane: ControlPlane, step: str, *args: str, manifest: str | None = None) -> list[str]:
    """kubectl apply --server-side; the names applied (`kind.group/name`)."""
    try:
        applied = plane.kubectl(
            "apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}", "-o", "name", *args,
            input=manifest,
        )  # fmt: skip
    except KubectlError as exc:
        raise ArgoCDError(f"{step}: {exc}") from exc
    return [line for line in applied.stdout.split() if line.strip()]


def crds(*, plane: ControlPlane, bin_dir: Path) -> list[str]:
    """Install Application, AppProject and ApplicationSet (v3.6.1's) and wait until Established; their names."""
    files = crd_files(bin_dir)
    if not set(REQUIRED_CRDS) <= {f.name for f in files}:
        raise ArgoCDError(f"install Argo CD CRDs: expected {CRD_NAMES} in {bin_dir.parent / 'crds'}, found {files}")
    # ApplicationSet's CRD is too big for client-side apply's annotation; server-side apply has no such limit
    names = [
        n.split("/", 1)[1] for n in _apply(plane, "install Argo CD CRDs", *(a for f in files for a in ("-f", str(f))))
    ]
    _wait_established(plane, names)
    return names


def _wait_established(plane: ControlPlane, names: list[str], *, timeout: float = 60) -> None:
    """Poll each CRD's Established condition (`kubectl wait` fails at once on a CRD whose status has no conditions
    yet: "status.conditions accessor error")."""
    from kubernetes import client

    api = client.ApiextensionsV1Api(plane.api_client)
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            status = api.read_custom_resource_definition(name).status
            conditions = (status.conditions if status is not None else None) or []
            if any(c.type == "Established" and c.status == "True" for c in conditions):
                break
            if time.monotonic() > deadline:
                raise ArgoCDError(f"install Argo CD CRDs: {name} not Established after {timeout:.0f}s: {conditions}")
            time.sleep(0.2)


def settings_objects(namespace: str) -> list[dict[str, Any]]:
    """The namespace, argocd-cm and argocd-secret as upstream's install manifests ship them (no data: defaults),
    and the AppProject `default` as upstream's API server creates it (any repo, any destination, any kind)."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "argocd-cm",
                "namespace": namespace,
                "labels": {"app.kubernetes.io/name": "argocd-cm", **PART_OF},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": "argocd-secret",
                "namespace": namespace,
                "labels": {"app.kubernetes.io/name": "argocd-secret", **PART_OF},
            },
        },
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AppProject",
            "metadata": {"name": "default", "namespace": namespace},
            "spec": {
                "sourceRepos": ["*"],
                "destinations": [{"server": "*", "namespace": "*"}],
                "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
            },
        },
    ]


def settings(*, plane: ControlPlane, namespace: str) -> list[str]:
    """Apply `settings_objects(namespace)` (the namespace first: one `kubectl apply` of a List does that)."""
    manifest = json.dumps({"apiVersion": "v1", "kind": "List", "items": settings_objects(namespace)})
    return _apply(plane, f"create argocd-cm, argocd-secret and AppProject default in {namespace}", "-f", "-",
                  manifest=manifest)  # fmt: skip
