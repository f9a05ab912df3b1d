"""``helm template``'s output as objects: each with the template that produced it (its ``# Source:`` header).

Namespaced objects without ``metadata.namespace`` are in the release's namespace (the controller applies them
there). Flux's post-rendering (labels and annotations on every object) is applied here; its Kustomize patches are
applied by the adapter, whose output then gives the bodies while the helm output gives the templates. Pure.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from writeback.charts import RenderFailed, RenderOutput
from writeback.errors import YamlError
from writeback.kube.kinds import builtin_namespaced, crd_scopes, with_crds
from writeback.kube.manifests import expand_lists
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import DesiredObject
from writeback.sources.helm.model import PostRender
from writeback.yaml.reading import load_all

__all__ = ["RenderedObject", "Rendering", "parse_output"]

_SOURCE = re.compile(r"^# Source: (.+?)\s*$", re.MULTILINE)
_SEPARATOR = re.compile(r"^---[ \t]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderedObject:
    ref: ObjectRef
    body: Mapping[str, Any]
    template: str  # "podinfo/templates/deployment.yaml"; "" when unknown
    ordinal: int  # its position among the objects of its template (and kind)
    hook: bool = False  # a Helm (or Argo CD) hook: run at install or sync time, not a lasting object of the release
    raw: Mapping[str, Any] | None = None  # post-rendered: the object as helm rendered it, before the post-renderers


@dataclass(frozen=True, kw_only=True)
class Rendering:
    """The objects of one render, found by identity, or by template, kind and position (a perturbation may rename)."""

    objects: tuple[RenderedObject, ...] = ()
    _by_id: dict[Identity, RenderedObject] = field(default_factory=dict, repr=False, compare=False)
    _by_slot: dict[tuple[str, str, int], RenderedObject] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for obj in self.objects:
            self._by_id.setdefault(obj.ref.identity, obj)
            self._by_slot.setdefault((obj.template, obj.ref.kind, obj.ordinal), obj)

    def find(self, identity: Identity) -> RenderedObject | None:
        return self._by_id.get(identity)

    def counterpart(self, obj: RenderedObject) -> RenderedObject | None:
        """The object of this render that corresponds to ``obj`` of another render of the same chart."""
        return self._by_id.get(obj.ref.identity) or self._by_slot.get((obj.template, obj.ref.kind, obj.ordinal))

    def desired(self, *, file: str) -> tuple[DesiredObject, ...]:
        """The lasting objects (hooks left out) as the pipeline's desired objects, each attributed to ``file`` (the
        release's manifest or its values file), document numbers in render order."""
        return tuple(
            DesiredObject(ref=o.ref, body=o.body, file=file, document=i)
            for i, o in enumerate(self.objects)
            if not o.hook
        )

    @property
    def lasting(self) -> tuple[RenderedObject, ...]:
        """The objects that are not hooks."""
        return tuple(o for o in self.objects if not o.hook)


def _chunks(text: str) -> Iterator[tuple[str, str]]:
    """(template, YAML text) per ``---`` document of helm's output."""
    for chunk in _SEPARATOR.split(text):
        if not chunk.strip():
            continue
        m = _SOURCE.search(chunk)
        yield (m.group(1) if m else ""), chunk


def _ref(body: Mapping[str, Any], *, namespace: str | None) -> ObjectRef | None:
    meta = body.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    api, kind = body.get("apiVersion"), body.get("kind")
    if not (isinstance(name, str) and name and isinstance(api, str) and isinstance(kind, str)):
        return None
    return ObjectRef(api_version=api, kind=kind, namespace=namespace, name=name)


def _labelled(body: Mapping[str, Any], post: PostRender | None) -> Mapping[str, Any]:
    if post is None or not (post.labels or post.annotations):
        return body
    out = copy.deepcopy(dict(body))
    meta = out.setdefault("metadata", {})
    if post.labels:
        labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
        meta["labels"] = {**labels, **post.labels}
    if post.annotations:
        notes = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
        meta["annotations"] = {**notes, **post.annotations}
    return out


def parse_output(output: RenderOutput, *, namespace: str, post: PostRender | None = None) -> Rendering:
    """The objects of a render; a text that does not parse raises RenderFailed naming the template."""
    found: list[tuple[str, Mapping[str, Any]]] = []
    for template, chunk in _chunks(output.text):
        try:
            docs = load_all(chunk, source=template or "helm template output")
        except YamlError as e:  # a template that renders broken YAML
            raise RenderFailed(f"{template or 'helm template'}: the rendered YAML does not parse: {e}") from e
        found.extend((template, body) for body in expand_lists(docs))
    templates = {_key(body): template for template, body in found}
    if output.post_rendered is not None:
        try:
            docs = load_all(output.post_rendered, source="post-renderer output")
        except YamlError as e:
            raise RenderFailed(f"the post-renderer's output does not parse: {e}") from e
        bodies = [(templates.get(_key(b), ""), b) for b in expand_lists(docs)]
    else:
        bodies = found
    helm_bodies = {_key(b): b for _, b in found}
    namespaced = with_crds(builtin_namespaced, crd_scopes(b for _, b in bodies))
    objects: list[RenderedObject] = []
    counts: dict[tuple[str, str], int] = {}
    for template, raw in bodies:
        body = _labelled(raw, post)
        ns: str | None = None
        if namespaced(str(body.get("apiVersion", "")), str(body.get("kind", ""))) is not False:
            meta = body.get("metadata")
            own = meta.get("namespace") if isinstance(meta, Mapping) else None
            ns = own if isinstance(own, str) and own else (namespace or "default")
        ref = _ref(body, namespace=ns)
        if ref is None:
            continue
        slot = (template, ref.kind)
        counts[slot] = counts.get(slot, -1) + 1
        raw_body = helm_bodies.get(_key(raw)) if post is not None else None
        objects.append(
            RenderedObject(
                ref=ref, body=body, template=template, ordinal=counts[slot], hook=_is_hook(body), raw=raw_body
            )
        )
    return Rendering(objects=tuple(objects))


def _name(body: Mapping[str, Any]) -> Any:
    meta = body.get("metadata")
    return meta.get("name") if isinstance(meta, Mapping) else None


def _key(body: Mapping[str, Any]) -> tuple[str, str, str | None, str]:
    meta = body.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    return (str(body.get("apiVersion")), str(body.get("kind")), ns, str(_name(body)))


_HOOKS = ("helm.sh/hook", "argocd.argoproj.io/hook")


def _is_hook(body: Mapping[str, Any]) -> bool:
    meta = body.get("metadata")
    notes = meta.get("annotations") if isinstance(meta, Mapping) else None
    return isinstance(notes, Mapping) and any(h in notes for h in _HOOKS)
