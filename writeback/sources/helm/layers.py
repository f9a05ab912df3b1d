"""A release's values: each layer's content read from the repo (or the chart, or the release object), the values
the chart's templates see, and the ``helm template`` request that renders them. Pure.

Argo CD passes its values files as ``-f`` in order, then ``helm.values``/``valuesObject`` as one more ``-f``, then
``--set``, ``--set-string`` and ``--set-file``. Flux merges ``valuesFrom`` in order and ``spec.values`` on top
(``MergeMaps``), and its chart ``valuesFiles`` replace the chart's ``values.yaml``: both are given to helm as
merged files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from writeback.charts import ChartInfo, RenderRequest, ValuesText
from writeback.errors import YamlError
from writeback.kube.paths import lookup
from writeback.kube.pathtypes import ABSENT
from writeback.sources.helm.errors import ReleaseError
from writeback.sources.helm.model import Form, Layer, LayerKind, Release
from writeback.sources.helm.values import ValuesPath, coalesce, merge_maps, parse_key, set_value, typed_value
from writeback.yaml.reading import load_all

__all__ = ["effective_values", "layer_text", "layer_values", "parse_values", "render_request", "unreadable"]

_PARAMS = (LayerKind.PARAMETER, LayerKind.STRING_PARAMETER, LayerKind.FILE_PARAMETER)


def _doc(files: Mapping[str, str], file: str, document: int) -> Any:
    text = files.get(file)
    if text is None:
        raise ReleaseError(f"{file}: not in the repo")
    docs = load_all(text, source=file)
    if not 0 <= document < len(docs):
        raise ReleaseError(f"{file}: has no document {document}")
    return docs[document]


def layer_text(layer: Layer, *, files: Mapping[str, str], chart: ChartInfo | None) -> Any:
    """What the layer holds as written: the text of a values file or embedded values, a parameter's string, a
    mapping (valuesObject, spec.values), or ABSENT when it is not there (yet). A layer that is not in ``files``
    is read from what the release object itself holds (``layer.data``)."""
    if layer.unreadable:
        raise ReleaseError(layer.unreadable)
    where = layer.where
    if where is not None and where.file in files:
        if where.document is None:
            return files[where.file]
        return lookup(_doc(files, where.file, where.document), where.path)
    if layer.chart_file is not None:
        if chart is None:
            raise ReleaseError(f"{layer.name}: the chart is not known")
        if layer.chart_file == "values.yaml":
            return chart.values
        text = chart.files.get(layer.chart_file)
        if text is None:
            raise ReleaseError(f"{layer.name}: the chart has no file {layer.chart_file}")
        return text
    if layer.data is not None:
        return layer.data
    if where is not None:
        raise ReleaseError(f"{where.file}: not in the repo ({layer.name})")
    raise ReleaseError(f"{layer.name}: its values are not known")


def _yaml11(text: str) -> str:
    """``text`` read as YAML 1.1, as Helm reads values (sigs.k8s.io/yaml: ``yes``/``on``/``y`` are booleans)."""
    head = text.lstrip()
    if head.startswith("%"):
        return text
    return "%YAML 1.1\n" + (text if head.startswith("---") else "---\n" + text)


def _json_keys(value: Any) -> Any:
    """Map keys as Helm has them after its YAML-to-JSON step: every key a string (``true``, ``1``, ``null``)."""
    if isinstance(value, Mapping):
        return {_key_text(k): _json_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_keys(v) for v in value]
    return value


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return json.dumps(key) if isinstance(key, int | float) else str(key)


def parse_values(text: str, *, source: str) -> dict[str, Any]:
    """A values text as Helm reads it (YAML 1.1, the first document, string keys); ReleaseError when it is not a
    mapping or does not parse."""
    try:
        docs = load_all(_yaml11(text), source=source)
    except YamlError as e:
        raise ReleaseError(f"{source}: values do not parse: {e}") from e
    first = docs[0] if docs else None
    if first is None:
        return {}
    if not isinstance(first, Mapping):
        raise ReleaseError(f"{source}: values must be a mapping, not {type(first).__name__}")
    out: dict[str, Any] = _json_keys(first)
    return out


def _text_form(raw: Any, *, form: Form) -> str:
    if form is Form.SCALAR:
        return "" if raw is ABSENT or raw is None else raw if isinstance(raw, str) else json.dumps(raw)
    return raw if isinstance(raw, str) else ""


def layer_values(layer: Layer, *, files: Mapping[str, str], chart: ChartInfo | None) -> dict[str, Any]:
    """The values a layer contributes, as a nested mapping (a parameter: its key set to its typed value)."""
    raw = layer_text(layer, files=files, chart=chart)
    if layer.kind in _PARAMS or (layer.key and layer.kind is LayerKind.CONFIGMAP):
        text = _text_form(raw, form=Form.SCALAR)
        value = text if layer.kind in (LayerKind.STRING_PARAMETER, LayerKind.FILE_PARAMETER) else typed_value(text)
        out: dict[str, Any] = {}
        set_value(out, _key(layer), value)
        return out
    if raw is ABSENT or raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        return parse_values(raw, source=layer.name)
    raise ReleaseError(f"{layer.name}: values must be a mapping, not {type(raw).__name__}")


def _key(layer: Layer) -> ValuesPath:
    try:
        return parse_key(layer.key or "")
    except ValueError as e:
        raise ReleaseError(f"{layer.name}: {e}") from e


def unreadable(release: Release) -> str | None:
    """Why the release's values cannot all be known (a Secret, a file outside the repo), if so."""
    if release.problems:
        return "; ".join(release.problems)
    for layer in release.layers:
        if layer.unreadable and not layer.key:
            return layer.unreadable
    return None


