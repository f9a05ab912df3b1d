"""What break-glass leaves on the cluster, as the tests read it: the record annotation on the controller object and
the ``BreakGlass*`` Events. Used by tests/breakglass, tests/service and tests/e2e."""

from __future__ import annotations

import json
from typing import Any

from writeback.kube.wellknown import BREAK_GLASS_ANNOTATION as ANNOTATION


def record(body: dict[str, Any]) -> dict[str, Any] | None:
    """The break-glass record on ``body`` (a controller object), or None when there is none."""
    text = (body["metadata"].get("annotations") or {}).get(ANNOTATION)
    return None if text is None else dict(json.loads(text))


def events(controlplane: Any, namespace: str, name: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the break-glass Events on the object ``name``, oldest first."""
    out = controlplane.kubectl("get", "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}",
                               "-o", "json").stdout  # fmt: skip
    items = [e for e in json.loads(out)["items"] if e["reason"].startswith("BreakGlass")]
    items.sort(key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["creationTimestamp"],
                              int(e["metadata"]["resourceVersion"])))  # fmt: skip
    return [(e["type"], e["reason"], e["message"]) for e in items]
