"""Helm releases on the real control plane, installed as their controller installs them.

The chart is rendered by the real ``helm template`` with the flags the controller passes (not by writeback), then
applied with the controller's field manager: Argo CD's ``argocd-controller`` (server-side apply), or Flux's
``helm-controller`` (Helm's install creates the objects, labelled and annotated as helm-controller and Helm's
install label them). A person's change then comes from the real kubectl.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.gitrepos import commit, init_repo
from tests.support.testdata import CHARTS
from writeback.yaml.reading import load_all

PODINFO = "charts/podinfo"
CONTAINER = "spec.template.spec.containers[name=podinfo]"


def new_repo(
    root: Path, files: Mapping[str, str], *, charts: Sequence[tuple[str, str]] = (("podinfo", PODINFO),)
) -> str:
    """A real git repository with ``charts`` (name in tests/data/charts, path) and ``files``; the commit."""
    root.mkdir(parents=True, exist_ok=True)
    init_repo(root)
    for name, path in charts:
        shutil.copytree(CHARTS / name, root / path)
    return commit(root, "the platform's Helm releases", files=dict(files))


def helm_template(
    helm: Path,
    chart: Path,
    *,
    release: str,
    namespace: str,
    values: Sequence[Path] = (),
    sets: Sequence[str] = (),
    extra: Sequence[str] = (),
) -> str:
    """The real ``helm template`` with an empty home (no repositories, no kubeconfig)."""
    with tempfile.TemporaryDirectory(prefix="helm-home-") as home:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": home,
            "HELM_CACHE_HOME": f"{home}/c",
            "HELM_CONFIG_HOME": f"{home}/f",
            "HELM_DATA_HOME": f"{home}/d",
            "KUBECONFIG": f"{home}/none",
        }
        args = [str(helm), "template", str(chart), "--name-template", release, "--namespace", namespace, *extra]
        args += [a for v in values for a in ("--values", str(v))]
        args += [a for s in sets for a in ("--set", s)]
        done = subprocess.run(args, capture_output=True, text=True, env=env, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def apply_as_argocd(controlplane: Any, manifests: str, *, namespace: str) -> None:
    """Argo CD's sync: a server-side apply as ``argocd-controller``."""
    controlplane.kubectl(
        "apply", "--server-side", "--field-manager=argocd-controller", "-n", namespace, "-f", "-", input=manifests
    )


def install_as_helm_controller(
    controlplane: Any, manifests: str, *, namespace: str, helmrelease: str, release: str
) -> None:
    """Flux's helm-controller: Helm's install creates every object as ``helm-controller``, with the labels
    helm-controller adds (``helm.toolkit.fluxcd.io/name``, ``/namespace``) and what Helm's install adds
    (``app.kubernetes.io/managed-by: Helm``, ``meta.helm.sh/release-name``, ``-namespace``)."""
    docs = []
    for doc in load_all(manifests, source="helm template"):
        if not isinstance(doc, dict):
            continue
        meta = doc.setdefault("metadata", {})
        meta.setdefault("labels", {}).update(
            {
                "helm.toolkit.fluxcd.io/name": helmrelease,
                "helm.toolkit.fluxcd.io/namespace": namespace,
                "app.kubernetes.io/managed-by": "Helm",
            }
        )
        meta.setdefault("annotations", {}).update(
            {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": namespace}
        )
        docs.append(doc)
    text = "\n".join(json.dumps(d) for d in docs)
    controlplane.kubectl("create", "--field-manager=helm-controller", "-n", namespace, "-f", "-", input=text)


def argocd_application(
    name: str,
    *,
    namespace: str,
    path: str = PODINFO,
    value_files: Sequence[str] = (),
    values_object: Mapping[str, Any] | None = None,
    revision: str | None = None,
) -> dict[str, Any]:
    """An Argo CD Application with a Helm source (its status: synced at ``revision``)."""
    helm: dict[str, Any] = {}
    if value_files:
        helm["valueFiles"] = list(value_files)
    if values_object is not None:
        helm["valuesObject"] = dict(values_object)
    source: dict[str, Any] = {"repoURL": "https://git.example/platform.git", "path": path, "targetRevision": "main"}
    if helm:
        source["helm"] = helm
    app: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "project": "default",
            "source": source,
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
        },
    }
    if revision:
        app["status"] = {"sync": {"status": "Synced", "revision": revision}}
    return app


def apply_object(controlplane: Any, body: Mapping[str, Any], *, manager: str = "writeback-tests") -> None:
    controlplane.kubectl("apply", "--server-side", f"--field-manager={manager}", "-f", "-", input=json.dumps(body))
