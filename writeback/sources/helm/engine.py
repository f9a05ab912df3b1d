"""The Helm engine: load a release's desired objects, locate the values edits for its drifted fields, verify them.

Each of the three is one call (``desired``, ``locate``, ``verify``) for a ``Source`` to wrap. Every render goes
through the :class:`~writeback.sources.helm.model.Renderer` it is given, and is counted (``renders``): at most
``per_field`` renders per drifted field for loading and tracing together, plus the verification (one render; two
when the chart generates content that differs on every render).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from writeback.charts import ChartInfo, ChartRef, ChartUnavailable, Renderer, RenderFailed, RenderRequest
from writeback.errors import PatchError
from writeback.kube.pathtypes import FieldPath
from writeback.kube.refs import Identity
from writeback.model import Drift, FilePatch, Unresolved
from writeback.sources.helm.choosing import ValuesEdit, choose
from writeback.sources.helm.editing import conflicts, patch_files
from writeback.sources.helm.errors import ReleaseError
from writeback.sources.helm.layers import effective_values, render_request, unreadable
from writeback.sources.helm.model import LayerKind, Release
from writeback.sources.helm.rendered import Rendering, parse_output
from writeback.sources.helm.schema import Schema
from writeback.sources.helm.tracing import Target, target_for, trace
from writeback.sources.helm.values import ValuesPath, parse_key
from writeback.sources.helm.verifying import Verification, differences, generated, verify

__all__ = ["Desired", "HelmEngine", "HelmLocated", "mark_shared"]

_PARAMS = (LayerKind.PARAMETER, LayerKind.STRING_PARAMETER, LayerKind.FILE_PARAMETER)
LOADED = 64  # releases whose render of the Git values is kept (load, then locate and verify, render it once)


@dataclass(frozen=True, kw_only=True)
class Desired:
    """A release rendered from the repo's values, as the controller renders it."""

    release: Release
    chart: ChartInfo
    rendering: Rendering
    effective: Mapping[str, Any]
    request: RenderRequest


@dataclass(frozen=True, kw_only=True)
class HelmLocated:
    """Where the drifted fields of a release go: the values edits, the file patches that make them, and what
    cannot be written (with the reason). ``marked``: fields that ``$writeback`` markers bind (they win)."""

    edits: tuple[ValuesEdit, ...] = ()
    patches: tuple[FilePatch, ...] = ()
    unresolved: tuple[Unresolved, ...] = ()
    marked: tuple[Drift, ...] = ()
    renders: int = 0  # renders this locate made (the load's included when it made it)

    @property
    def drifts(self) -> tuple[Drift, ...]:
        """The drifts the patches write."""
        return tuple({id(e.drift): e.drift for e in self.edits}.values())


def mark_shared(release: Release, others: Sequence[Release]) -> Release:
    """``release`` with each values file that another release of the repo reads too marked shared (``others`` may
    include ``release`` itself)."""
    me = (release.owner.identity, release.name, release.chart)
    theirs = {
        layer.where.file
        for o in others
        if (o.owner.identity, o.name, o.chart) != me
        for layer in o.layers
        if layer.where is not None
    }
    layers = tuple(
        replace(layer, shared=True)
        if layer.kind is LayerKind.VALUES_FILE and layer.where is not None and layer.where.file in theirs
        else layer
        for layer in release.layers
    )
    return replace(release, layers=layers)


