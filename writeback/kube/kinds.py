"""What writeback knows offline about Kubernetes kinds: generated from the real API server. Pure.

``writeback/data/defaults-v<minor>.json`` is written by ``tests/controlplane/generate-defaults`` (see
docs/drift.md) and read once, on first use, as package data. It holds the scope of every built-in kind (from
discovery) and the fields the API server fills in (``writeback.drift.evidence.defaults`` indexes those).

Custom resources: a CRD's ``spec.scope`` gives the scope of its kind (``crd_scopes``), from the repo or a dump.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from typing import Any

from writeback.kube.refs import group_of

__all__ = [
    "DATA_FILE",
    "KUBERNETES_MINOR",
    "NamespacedFn",
    "builtin_namespaced",
    "crd_scopes",
    "data",
    "dump_scopes",
    "group_of",
    "with_crds",
]

DATA_FILE = "defaults-v{minor}.json"
KUBERNETES_MINOR = "1.36"  # the version the committed data was generated from

# apiVersion, kind -> namespaced? (None: unknown, treated as namespaced)
NamespacedFn = Callable[[str, str], bool | None]


@functools.cache
def data() -> Mapping[str, Any]:
    """The generated data (parsed once)."""
    text = resources.files("writeback").joinpath("data", DATA_FILE.format(minor=KUBERNETES_MINOR)).read_text("utf-8")
    parsed: Mapping[str, Any] = json.loads(text)
    return parsed


@functools.cache
def _scopes() -> Mapping[tuple[str, str], bool]:
    return {(group, kind): bool(ns) for group, kinds in data()["scopes"].items() for kind, ns in kinds.items()}


def builtin_namespaced(api_version: str, kind: str) -> bool | None:
    """True or False for a built-in kind (by group and kind, any version), None for any other."""
    return _scopes().get((group_of(api_version), kind))


def crd_scopes(bodies: Iterable[Any]) -> dict[tuple[str, str], bool]:
    """(group, kind) -> namespaced, from the CustomResourceDefinitions among ``bodies`` (others are skipped)."""
    out: dict[tuple[str, str], bool] = {}
    for body in bodies:
        if not isinstance(body, Mapping) or body.get("kind") != "CustomResourceDefinition":
            continue
        if group_of(str(body.get("apiVersion", ""))) != "apiextensions.k8s.io":
            continue
        spec = body.get("spec")
        names = spec.get("names") if isinstance(spec, Mapping) else None
        if not isinstance(names, Mapping) or not isinstance(spec, Mapping):
            continue
        group, kind, scope = spec.get("group"), names.get("kind"), spec.get("scope")
        if isinstance(group, str) and isinstance(kind, str) and scope in ("Namespaced", "Cluster"):
            out[(group, kind)] = scope == "Namespaced"
    return out


def with_crds(namespaced: NamespacedFn, crds: Mapping[tuple[str, str], bool]) -> NamespacedFn:
    """``namespaced``, where it does not know a kind that one of ``crds`` defines, answered by that CRD."""
    if not crds:
        return namespaced

    def ask(api_version: str, kind: str) -> bool | None:
        known = namespaced(api_version, kind)
        return known if known is not None else crds.get((group_of(api_version), kind))

    return ask


def dump_scopes(objects: Iterable[tuple[str, str, str | None]]) -> dict[tuple[str, str], bool]:
    """(group, kind) -> namespaced, as objects dumped from an API server show it: ``kubectl get -o yaml`` prints the
    namespace of every namespaced object, so a kind whose dumped objects carry none is cluster-scoped, and one whose
    objects all carry one is namespaced. ``objects`` are (apiVersion, kind, namespace); mixed kinds are left out."""
    seen: dict[tuple[str, str], set[bool]] = {}
    for api_version, kind, namespace in objects:
        seen.setdefault((group_of(api_version), kind), set()).add(bool(namespace))
    return {key: flags.pop() for key, flags in seen.items() if len(flags) == 1}
