"""The ``.Capabilities`` a controller renders a chart with: the Kubernetes version and the API versions the cluster
serves, as ``helm template``'s ``--kube-version`` and ``--api-versions``. Pure.

- **Argo CD** (the application controller hands the repo-server what its cluster cache read): the version is
  ``v`` + ``major.minor.patch`` of ``/version``'s ``gitVersion``, a vendor suffix dropped (gitops-engine
  ``GetServerVersion``); the API versions are every served ``group/version`` and ``group/version/Kind`` of the
  resources that can be listed and watched, all versions, not only the preferred ones (``GetAPIResources`` and
  ``argo.APIResourcesToStrings``). An Application's own ``helm.kubeVersion`` / ``helm.apiVersions`` win.
- **Flux** (helm-controller's Helm action configuration, ``getCapabilities``): the version is ``gitVersion`` as the
  server gives it; the API versions are every served ``group/version`` and ``group/version/Kind`` of every
  resource, subresources included (Helm's ``GetVersionSet``). ``helm template`` adds its built-in defaults to the
  API versions given (a real install does not): the one difference from helm-controller that remains.
- **Given** (``--kube-version``, ``--api-versions``, or the target's ``kube_version`` / ``api_versions``): used as
  given, each in place of the cluster's; offline (a dump has no discovery) they are all there is, else helm's
  defaults apply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from writeback.kube.discovery import Discovery

__all__ = ["Capabilities", "ClusterFacts", "for_argocd", "for_flux", "kube_version_of"]

_GENERIC = re.compile(r"^v?([0-9]+(?:\.[0-9]+)+)")  # k8s.io/apimachinery version.ParseGeneric's prefix


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """What ``helm template`` is told of the cluster (None / ``()``: helm's own defaults)."""

    kube_version: str | None = None
    api_versions: tuple[str, ...] = ()

    def given(self, *, kube_version: str | None, api_versions: tuple[str, ...]) -> Capabilities:
        """These, with what the user gave in place of each part given."""
        return Capabilities(kube_version=kube_version or self.kube_version, api_versions=api_versions or
                            self.api_versions)  # fmt: skip


def kube_version_of(git_version: str) -> str:
    """Argo CD's version of the cluster: ``v1.30.4+k3s1`` -> ``v1.30.4``; ``v1.31.2-gke.100`` -> ``v1.31.2``."""
    found = _GENERIC.match(git_version.strip())
    return f"v{found.group(1)}" if found else git_version


def for_argocd(discovery: Discovery | None) -> Capabilities:
    if discovery is None:
        return Capabilities()
    found: set[str] = set()
    for r in discovery.resources:
        if {"list", "watch"} <= r.verbs:
            found |= {r.group_version, f"{r.group_version}/{r.kind}"}
    return Capabilities(kube_version=kube_version_of(discovery.git_version), api_versions=tuple(sorted(found)))


def for_flux(discovery: Discovery | None) -> Capabilities:
    if discovery is None:
        return Capabilities()
    found = set(discovery.group_versions) | {f"{r.group_version}/{r.kind}" for r in discovery.resources}
    return Capabilities(kube_version=discovery.git_version, api_versions=tuple(sorted(found)))


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterFacts:
    """What is known of the cluster a release renders for: its discovery (cluster mode; None offline) and what the
    user gave (``--kube-version``, ``--api-versions``), which wins part by part."""

    discovery: Discovery | None = None
    kube_version: str | None = None
    api_versions: tuple[str, ...] = ()

    def argocd(self) -> Capabilities:
        return for_argocd(self.discovery).given(kube_version=self.kube_version, api_versions=self.api_versions)

    def flux(self) -> Capabilities:
        return for_flux(self.discovery).given(kube_version=self.kube_version, api_versions=self.api_versions)
