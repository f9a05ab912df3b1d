#!/usr/bin/env python3
"""Regenerate live.yaml: the Helm example's live side, captured from the real test control plane.

    python3 examples/helm/capture.py            # writes examples/helm/live.yaml

What it does, against a real etcd + kube-apiserver (tests/controlplane, built from the Go module proxy), with the
real helm CLI (tests/helm/build, built from the Go module proxy):
1. renders gitops/charts/web with gitops/envs/prod/values.yaml as Argo CD's repo-server does (`helm template
   --name-template web --namespace shop --include-crds -f ...`) and applies it server-side as Argo CD would (field
   manager `argocd-controller`) into the namespace shop; creates the Application argocd/web (gitops/apps/web.yaml);
2. the on-call engineer, with real kubectl: `kubectl set image` (6.15.0), `kubectl scale` (5), `kubectl set env`
   (LOG_LEVEL=debug), and a patch of the chart's hard-coded terminationGracePeriodSeconds (60);
3. dumps the objects with `kubectl get -o yaml --show-managed-fields`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # `tests.controlplane`, `tests.helm`

from tests.controlplane import cp  # noqa: E402
from tests.helm.binary import build_helm  # noqa: E402
from tests.support.testdata import CRDS  # noqa: E402

NAMESPACE = "shop"
CHART = HERE / "gitops" / "charts" / "web"
VALUES = HERE / "gitops" / "envs" / "prod" / "values.yaml"


def render(helm: Path, home: Path) -> str:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "HELM_CACHE_HOME": str(home / "c"),
        "HELM_CONFIG_HOME": str(home / "f"),
        "HELM_DATA_HOME": str(home / "d"),
        "KUBECONFIG": str(home / "no"),
    }
    args = [
        str(helm),
        "template",
        str(CHART),
        "--name-template",
        "web",
        "--namespace",
        NAMESPACE,
        "--include-crds",
        "--values",
        str(VALUES),
    ]
    return subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=HERE / "live.yaml", help="where to write the dump")
    out = parser.parse_args(argv).output.resolve()
    helm = Path(build_helm())
    with tempfile.TemporaryDirectory(prefix="writeback-capture-") as tmp:
        plane = cp.start(workdir=Path(tmp) / "cp")  # a control plane of its own: the namespaces are fixed
        try:
            k = plane.kubectl
            k("apply", "--server-side", "-f", str(CRDS / "argocd-application.yaml"))
            for _ in range(120):  # until the CRD has conditions to wait on
                if (
                    k(
                        "wait",
                        "--for=condition=Established",
                        "--timeout=60s",
                        "crd/applications.argoproj.io",
                        check=False,
                    ).returncode
                    == 0
                ):
                    break
                time.sleep(0.5)
            k("create", "namespace", "argocd")
            k("create", "namespace", NAMESPACE)
            manifests = render(helm, Path(tmp) / "helm-home")
            k(
                "apply",
                "--server-side",
                "--field-manager=argocd-controller",
                "-n",
                NAMESPACE,
                "-f",
                "-",
                input=manifests,
            )
            k("apply", "--server-side", "--field-manager=argocd-controller", "-f", str(HERE / "gitops/apps/web.yaml"))
            k("set", "image", "deployment/web", "-n", NAMESPACE, "web=ghcr.io/stefanprodan/podinfo:6.15.0")
            k("scale", "deployment/web", "-n", NAMESPACE, "--replicas=5")
            k("set", "env", "deployment/web", "-n", NAMESPACE, "LOG_LEVEL=debug")
            grace = json.dumps({"spec": {"template": {"spec": {"terminationGracePeriodSeconds": 60}}}})
            k("patch", "deployment/web", "-n", NAMESPACE, "-p", grace)
            objects = k("get", "deployment,service", "-n", NAMESPACE, "-o", "json", "--show-managed-fields").stdout
            app = k("get", "application", "web", "-n", "argocd", "-o", "json", "--show-managed-fields").stdout
        finally:
            plane.stop()
    items = [*json.loads(objects)["items"], json.loads(app)]
    dump = json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2)
    header = (
        "# Captured by examples/helm/capture.py from a real kube-apiserver (tests/controlplane) and the real helm:\n"
        "# kubectl get deployment,service -n shop, and application argocd/web, -o json --show-managed-fields\n"
    )
    out.write_text(header + dump + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
