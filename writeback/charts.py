"""Helm charts and renders as data: what the Helm engine (``writeback.sources.helm``) asks of its renderer and gets
back, and the renderer's errors. Pure, data only: the real renderer is ``writeback.adapters.helm.HelmCLI``.

It sits below both: the engine (a source kind) and the adapter (an edge) share these types.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from writeback.errors import WritebackError

__all__ = [
    "Artifact",
    "ChartInfo",
    "ChartRef",
    "ChartUnavailable",
    "HelmError",
    "KustomizeStep",
    "RenderFailed",
    "RenderOutput",
    "RenderRequest",
    "Renderer",
    "ValuesText",
]


class HelmError(WritebackError):
    """Base of the errors of charts and renders."""


class ChartUnavailable(HelmError):
    """The chart cannot be had (not in the repo, not in the chart cache, no artifact, refused): the message says
    which chart and why."""


class RenderFailed(HelmError):
    """``helm template`` (or a post-renderer) failed; the message is its error, paths inside the repo relative."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Artifact:
    """A chart as Flux's source-controller serves it (``status.artifact`` of a HelmChart or OCIRepository)."""

    url: str
    digest: str | None = None  # "sha256:<hex>"
    revision: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ChartRef:
    """Where the chart is: a directory of the repo (``path``), or ``name`` at ``version`` of the Helm or OCI
    repository ``repo_url``; in cluster mode Flux's ``artifact`` of it."""

    path: str | None = None  # repo-relative directory
    repo_url: str | None = None
    name: str | None = None
    version: str | None = None  # exact, a semver range, or None (the latest)
    artifact: Artifact | None = None
    source: str | None = None  # Flux: the source object, "Kind/namespace/name", for messages

    def __str__(self) -> str:
        if self.path is not None:
            return f"chart {self.path} (in the repo)"
        version = f" {self.version}" if self.version else ""
        where = f" from {self.repo_url}" if self.repo_url else f" of {self.source}" if self.source else ""
        return f"chart {self.name or '?'}{version}{where}"


@dataclass(frozen=True, slots=True, kw_only=True)
class KustomizeStep:
    """One Flux ``postRenderers[].kustomize``: its ``patches`` (``{patch, target}``) and ``images``."""

    patches: tuple[Mapping[str, Any], ...] = ()
    images: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ChartInfo:
    """What the tracer needs to know of a chart: its default values, schema and top-level files."""

    name: str
    version: str
    digest: str  # sha256 over the chart's files
    values: str = ""  # the text of values.yaml
    schema: str | None = None  # values.schema.json
    files: Mapping[str, str] = field(default_factory=dict)  # other top-level YAML files, by name


@dataclass(frozen=True, slots=True, kw_only=True)
class ValuesText:
    """One ``-f`` file: its text and, for messages, what it is."""

    name: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderRequest:
    """One ``helm template`` run: the flags Argo CD's repo-server passes, Flux's merged values, post-renderers."""

    chart: ChartRef
    release_name: str
    namespace: str
    kube_version: str | None = None
    api_versions: tuple[str, ...] = ()
    include_crds: bool = True
    skip_tests: bool = False
    no_hooks: bool = False
    skip_schema_validation: bool = False
    chart_values: str | None = None  # replaces the chart's values.yaml (Flux chart valuesFiles, merged)
    values: tuple[ValuesText, ...] = ()  # -f, in order
    set: tuple[tuple[str, str], ...] = ()  # --set key=value
    set_string: tuple[tuple[str, str], ...] = ()  # --set-string
    set_file: tuple[tuple[str, str], ...] = ()  # --set-file key=<a file with this content>
    post_render: tuple[KustomizeStep, ...] = ()
    attempt: int = 0  # > 0: a fresh render of the same input (the adapter's cache is not used)

    def key(self) -> str:
        """A digest of everything that decides the output except the chart's content (the adapter adds that)."""
        data = asdict(self)
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderOutput:
    """``helm template``'s output (with its ``# Source:`` headers) and, with post-renderers, their output."""

    text: str
    post_rendered: str | None = None


class Renderer(Protocol):
    """The one edge of the Helm engine: charts and ``helm template`` (``writeback.adapters.helm``).

    ``chart`` raises :class:`ChartUnavailable` when the chart cannot be had;
    ``render`` raises :class:`RenderFailed` with helm's message."""

    def chart(self, ref: ChartRef) -> ChartInfo: ...

    def render(self, request: RenderRequest) -> RenderOutput: ...