@dataclass
class HelmEngine:
    renderer: Renderer
    per_field: int = 3
    renders: int = 0
    _charts: dict[ChartRef, ChartInfo] = field(default_factory=dict)
    _loaded: dict[str, Desired] = field(default_factory=dict)
    _other: dict[str, Rendering] = field(default_factory=dict)  # one more render of the chart (a perturbed one)
    _spent: dict[str, int] = field(default_factory=dict)  # renders made for a release's Git values (load, trace)
    _fields: dict[str, int] = field(default_factory=dict)  # how many drifted fields its last locate had

    def chart(self, release: Release) -> ChartInfo:
        """The release's chart (ChartUnavailable when it cannot be had)."""
        if release.problems:
            raise ChartUnavailable(f"{release.owner}: {'; '.join(release.problems)}")
        if release.chart not in self._charts:
            self._charts[release.chart] = self.renderer.chart(release.chart)
        return self._charts[release.chart]

    def _render(self, request: RenderRequest, release: Release) -> Rendering:
        self.renders += 1
        output = self.renderer.render(request)
        return parse_output(output, namespace=release.namespace, post=release.post_render)

    def desired(self, release: Release, files: Mapping[str, str]) -> Desired:
        """Render ``release`` from the repo's ``files`` as its controller does. Raises ChartUnavailable,
        RenderFailed or ReleaseError (a values layer that cannot be read)."""
        chart = self.chart(release)
        why = unreadable(release)
        if why:
            raise ReleaseError(f"{release.owner}: {why}")
        request = render_request(release, files=files, chart=chart)
        key = request.key()
        if key not in self._loaded:
            rendering = self._render(request, release)
            self._spent[key] = 1
            effective = effective_values(release, files=files, chart=chart)
            self._loaded[key] = Desired(
                release=release, chart=chart, rendering=rendering, effective=effective, request=request
            )
            while len(self._loaded) > LOADED:
                self._loaded.pop(next(iter(self._loaded)))
        return self._loaded[key]

    def locate(
        self,
        release: Release,
        files: Mapping[str, str],
        drifts: Sequence[Drift],
        *,
        marked: Collection[tuple[Identity, FieldPath]] = (),
        others: Sequence[Release] = (),
    ) -> HelmLocated:
        """The values edits that make the repo render the live values of ``drifts``. A field that a marker binds
        (``marked``: identity and path) is left to the marker; what cannot be traced or written is unresolved."""
        start = self.renders
        release = mark_shared(release, others)
        todo = [d for d in drifts if (d.resource.identity, d.path) not in set(marked)]
        left = tuple(d for d in drifts if (d.resource.identity, d.path) in set(marked))
        try:
            loaded = self.desired(release, files)
        except (ChartUnavailable, RenderFailed, ReleaseError) as e:
            return HelmLocated(
                unresolved=tuple(Unresolved(resource=d.resource, path=d.path, reason=str(e)) for d in todo),
                marked=left,
                renders=self.renders - start,
            )
        unresolved: list[Unresolved] = []
        targets: list[Target] = []
        for d in todo:
            obj = loaded.rendering.find(d.resource.identity)
            if obj is None:
                unresolved.append(
                    Unresolved(resource=d.resource, path=d.path, reason=f"not rendered by {release.chart}")
                )
                continue
            if d.resource.is_secret or d.sensitive:
                what = "a Secret" if d.resource.is_secret else "a sensitive value"
                unresolved.append(Unresolved(resource=d.resource, path=d.path, reason=f"{what} is never written"))
                continue
            got = target_for(d, obj, loaded.effective)
            if isinstance(got, str):
                unresolved.append(Unresolved(resource=d.resource, path=d.path, reason=got))
            else:
                targets.append(got)
        if targets:
            budget = max(1, self.per_field * len(todo) - 1)  # with the load and the proof: per_field * n + 1
            base_key = loaded.request.key()
            self._fields[base_key] = len(todo)

            def render(overlay: Mapping[str, Any], tops: frozenset[ValuesPath]) -> Rendering:
                drop = frozenset(
                    layer.name
                    for layer in release.layers
                    if layer.kind in _PARAMS and layer.key and any(_overlap(parse_key(layer.key), t) for t in tops)
                )
                request = render_request(release, files=files, chart=loaded.chart, overlay=overlay, drop=drop)
                self._spent[base_key] = self._spent.get(base_key, 1) + 1
                rendering = self._render(request, release)
                self._other.setdefault(base_key, rendering)
                return rendering

            trace(targets, effective=loaded.effective, schema=Schema(loaded.chart.schema), render=render, budget=budget)
        edits: list[ValuesEdit] = []
        for t in targets:
            if isinstance(t.result, str) or t.result is None:
                unresolved.append(
                    Unresolved(resource=t.drift.resource, path=t.drift.path, reason=t.result or "not traced")
                )
                continue
            chosen = choose(
                release,
                t.result,
                drift=t.drift,
                files=files,
                chart=loaded.chart,
                effective=loaded.effective,
                template=t.obj.template,
            )
            if isinstance(chosen, str):
                unresolved.append(Unresolved(resource=t.drift.resource, path=t.drift.path, reason=chosen))
            else:
                edits.extend(chosen)
        keep, bad = conflicts(edits)
        for c in bad:
            unresolved.extend(
                Unresolved(resource=e.drift.resource, path=e.drift.path, reason=c.reason) for e in c.edits
            )
        broken = {id(e.drift) for c in bad for e in c.edits}
        keep = [e for e in keep if id(e.drift) not in broken]
        try:
            patches = patch_files(keep, files)
        except PatchError as e:
            unresolved.extend(Unresolved(resource=x.drift.resource, path=x.drift.path, reason=str(e)) for x in keep)
            keep, patches = [], ()
        return HelmLocated(
            edits=tuple(keep), patches=patches, unresolved=tuple(unresolved), marked=left, renders=self.renders - start
        )

    def verify(
        self, release: Release, files: Mapping[str, str], patches: Sequence[FilePatch], drifts: Sequence[Drift]
    ) -> Verification:
        """Re-render with ``patches`` applied to ``files``: it must equal the render of ``files`` except exactly at
        ``drifts``, which must have their live values."""
        loaded = self.desired(release, files)
        edited = {**files, **{p.path: p.after for p in patches}}
        request = render_request(release, files=edited, chart=loaded.chart)
        try:
            after = self._render(request, release)
        except RenderFailed as e:
            return Verification(failure=f"helm template with the edited values fails: {e}")
        objects = tuple(o.body for o in after.lasting)
        result = replace(verify(loaded.rendering, after, drifts), objects=objects)
        if result.ok:
            return result
        key = loaded.request.key()
        other = self._other.get(key)
        suspect = generated(loaded.rendering, other, result.differences) if other is not None else result.differences
        fields = max(len(drifts), self._fields.get(key, 0))
        if not suspect or self._spent.get(key, 1) + 2 > self.per_field * fields + 1:
            return result
        # Content the chart generates anew on every render (random names, certificates) is what differs between
        # two renders of the very same values: render them once more to know.
        again = self._render(replace(loaded.request, attempt=1), release)
        self._spent[key] = self._spent.get(key, 1) + 1
        volatile = differences(loaded.rendering.lasting, again.lasting)
        if not volatile:
            return result
        return replace(verify(loaded.rendering, after, drifts, volatile=volatile), objects=objects)


def _overlap(a: Sequence[str | int], b: Sequence[str | int]) -> bool:
    n = min(len(a), len(b))
    return tuple(a[:n]) == tuple(b[:n])
