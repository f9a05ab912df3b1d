"""Helm as a source: render a release as Argo CD or Flux does, trace each drifted field to the values key that
produces it (by rendering with perturbed values), and prove the values edit by re-rendering. Pure: every render
goes through a :class:`Renderer` (``writeback.adapters.helm.HelmCLI``).

    releases = releases_from_application(app, files=files, where=Where(file="apps/web.yaml", document=0))
    engine = HelmEngine(renderer)
    desired = engine.desired(release, files)               # load: the objects the controller renders
    located = engine.locate(release, files, drifts)         # locate: values edits, file patches, unresolved
    proof = engine.verify(release, files, located.patches, located.drifts)   # verify: the re-render
"""

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
