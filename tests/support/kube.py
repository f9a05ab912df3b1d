"""Objects on the real kube-apiserver, written and read with the real kubectl as a person or a controller would."""

from __future__ import annotations

import json
from typing import Any


def apply(controlplane: Any, doc: dict[str, Any], *, manager: str = "platform-team") -> None:
    """Server-side apply of ``doc`` as field manager ``manager`` (by default the platform team, no controller)."""
    controlplane.kubectl("apply", "--server-side", f"--field-manager={manager}", "-f", "-", input=json.dumps(doc))


def get(controlplane: Any, resource: str, namespace: str, name: str) -> dict[str, Any]:
    """The object as stored, managedFields included (``resource`` as kubectl takes it: ``deployment``,
    ``applications.argoproj.io``, ...)."""
    out = controlplane.kubectl("get", resource, "-n", namespace, name, "-o", "json", "--show-managed-fields").stdout
    doc: dict[str, Any] = json.loads(out)
    return doc
