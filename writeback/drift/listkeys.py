"""Which lists are keyed, and by what: Kubernetes list-map keys and patch-merge keys. Pure.

Keys come first from the ``k:{...}`` entries of the live object's managedFields (the API
server's own schema), then from the static table below (the OpenAPI ``x-kubernetes-list-map-keys``
and ``x-kubernetes-patch-merge-key`` of the built-in types). Lists known by neither are atomic
and are compared by position.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from writeback.drift.ownership import generalize
from writeback.kube import pathtypes
from writeback.kube.pathtypes import Key, Segment, Select, scalar_text

__all__ = ["KEY_DEFAULTS", "KeyResolver", "item_selector", "resolver", "static_keys"]

KeyResolver = Callable[[Sequence[Segment]], "tuple[str, ...] | None"]

# A key field the API server defaults, so a Git item without it still matches the live item.
KEY_DEFAULTS = pathtypes.KEY_DEFAULTS

# By the list field's name; the tuple is sorted (FieldsV1 sorts key fields the same way).
_BY_NAME: Mapping[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "imagePullSecrets": ("name",),
    "hostAliases": ("ip",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
    "resourceClaims": ("name",),
    "readinessGates": ("conditionType",),
    "ownerReferences": ("uid",),
    "webhooks": ("name",),  # admission webhook configurations
    "conditions": ("type",),
    "schedulingGates": ("name",),
    "volumeClaimTemplates": (),  # atomic (by position)
}

# Lists named ``ports``: container ports, Service ports, and the rest atomic.
_PORTS_CONTAINER = ("containerPort", "protocol")
_PORTS_SERVICE = ("port", "protocol")
_CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})


def static_keys(*, kind: str, path: Sequence[Segment]) -> tuple[str, ...] | None:
    """The list-map keys of the list at ``path`` in an object of ``kind`` (None: atomic)."""
    if not path or not isinstance(path[-1], Key):
        return None
    name = path[-1].name
    if name == "ports":
        if len(path) >= 3 and isinstance(path[-2], Select | Key) and _container_parent(path):
            return _PORTS_CONTAINER
        if kind == "Service" and tuple(path) == (Key("spec"), Key("ports")):
            return _PORTS_SERVICE
        return None
    keys = _BY_NAME.get(name)
    return keys or None


def _container_parent(path: Sequence[Segment]) -> bool:
    # ...containers[name=x].ports: the list two segments up is a container list.
    parent = path[-3] if len(path) >= 3 else None
    return isinstance(parent, Key) and parent.name in _CONTAINER_LISTS


def resolver(*, kind: str, learned: Mapping[str, tuple[str, ...]]) -> KeyResolver:
    """A key lookup for one object: the managedFields' ``k:`` keys first, then the static table."""

    def keys_for(path: Sequence[Segment]) -> tuple[str, ...] | None:
        found = learned.get(generalize(path)) if learned else None
        return found if found else static_keys(kind=kind, path=path)

    return keys_for


def item_selector(item: Any, keys: Sequence[str]) -> Select | None:
    """The selector of a list item by its key fields, or None when a key is missing."""
    if not isinstance(item, Mapping):
        return None
    pairs: list[tuple[str, str]] = []
    for k in keys:
        if k in item and item[k] is not None:
            pairs.append((k, scalar_text(item[k])))
        elif k in KEY_DEFAULTS:
            pairs.append((k, KEY_DEFAULTS[k]))
        else:
            return None
    return Select(tuple(pairs))
