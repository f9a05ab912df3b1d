"""What a Helm release is made of, what a render is asked, and the Protocol that renders. Data only.

A :class:`Release` is read from an Argo CD Application (``argocd.py``) or a Flux HelmRelease (``flux.py``): the
chart, the release's name and namespace, the flags the controller passes, and its values *layers* from the lowest
precedence to the highest, each with the place in the repo where it is written (or why it is not).
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from writeback.model import FieldPath, ObjectRef


class Controller(enum.StrEnum):
    ARGOCD = "argocd"
    FLUX = "flux"


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


class LayerKind(enum.StrEnum):
    CHART = "chart"  # the chart's own values.yaml (or a values file inside a remote chart)
    VALUES_FILE = "values-file"  # Argo CD helm.valueFiles; Flux chart valuesFiles (they replace the chart's values)
    INLINE = "inline"  # Argo CD helm.values / helm.valuesObject; Flux spec.values
    CONFIGMAP = "configmap"  # Flux valuesFrom a ConfigMap (found in the repo)
    SECRET = "secret"  # Flux valuesFrom a Secret: never read
    PARAMETER = "parameter"  # Argo CD helm.parameters: --set
    STRING_PARAMETER = "string-parameter"  # forceString parameters: --set-string
    FILE_PARAMETER = "file-parameter"  # Argo CD helm.fileParameters: --set-file


class Form(enum.StrEnum):
    """How a layer's values are written at its place."""

    MAPPING = "mapping"  # a YAML mapping: a values file, valuesObject, spec.values
    TEXT = "text"  # a YAML text inside a string: Argo CD helm.values, a ConfigMap's data key
    SCALAR = "scalar"  # one value as a string: a parameter, a ConfigMap key read with targetPath
    FILE = "file"  # a whole file is one value (--set-file)


@dataclass(frozen=True, slots=True, kw_only=True)
class Where:
    """A place in the repo: a whole file (``document`` None), or ``path`` inside document ``document``."""

    file: str
    document: int | None = None
    path: FieldPath = ()
    form: Form = Form.MAPPING


@dataclass(frozen=True, slots=True, kw_only=True)
class Layer:
    """One source of values. ``where`` None: not in this repo (a remote chart's file, another repo's file, a
    Secret), so never edited. ``shared``: the chart's own values or a file other releases read too: never edited.
    ``unreadable``: why its values cannot be known (then nothing of the release can be traced)."""

    kind: LayerKind
    name: str  # for people: "values-prod.yaml", "spec.values", "parameter image.tag"
    where: Where | None = None
    key: str | None = None  # PARAMETER, STRING_PARAMETER, FILE_PARAMETER, targetPath: the --set key it sets
    chart_file: str | None = None  # CHART: the file inside the chart ("values.yaml")
    shared: bool = False
    unreadable: str | None = None
    chart_values: bool = False  # Flux chart valuesFiles: merged, they replace the chart's values.yaml
    data: Any = None  # the content as read from the release object (inline values, a parameter's value)


@dataclass(frozen=True, slots=True, kw_only=True)
class KustomizeStep:
    """One Flux ``postRenderers[].kustomize``: its ``patches`` (``{patch, target}``) and ``images``."""

    patches: tuple[Mapping[str, Any], ...] = ()
    images: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PostRender:
    """What helm-controller does to the rendered objects: Kustomize steps, then labels and annotations on every
    object (``commonMetadata`` and its own ``helm.toolkit.fluxcd.io/name`` and ``/namespace`` labels)."""

    kustomize: tuple[KustomizeStep, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Release:
    """Everything the controller renders a release from. ``layers`` go from the lowest precedence to the highest;
    ``own`` is where this release's own inline values are (or would be created): Argo CD ``valuesObject``, Flux
    ``spec.values``; None when its manifest is not in the repo. ``problems``: why it cannot be rendered at all."""

    controller: Controller
    owner: ObjectRef  # the Application or HelmRelease
    chart: ChartRef
    name: str  # the release name
    namespace: str
    layers: tuple[Layer, ...] = ()
    manifest: Where | None = None  # the Application / HelmRelease document in the repo
    own: Where | None = None
    kube_version: str | None = None
    api_versions: tuple[str, ...] = ()
    include_crds: bool = True
    skip_tests: bool = False
    no_hooks: bool = False  # Flux: hooks are not part of the release's manifest
    skip_schema_validation: bool = False
    post_render: PostRender | None = None
    storage_namespace: str | None = None  # Flux
    problems: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"{self.owner} (release {self.name} in {self.namespace or 'default'}, {self.chart})"


# ---------------------------------------------------------------- rendering


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

    ``chart`` raises :class:`~writeback.sources.helm.errors.ChartUnavailable` when the chart cannot be had;
    ``render`` raises :class:`~writeback.sources.helm.errors.RenderFailed` with helm's message."""

    def chart(self, ref: ChartRef) -> ChartInfo: ...

    def render(self, request: RenderRequest) -> RenderOutput: ...