def effective_values(release: Release, *, files: Mapping[str, str], chart: ChartInfo) -> dict[str, Any]:
    """The values the chart's templates see (subcharts aside)."""
    defaults = parse_values(chart.values, source=f"{chart.name}/values.yaml") if chart.values else {}
    replaced: dict[str, Any] | None = None
    user: dict[str, Any] = {}
    params: list[Layer] = []
    for layer in release.layers:
        if layer.unreadable:
            continue
        if layer.kind in _PARAMS:
            params.append(layer)
            continue
        values = layer_values(layer, files=files, chart=chart)
        if layer.kind is LayerKind.CHART:
            defaults = values
        elif layer.chart_values:
            replaced = merge_maps(replaced or {}, values)
        elif layer.key:
            set_value(user, _key(layer), lookup_value(values, _key(layer)))
        else:
            user = merge_maps(user, values)
    for kind in _PARAMS:
        for layer in params:
            if layer.kind is kind:
                values = layer_values(layer, files=files, chart=chart)
                set_value(user, _key(layer), lookup_value(values, _key(layer)))
    return coalesce(replaced if replaced is not None else defaults, user)


def lookup_value(values: Mapping[str, Any], path: Sequence[str | int]) -> Any:
    at: Any = values
    for seg in path:
        at = at[seg]
    return at


def render_request(
    release: Release,
    *,
    files: Mapping[str, str],
    chart: ChartInfo,
    overlay: Mapping[str, Any] | None = None,
    drop: frozenset[str] = frozenset(),
    attempt: int = 0,
) -> RenderRequest:
    """The ``helm template`` run the controller makes for ``release`` with the repo's ``files``.

    ``overlay``: values put over everything (a perturbation); ``drop``: names of parameter layers left out (their
    keys are in the overlay). ``attempt`` > 0 asks for a fresh render of the same input (no cache)."""
    values: list[ValuesText] = []
    sets: dict[LayerKind, list[tuple[str, str]]] = {k: [] for k in _PARAMS}
    chart_values: dict[str, Any] | None = None
    merged: dict[str, Any] = {}
    for layer in release.layers:
        if layer.unreadable or layer.kind is LayerKind.CHART:
            continue
        if layer.kind in _PARAMS:
            if layer.name not in drop:
                raw = layer_text(layer, files=files, chart=chart)
                sets[layer.kind].append((layer.key or "", _text_form(raw, form=Form.SCALAR)))
            continue
        if layer.chart_values:
            chart_values = merge_maps(chart_values or {}, layer_values(layer, files=files, chart=chart))
            continue
        if release.merged:
            contribution = layer_values(layer, files=files, chart=chart)
            if layer.key:
                set_value(merged, _key(layer), lookup_value(contribution, _key(layer)))
            else:
                merged = merge_maps(merged, contribution)
            continue
        raw = layer_text(layer, files=files, chart=chart)
        if isinstance(raw, str):
            values.append(ValuesText(name=layer.name, text=raw))
        elif isinstance(raw, Mapping):
            values.append(ValuesText(name=layer.name, text=json.dumps(raw)))
    if release.merged:
        if overlay:
            merged = merge_maps(merged, overlay)
        if merged:
            values.append(ValuesText(name="values", text=json.dumps(merged)))
    elif overlay:
        values.append(ValuesText(name="writeback perturbation", text=json.dumps(overlay)))
    post = release.post_render
    return RenderRequest(
        chart=release.chart,
        release_name=release.name,
        namespace=release.namespace,
        kube_version=release.kube_version,
        api_versions=release.api_versions,
        include_crds=release.include_crds,
        skip_tests=release.skip_tests,
        no_hooks=release.no_hooks,
        skip_schema_validation=release.skip_schema_validation,
        chart_values=json.dumps(chart_values) if chart_values is not None else None,
        values=tuple(values),
        set=tuple(sets[LayerKind.PARAMETER]),
        set_string=tuple(sets[LayerKind.STRING_PARAMETER]),
        set_file=tuple(sets[LayerKind.FILE_PARAMETER]),
        post_render=post.kustomize if post is not None else (),
        attempt=attempt,
    )
