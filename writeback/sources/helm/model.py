"""What a Helm release is made of. Data only (what a render is asked: ``writeback.charts``).

A :class:`Release` is read from an Argo CD Application (``argocd.py``) or a Flux HelmRelease (``flux.py``): the
chart, the release's name and namespace, the flags the controller passes, and its values *layers* from the lowest
precedence to the highest, each with the place in the repo where it is written (or why it is not).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from writeback.charts import ChartRef, KustomizeStep
from writeback.kube.pathtypes import FieldPath
from writeback.kube.refs import ObjectRef


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
    # how the controller passes the layers to helm: each as one ``-f`` (Argo CD), or merged into one (Flux's
    # ``MergeMaps`` of valuesFrom and spec.values)
    merged: bool = False

    def describe(self) -> str:
        return f"{self.owner} (release {self.name} in {self.namespace or 'default'}, {self.chart})"
