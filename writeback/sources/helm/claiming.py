"""Which GitOps controller objects render a Helm chart: the Helm source kind claims a target that follows one. Pure,
and light: the source registry asks it before anything of the Helm engine is imported."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from typing import Any

from writeback.gitops import argocd, flux
from writeback.gitops.base import GitOpsController

__all__ = ["claims", "is_helm_source", "repo_relative"]


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


def is_helm_source(source: Mapping[str, Any], exists: Callable[[str], bool]) -> bool:
    """Whether an Application source renders a Helm chart: a ``chart``, a ``helm`` section, or a ``path`` that
    holds a ``Chart.yaml`` (``exists``: is this repo-relative file there)."""
    if source.get("chart") or isinstance(source.get("helm"), Mapping):
        return True
    path = source.get("path")
    clean = repo_relative(path) if isinstance(path, str) else None
    return clean is not None and exists(("" if clean == "." else clean.rstrip("/") + "/") + "Chart.yaml")


def repo_relative(path: str) -> str | None:
    """A repo-relative path, or None when it leaves the repo."""
    p = posixpath.normpath(path.lstrip("/")) if path else "."
    return None if p == ".." or p.startswith("../") else p
