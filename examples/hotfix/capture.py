#!/usr/bin/env python3
"""Regenerate live.yaml: the 3 AM hotfix scenario, captured from the real test control plane.

    python3 examples/hotfix/capture.py            # writes examples/hotfix/live.yaml

What it does, against a real etcd + kube-apiserver (tests/controlplane, built from the Go module proxy):
1. applies gitops/ server-side as Argo CD would (field manager `argocd-controller`) into a namespace where the
   test's Istio-like mutating webhook injects a sidecar, an init container and an annotation;
2. the HPA scales the Deployment to 45 through the scale subresource (field manager `kube-controller-manager`);
3. the on-call engineer, with real kubectl: appends the new CA to the ConfigMap's bundle with `kubectl edit`, and
   adds an emergency env var with `kubectl set env`;
4. dumps the objects with `kubectl get -o yaml --show-managed-fields`.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # `tests.controlplane`

from tests.controlplane import cp, webhook  # noqa: E402

NAMESPACE = "shop"
EDITOR = """#!/usr/bin/env python3
import sys
path = sys.argv[1]
text = open(path).read()
new = open({ca!r}).read()
old_end = "-----END CERTIFICATE-----\\n"
idx = text.index(old_end) + len(old_end)
indent = "    "
text = text[:idx] + "".join(indent + line + "\\n" for line in new.splitlines()) + text[idx:]
open(path, "w").write(text)
"""


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=HERE / "live.yaml", help="where to write the dump")
    out = parser.parse_args(argv).output.resolve()
    with tempfile.TemporaryDirectory(prefix="writeback-capture-") as tmp:
        plane = cp.start(workdir=Path(tmp) / "cp")  # a control plane of its own: the namespace is fixed
        hook = webhook.serve()
        try:
            plane.kubectl("apply", "-f", "-", input=json.dumps(hook.configuration()))
            plane.kubectl("create", "namespace", NAMESPACE)
            plane.kubectl("label", "namespace", NAMESPACE, f"{hook.label}={hook.label_value}")
            plane.kubectl(
                "apply",
                "--server-side",
                "--field-manager=argocd-controller",
                "-f",
                str(HERE / "gitops" / "apps" / "checkout"),
            )
            scale = json.dumps({"spec": {"replicas": 45}})
            plane.kubectl(
                "patch",
                "deployment/checkout",
                "-n",
                NAMESPACE,
                "--subresource=scale",
                "--type=merge",
                "-p",
                scale,
                "--field-manager=kube-controller-manager",
            )
            editor = Path(tmp) / "editor.py"
            editor.write_text(EDITOR.format(ca=str(HERE / "hotfix-ca.pem")))
            editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
            env = dict(os.environ, KUBE_EDITOR=shlex.quote(str(editor)))
            plane.kubectl("edit", "configmap/checkout-ca", "-n", NAMESPACE, env=env)
            plane.kubectl("set", "env", "deployment/checkout", "-n", NAMESPACE, "-c", "app", "PAYMENT_TIMEOUT_MS=5000")
            dump = plane.kubectl(
                "get",
                "deployment,configmap,service,horizontalpodautoscaler",
                "-n",
                NAMESPACE,
                "-l",
                "",
                "--field-selector",
                "metadata.name!=kube-root-ca.crt",
                "-o",
                "yaml",
                "--show-managed-fields",
            ).stdout
        finally:
            hook.stop()
            plane.stop()
    header = (
        "# Captured by examples/hotfix/capture.py from a real kube-apiserver v1.36.3:\n"
        "# kubectl get deployment,configmap,service,horizontalpodautoscaler -n shop -o yaml --show-managed-fields\n"
    )
    out.write_text(header + dump)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
