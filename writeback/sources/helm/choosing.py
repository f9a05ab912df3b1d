"""Which layer a values edit goes to, the way a reviewer would choose. Pure.

The highest-precedence layer that sets the key today is edited, when it is this release's own and in the repo.
When only a shared layer sets it (the chart's own ``values.yaml``, a values file other releases read too, a file
outside the repo), the key is written to this release's own top layer instead: its inline values (Argo CD
``valuesObject``/``values``, Flux ``spec.values``), else its last own values file above that layer, else a new
``valuesObject`` / ``spec.values`` in its manifest. A key under a list is written as the whole list there.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.charts import ChartInfo
from writeback.kube.pathtypes import ABSENT
from writeback.model import Drift
from writeback.sources.helm.layers import layer_text, layer_values
from writeback.sources.helm.model import Form, Layer, LayerKind, Release, Where
from writeback.sources.helm.values import ValuesPath, format_key, get_value, parse_key, setter_layer, with_value

__all__ = ["ValuesEdit", "choose", "editable"]

_PARAMS = (LayerKind.PARAMETER, LayerKind.STRING_PARAMETER, LayerKind.FILE_PARAMETER)


@dataclass(frozen=True, slots=True, kw_only=True)
class ValuesEdit:
    """Set ``key`` (in the layer's values; ``()``: the layer's one value) to ``value`` (ABSENT: remove it)."""

    drift: Drift
    layer: Layer
    where: Where
    key: ValuesPath
    value: Any
    via: str  # for people: "values key image.tag in apps/web/values-prod.yaml"
    template: str = ""


def editable(layer: Layer) -> bool:
    return layer.where is not None and not layer.shared and not layer.unreadable


def _values(layer: Layer, files: Mapping[str, str], chart: ChartInfo) -> dict[str, Any]:
    return layer_values(layer, files=files, chart=chart) if not layer.unreadable else {}


def _own(release: Release, *, above: int, files: Mapping[str, str], chart: ChartInfo) -> tuple[Layer, int] | None:
    """This release's own top layer that beats layer number ``above``: its inline values when it has some, else
    its last own values file (one no other release reads), else its inline values created: (layer, precedence)."""
    layers = release.layers
    inline = [(i, layer) for i, layer in enumerate(layers) if layer.kind is LayerKind.INLINE and editable(layer)]
    for i, layer in inline:
        if i > above and layer_text(layer, files=files, chart=chart) not in (ABSENT, None):
            return layer, i
    for i in range(len(layers) - 1, above, -1):  # a values file of its own (Flux's chart valuesFiles too)
        layer = layers[i]
        if layer.kind is LayerKind.VALUES_FILE and editable(layer):
            return layer, i
    for i, layer in inline:
        if i > above and layer.where is not None and layer.where.file in files:
            return layer, i
    return None


def _where_text(layer: Layer) -> str:
    where = layer.where
    if where is None:
        return layer.name
    if where.document is None:
        return where.file
    return f"{layer.name} in {where.file}"


def choose(
    release: Release,
    edits: Sequence[tuple[ValuesPath, Any]],
    *,
    drift: Drift,
    files: Mapping[str, str],
    chart: ChartInfo,
    effective: Mapping[str, Any],
    template: str = "",
) -> list[ValuesEdit] | str:
    """The layer edits that make ``effective`` take ``edits``; a reason when no layer of the repo can."""
    out: list[ValuesEdit] = []
    layers = release.layers
    values = [_values(layer, files, chart) for layer in layers]
    for path, value in edits:
        new = get_value(effective, path) is ABSENT
        decide = path[:-1] if new and value is not ABSENT and path else path
        for layer in layers:
            if layer.kind is LayerKind.SECRET and (not layer.key or _overlap(parse_key(layer.key), decide)):
                return f"{format_key(decide)} may be set by {layer.name[len('Secret ') :]} (a Secret: never read)"
        setters = [
            (i, held)
            for i, v in enumerate(values)
            if (held := setter_layer(v, decide)) is not None and not (new and layers[i].kind in _PARAMS)
        ]
        top = max(setters, default=None, key=lambda s: s[0])
        if top is not None and editable(layers[top[0]]):
            got = _in_layer(layers[top[0]], top[1], path, value, lower=any(i < top[0] for i, _ in setters))
            if isinstance(got, str):
                return got
            key, val = got
            layer = layers[top[0]]
        else:
            above = top[0] if top is not None else 0
            own = _own(release, above=above, files=files, chart=chart)
            if own is None:
                holder = layers[top[0]].name if top is not None else "the chart"
                why = (
                    "no layer of this release in the repo can override it"
                    if release.manifest
                    else f"{release.owner} is not in the repo"
                )
                return f"{format_key(decide)} is set by {holder} (shared or outside the repo); {why}"
            layer, _ = own
            key, val = _whole_list(path, value, effective, lower=top is not None)
        assert layer.where is not None
        out.append(
            ValuesEdit(
                drift=drift,
                layer=layer,
                where=layer.where,
                key=key,
                value=val,
                template=template,
                via=f"values key {format_key(key) if key else format_key(path)} in {_where_text(layer)}",
            )
        )
    return out


def _overlap(a: Sequence[str | int], b: Sequence[str | int]) -> bool:
    n = min(len(a), len(b))
    return tuple(a[:n]) == tuple(b[:n])


def _in_layer(
    layer: Layer, held: ValuesPath, path: ValuesPath, value: Any, *, lower: bool
) -> tuple[ValuesPath, Any] | str:
    """The edit inside the layer that sets the key (or the list above it)."""
    form = layer.where.form if layer.where is not None else Form.MAPPING
    if form in (Form.SCALAR, Form.FILE) or layer.kind in _PARAMS:
        if tuple(held) != tuple(path) or value is ABSENT or isinstance(value, Mapping | list):
            return f"{layer.name} sets {format_key(held)}, not {format_key(path)}; edit it by hand"
        return (), value
    if value is ABSENT and lower and not any(isinstance(s, int) for s in path):
        return path, None  # a lower layer sets it too: null deletes it (Helm's coalescing)
    return path, value


def _whole_list(path: ValuesPath, value: Any, effective: Mapping[str, Any], *, lower: bool) -> tuple[ValuesPath, Any]:
    """For a layer that does not set the key yet: the key itself, or the whole list above it."""
    cut = next((i for i, s in enumerate(path) if isinstance(s, int)), None)
    if cut is None:
        return path, (None if value is ABSENT and lower else value)
    top = path[:cut]
    changed = with_value({"_": copy.deepcopy(get_value(effective, top))}, ("_", *path[cut:]), value)
    return top, changed["_"]
