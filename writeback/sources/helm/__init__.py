"""Helm as a source: render a release as Argo CD or Flux does, trace each drifted field to the values key that
produces it (by rendering with perturbed values), and prove the values edit by re-rendering. Pure: every render
goes through a :class:`Renderer` (``writeback.adapters.helm.HelmCLI``).

    releases = releases_from_application(app, files=files, where=Where(file="apps/web.yaml", document=0))
    engine = HelmEngine(renderer)
    desired = engine.desired(release, files)               # load: the objects the controller renders
    located = engine.locate(release, files, drifts)         # locate: values edits, file patches, unresolved
    proof = engine.verify(release, files, located.patches, located.drifts)   # verify: the re-render
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from writeback.charts import (
        Artifact,
        ChartInfo,
        ChartRef,
        KustomizeStep,
        Renderer,
        RenderOutput,
        RenderRequest,
        ValuesText,
    )
    from writeback.sources.helm.argocd import normalize_repo_url, releases_from_application
    from writeback.sources.helm.choosing import ValuesEdit
    from writeback.sources.helm.engine import Desired, HelmEngine, HelmLocated, mark_shared
    from writeback.sources.helm.errors import ChartUnavailable, HelmError, ReleaseError, RenderFailed
    from writeback.sources.helm.flux import artifact_of, chart_object, release_from_helmrelease, release_name
    from writeback.sources.helm.model import Form, Layer, LayerKind, PostRender, Release, Where
    from writeback.sources.helm.rendered import RenderedObject, Rendering, parse_output
    from writeback.sources.helm.verifying import Difference, Proof, Verification

# Imported on first use (PEP 562): the source registry imports ``writeback.sources.helm.source``, which must not pull
# the engine in (a run that renders no chart never imports it).
_HOMES = {
    "Artifact": "writeback.charts",
    "ChartInfo": "writeback.charts",
    "ChartRef": "writeback.charts",
    "ChartUnavailable": "writeback.sources.helm.errors",
    "Desired": "writeback.sources.helm.engine",
    "Difference": "writeback.sources.helm.verifying",
    "Form": "writeback.sources.helm.model",
    "HelmEngine": "writeback.sources.helm.engine",
    "HelmError": "writeback.sources.helm.errors",
    "HelmLocated": "writeback.sources.helm.engine",
    "KustomizeStep": "writeback.charts",
    "Layer": "writeback.sources.helm.model",
    "LayerKind": "writeback.sources.helm.model",
    "PostRender": "writeback.sources.helm.model",
    "Proof": "writeback.sources.helm.verifying",
    "Release": "writeback.sources.helm.model",
    "ReleaseError": "writeback.sources.helm.errors",
    "RenderFailed": "writeback.sources.helm.errors",
    "RenderOutput": "writeback.charts",
    "RenderRequest": "writeback.charts",
    "RenderedObject": "writeback.sources.helm.rendered",
    "Renderer": "writeback.charts",
    "Rendering": "writeback.sources.helm.rendered",
    "ValuesEdit": "writeback.sources.helm.choosing",
    "ValuesText": "writeback.charts",
    "Verification": "writeback.sources.helm.verifying",
    "Where": "writeback.sources.helm.model",
    "artifact_of": "writeback.sources.helm.flux",
    "chart_object": "writeback.sources.helm.flux",
    "mark_shared": "writeback.sources.helm.engine",
    "normalize_repo_url": "writeback.sources.helm.argocd",
    "parse_output": "writeback.sources.helm.rendered",
    "release_from_helmrelease": "writeback.sources.helm.flux",
    "release_name": "writeback.sources.helm.flux",
    "releases_from_application": "writeback.sources.helm.argocd",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "Artifact",
    "ChartInfo",
    "ChartRef",
    "ChartUnavailable",
    "Desired",
    "Difference",
    "Form",
    "HelmEngine",
    "HelmError",
    "HelmLocated",
    "KustomizeStep",
    "Layer",
    "LayerKind",
    "PostRender",
    "Proof",
    "Release",
    "ReleaseError",
    "RenderFailed",
    "RenderOutput",
    "RenderRequest",
    "RenderedObject",
    "Renderer",
    "Rendering",
    "ValuesEdit",
    "ValuesText",
    "Verification",
    "Where",
    "artifact_of",
    "chart_object",
    "mark_shared",
    "normalize_repo_url",
    "parse_output",
    "release_from_helmrelease",
    "release_name",
    "releases_from_application",
]
