"""Well-known names on Kubernetes objects that more than one module reads or writes: annotations, labels and the
field managers writeback itself writes with. Pure.

A GitOps controller's own names (tracking labels, field managers) are in its ``gitops/`` module; webhook injectors'
and CA injectors' in the evidence and ignore rules that recognise them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from writeback.kube.pathtypes import FieldPath, Key

__all__ = [
    "BREAK_GLASS_ANNOTATION",
    "BREAK_GLASS_EVENT_COMPONENT",
    "BREAK_GLASS_MANAGER",
    "DRY_RUN_MANAGER",
    "LAST_APPLIED",
    "LAST_APPLIED_PATH",
    "LEASE_ROLE_LABEL",
    "LEASE_TARGET_ANNOTATION",
    "MANAGED_BY",
    "WRITEBACK",
    "last_applied",
]

# ---------------------------------------------------------------- kubectl

# What a client-side ``kubectl apply`` wrote, as JSON: the configuration it applied last.
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
LAST_APPLIED_PATH: Final[FieldPath] = (Key("metadata"), Key("annotations"), Key(LAST_APPLIED))


def last_applied(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The configuration in ``body``'s last-applied annotation (a fresh copy), or None when it has none that reads
    as a JSON object."""
    meta = body.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, Mapping) else None
    if not isinstance(text, str):
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


# ---------------------------------------------------------------- writeback's own objects and writes

MANAGED_BY: Final = "app.kubernetes.io/managed-by"  # the label ...
WRITEBACK: Final = "writeback"  # ... and its value on the objects writeback creates (Leases, its state ConfigMap)
LEASE_ROLE_LABEL: Final = "writeback.dev/lease-role"  # "replica" or "target"
LEASE_TARGET_ANNOTATION: Final = "writeback.dev/target"  # the target a target Lease is for

BREAK_GLASS_ANNOTATION: Final = "writeback.io/break-glass"  # the break-glass record on a controller object
BREAK_GLASS_EVENT_COMPONENT: Final = "writeback-break-glass"  # the source component of its Events

# Field managers of writeback's writes: a server-side dry-run of a Git manifest (a GitOps manager: what it owns is
# Git's), and break-glass's patch of a controller object's auto-sync.
DRY_RUN_MANAGER: Final = "writeback-dryrun"
BREAK_GLASS_MANAGER: Final = "writeback-break-glass"
