"""Which GitOps controller objects render a Helm chart: the Helm source kind claims a target that follows one. Pure,
and light: the source registry asks it before anything of the Helm engine is imported."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from writeback.gitops import argocd, flux
from writeback.gitops.base import GitOpsController
from writeback.sources.helm.argocd import is_helm_source

__all__ = ["claims"]


def claims(controller: GitOpsController, body: Mapping[str, Any], exists: Callable[[str], bool]) -> bool:
    """Whether the object renders a Helm chart: any HelmRelease; an Application with a Helm source."""
    if controller is flux.HELM_RELEASE:
        return True
    if controller is not argocd.APPLICATION:
        return False
    spec = body.get("spec") or {}
    many = spec.get("sources")
    found: list[Any] = many if isinstance(many, list) else [spec.get("source") or {}]
    return any(isinstance(s, Mapping) and is_helm_source(s, exists) for s in found)
