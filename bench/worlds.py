"""The scale benchmarks' worlds behind one interface, chosen by name (``--world-kind``).

- ``basic`` (``scale_cluster.py``): per app a Deployment, its ConfigMap and its headless Service in one file,
  all applied as ``argocd-controller``;
- ``appliers`` (``scale_appliers.py``): per app a ServiceAccount, Deployment, headless Service, ConfigMap, Role
  and RoleBinding in three files, namespaces alternating between ``argocd-controller`` and
  ``kustomize-controller`` applies with each controller's tracking metadata.

Both: 10 namespaces, 1% of the objects changed by a person with kubectl (to write back), 5% of the objects'
worth of Deployments scaled through the scale subresource (to ignore).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import scale_appliers
import scale_cluster

WORLD_KINDS = ("basic", "appliers")


class BenchWorld(Protocol):
    @property
    def objects(self) -> int: ...

    @property
    def namespaces(self) -> tuple[str, ...]: ...

    @property
    def resources(self) -> tuple[str, ...]:
        """What writeback lists, kind by kind: GROUP/VERSION/PLURAL (v1/PLURAL for the core group)."""
        ...

    @property
    def changed(self) -> tuple[tuple[str, object], ...]: ...

    @property
    def scaled(self) -> tuple[object, ...]: ...

    def expected_decisions(self) -> frozenset[tuple[str, str, str, str]]:
        """(kind, namespace, name, decision) of every object a person changed: `diff`'s drifts that are not
        ignored, no more (``writeback``; ``flag`` for RBAC rules and subjects, which need a security review)."""
        ...

    def expected_edited_files(self) -> frozenset[str]:
        """The repo files `plan` must edit."""
        ...

    def write_repo(self, repo: Path) -> None: ...

    def load(self, *, kubeconfig: str, kubectl: Path, workdir: Path) -> None: ...


@dataclass(frozen=True, slots=True)
class BasicWorld:
    """``scale_cluster.World`` behind the interface."""

    world: scale_cluster.World

    @property
    def objects(self) -> int:
        return self.world.objects

    @property
    def namespaces(self) -> tuple[str, ...]:
        return self.world.namespaces

    @property
    def resources(self) -> tuple[str, ...]:
        return tuple(f"{api_version}/{plural}" for api_version, _, plural in scale_cluster.KINDS)

    @property
    def changed(self) -> tuple[tuple[str, object], ...]:
        return self.world.changed

    @property
    def scaled(self) -> tuple[object, ...]:
        return self.world.scaled

    def expected_decisions(self) -> frozenset[tuple[str, str, str, str]]:
        suffix = {"Deployment": "", "ConfigMap": "-config", "Service": ""}
        return frozenset((k, a.namespace, a.name + suffix[k], "writeback") for k, a in self.world.changed)

    def expected_edited_files(self) -> frozenset[str]:
        return frozenset(a.file for _, a in self.world.changed)

    def write_repo(self, repo: Path) -> None:
        scale_cluster.write_repo(self.world, repo)

    def load(self, *, kubeconfig: str, kubectl: Path, workdir: Path) -> None:
        scale_cluster.load_cluster(self.world, kubeconfig=kubeconfig, kubectl=kubectl, workdir=workdir)


def make_world(kind: str, objects: int, *, namespace_prefix: str) -> BenchWorld:
    if kind == "basic":
        return BasicWorld(scale_cluster.plan_world(objects, namespace_prefix=namespace_prefix))
    if kind == "appliers":
        return scale_appliers.plan_world(objects, namespace_prefix=namespace_prefix)
    raise ValueError(f"unknown world kind {kind!r}: one of {', '.join(WORLD_KINDS)}")
