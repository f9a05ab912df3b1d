"""What an API server says of itself: its version (``/version``) and every group/version and resource it serves
(discovery). Data only: ``writeback.adapters.kube.discovery`` reads it; the Helm source turns it into the
``.Capabilities`` a controller renders with (``writeback.sources.helm.capabilities``). Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Discovery", "DiscoveryReader", "ServedResource"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServedResource:
    """One resource of a served group/version, as discovery lists it: ``deployments`` (kind ``Deployment``) of
    ``apps/v1``, or a subresource (``deployments/scale``, kind ``Scale``)."""

    group_version: str  # "v1" for the core group, else "group/version"
    name: str  # the plural, "deployments"; "deployments/scale" for a subresource
    kind: str
    verbs: frozenset[str] = frozenset()

    @property
    def subresource(self) -> bool:
        return "/" in self.name


@dataclass(frozen=True, slots=True, kw_only=True)
class Discovery:
    """The server's ``/version`` ``gitVersion`` (``v1.31.2``, ``v1.30.4+k3s1``) and what it serves: every
    group/version, each group's preferred one first (``group_versions``), and their resources (``resources``)."""

    git_version: str
    group_versions: tuple[str, ...] = ()
    preferred: tuple[str, ...] = ()  # the server-preferred group/version of each group
    resources: tuple[ServedResource, ...] = ()


# How a source asks for the cluster's discovery: read at most once per cycle (the adapter's memo); None offline.
DiscoveryReader = Callable[[], Discovery]
