"""Decide where in a Kustomize overlay a drifted field is produced, and where the live value should land. Pure.

Outer layers win: for each layer from the target's overlay inwards, an ``images:`` entry, a ``replicas:`` entry,
a JSON 6902 patch, a strategic-merge patch or a generator that sets the field is its source; failing those, the
declaring document. A source inside the target's directory is edited in place. A source outside it (a base shared
with other overlays) is left alone: the value goes into a strategic-merge patch of the target's overlay (an
existing one for that resource, or a new file referenced from its kustomization), unless ``edit_base`` is set.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from writeback.kube.images import parse_image
from writeback.kube.jsonpatch import pointer_to
from writeback.kube.paths import lookup
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, Select
from writeback.kube.selectors import parse_selector
from writeback.model import Drift, Op, Unresolved
from writeback.sources.documents import join, under
from writeback.sources.kustomize.model import Generator, LabelEntry, Layer, Origin, Patch, PatchTarget, Step, relative
from writeback.sources.locations import Location, NewPatch, Transform

_CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})


@dataclass(frozen=True, slots=True, kw_only=True)
class _Source:
    file: str
    document: int
    path: FieldPath
    transform: Transform = Transform.VALUE
    key: str | None = None
    inline: FieldPath | None = None
    via: str = ""
    patch: bool = False  # a strategic-merge or JSON 6902 patch (removing it may re-expose an inner value)


def is_image_path(path: FieldPath) -> bool:
    return (
        bool(path) and path[-1] == Key("image") and any(isinstance(s, Key) and s.name in _CONTAINER_LISTS for s in path)
    )


def _matches_target(target: PatchTarget, origin: Origin, step: Step) -> bool:
    import re

    if target.kind and target.kind != origin.kind:
        return False
    if target.group is not None and target.group != origin.group:
        return False
    if target.name and not any(re.fullmatch(target.name, n) for n in (step.name, origin.original_name)):
        return False
    if target.namespace and not re.fullmatch(target.namespace, step.namespace or ""):
        return False
    if origin.manifest is not None:  # kustomize matches both with apimachinery's label selector grammar
        metadata = origin.manifest.data.get("metadata") or {}
        for selector, field in ((target.label_selector, "labels"), (target.annotation_selector, "annotations")):
            values = metadata.get(field) or {}
            if selector and not parse_selector(selector).matches({str(k): str(v) for k, v in values.items()}):
                return False
    return True


def _targets(patch: Patch, origin: Origin, step: Step) -> bool:
    if patch.target is not None:
        return _matches_target(patch.target, origin, step)
    if patch.is_json6902 or not isinstance(patch.data, Mapping):
        return False
    meta = patch.data.get("metadata") or {}
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return (
        patch.data.get("kind") == origin.kind
        and name in (step.name, origin.original_name)
        and (ns is None or ns == step.namespace)
    )


_TEMPLATE_LABELS = (Key("spec"), Key("template"), Key("metadata"), Key("labels"))
_SELECTOR_LABELS = (Key("spec"), Key("selector"), Key("matchLabels"))


def _label_entries(layer: Layer, path: FieldPath) -> list[LabelEntry]:
    if len(path) < 2 or not isinstance(path[-1], Key):
        return []
    key, parent = path[-1].name, path[:-1]
    if parent == (Key("metadata"), Key("labels")):
        return [e for e in layer.labels if e.key == key]
    if parent == _TEMPLATE_LABELS:
        return [e for e in layer.labels if e.key == key and e.templates]
    if parent == _SELECTOR_LABELS:
        return [e for e in layer.labels if e.key == key and e.selectors]
    return []


def _patch_source(patch: Patch, origin: Origin, path: FieldPath) -> _Source | None:
    via = f"patch {patch.file}" if patch.inline is None else f"inline patch in {patch.file}"
    if patch.is_json6902:
        base = origin.manifest.data if origin.manifest is not None else {}
        pointer = pointer_to(base, path)
        for i, op in enumerate(patch.data):
            if isinstance(op, Mapping) and op.get("op") in ("add", "replace") and op.get("path") == pointer:
                return _Source(
                    file=patch.file,
                    document=patch.document,
                    path=(Index(i), Key("value")),
                    inline=patch.inline,
                    via=via,
                    patch=True,
                )
        return None
    if lookup(patch.data, path) is ABSENT:
        return None
    return _Source(file=patch.file, document=patch.document, path=path, inline=patch.inline, via=via, patch=True)


def _generator_source(layer: Layer, gen: Generator, path: FieldPath) -> _Source | None:
    if len(path) != 2 or path[0] not in (Key("data"), Key("binaryData")) or not isinstance(path[1], Key):
        return None
    key = path[1].name
    entry = (Key(gen.list_key), Index(gen.index))
    if any(lit.partition("=")[0] == key for lit in gen.literals):
        return _Source(file=layer.file, document=0, path=entry, transform=Transform.LITERAL, key=key, via="literal")
    for item in gen.files:
        name, eq, rel = item.partition("=")
        if not eq:
            name, rel = posixpath.basename(item), item
        if name == key:
            return _Source(file=join(layer.directory, rel), document=0, path=(), transform=Transform.FILE_CONTENT)
    for env in gen.envs:
        return _Source(file=join(layer.directory, env), document=0, path=(), transform=Transform.ENV_LINE, key=key)
    return None


def _sources(origin: Origin, path: FieldPath, files: Mapping[str, str]) -> list[_Source]:
    """Everything that sets ``path`` for ``origin``, outermost (winning) first."""
    images_in = _image_inputs(origin, path) if is_image_path(path) else []
    out: list[_Source] = []
    for idx in range(len(origin.steps) - 1, -1, -1):
        step = origin.steps[idx]
        layer = step.layer
        if images_in and images_in[idx]:
            name = parse_image(images_in[idx] or "").name
            for entry in reversed(layer.images):
                if entry.name == name:
                    out.append(
                        _Source(
                            file=layer.file,
                            document=0,
                            path=(Key("images"), Index(entry.index)),
                            transform=Transform.IMAGE_ENTRY,
                            via="kustomize images entry",
                        )
                    )
        for label in _label_entries(layer, path):
            out.append(_Source(file=layer.file, document=0, path=label.path, via="kustomize labels"))
        if path == (Key("spec"), Key("replicas")):
            for rep in layer.replicas:
                if rep.name in (step.name, origin.original_name):
                    p = (Key("replicas"), Index(rep.index), Key("count"))
                    out.append(_Source(file=layer.file, document=0, path=p, via="kustomize replicas entry"))
        for patch in reversed(layer.patches):
            if _targets(patch, origin, step):
                found = _patch_source(patch, origin, path)
                if found is not None:
                    out.append(found)
        for glayer, gen in reversed(origin.generators):
            if glayer is layer:
                gsrc = _generator_source(layer, gen, path)
                if gsrc is not None and (gsrc.transform is not Transform.ENV_LINE or _env_has(files, gsrc)):
                    out.append(gsrc)
    m = origin.manifest
    if m is not None and lookup(m.data, path) is not ABSENT:
        out.append(_Source(file=m.file, document=m.document, path=m.prefix + path, via="manifest"))
    return out


def _env_has(files: Mapping[str, str], src: _Source) -> bool:
    text = files.get(src.file, "")
    return any(line.partition("=")[0].strip() == src.key for line in text.splitlines())


def _image_inputs(origin: Origin, path: FieldPath) -> list[str | None]:
    """The image string each layer's images transformer sees."""
    value = lookup(origin.manifest.data, path) if origin.manifest is not None else ABSENT
    out: list[str | None] = []
    for step in origin.steps:
        for patch in step.layer.patches:
            if _targets(patch, origin, step) and not patch.is_json6902:
                v = lookup(patch.data, path)
                if v is not ABSENT:
                    value = v
        current = value if isinstance(value, str) else None
        out.append(current)
        if current is None:
            continue
        img = parse_image(current)
        for entry in step.layer.images:
            if entry.name == img.name:
                name = entry.new_name or img.name
                tag = entry.new_tag or img.tag
                value = f"{name}:{tag}" if tag else name
                if entry.digest:
                    value = f"{name}@{entry.digest}"
    return out


def _root_patch(origin: Origin) -> Patch | None:
    step = origin.steps[-1]
    for patch in reversed(step.layer.patches):
        if patch.inline is None and not patch.is_json6902 and patch.target is None and _targets(patch, origin, step):
            return patch
    return None


def _new_patch(origin: Origin) -> NewPatch:
    step = origin.steps[-1]
    layer = step.layer
    file = join(layer.directory, f"writeback-{origin.kind.lower()}-{step.name}.yaml")
    api = origin.manifest.data.get("apiVersion") if origin.manifest is not None else origin.api_version
    text = f"apiVersion: {api}\nkind: {origin.kind}\nmetadata:\n  name: {step.name}\n"
    if step.namespace:
        text += f"  namespace: {step.namespace}\n"
    return NewPatch(kustomization=layer.file, file=file, reference=relative(layer.directory, file), text=text)


def _location(drift: Drift, src: _Source, transform: Transform | None = None) -> Location:
    return Location(
        drift=drift,
        file=src.file,
        document=src.document,
        path=src.path,
        transform=transform or src.transform,
        key=src.key,
        inline=src.inline,
        via=src.via,
    )


def _generator_target(drift: Drift, origin: Origin, key: str, *, own: Callable[[str], bool]) -> Location:
    """Where a new data key of a generated ConfigMap goes: the outermost own generator, else a merge entry."""
    for layer, gen in reversed(origin.generators):
        if not own(layer.file):
            continue
        if gen.envs:
            env = join(layer.directory, gen.envs[-1])
            return Location(
                drift=drift, file=env, document=0, path=(), transform=Transform.ENV_LINE, key=key, via="env file"
            )
        path: FieldPath = (Key(gen.list_key), Index(gen.index))
        return Location(drift=drift, file=layer.file, document=0, path=path, transform=Transform.LITERAL, key=key)
    root = origin.steps[-1].layer
    path = (Key("configMapGenerator"), Select((("name", origin.generators[0][1].name),)))
    return Location(
        drift=drift,
        file=root.file,
        document=0,
        path=path,
        transform=Transform.LITERAL,
        key=key,
        via="overlay generator",
    )


def locate_in_overlay(
    *, drift: Drift, origin: Origin, root: str, edit_base: bool, files: Mapping[str, str]
) -> Location | Unresolved:
    """Where ``drift`` should be written for a resource that the overlay at ``root`` produces."""
    srcs = _sources(origin, drift.path, files)
    first = srcs[0] if srcs else None

    def own(src: _Source) -> bool:
        return edit_base or under(src.file, root)

    if origin.generators:
        if origin.kind != "ConfigMap":
            return Unresolved(resource=drift.resource, path=drift.path, reason="generated Secret: report-only")
        if first is not None and own(first):
            return _location(drift, first)
        if drift.op is Op.REMOVE or len(drift.path) != 2 or not isinstance(drift.path[1], Key):
            reason = "generated ConfigMap field set in a shared base; cannot be changed from the overlay"
            return Unresolved(resource=drift.resource, path=drift.path, reason=reason)
        return _generator_target(drift, origin, drift.path[1].name, own=lambda f: edit_base or under(f, root))
    if drift.op is Op.REMOVE:
        if first is None:
            return Unresolved(resource=drift.resource, path=drift.path, reason="no source sets this field")
        if own(first):
            directive = first.patch and len(srcs) > 1 and first.inline is None
            return _location(drift, first, Transform.DELETE_DIRECTIVE if directive else None)
    elif first is not None and own(first):
        return _location(drift, first)
    elif first is None and origin.manifest is not None and own(_Source(file=origin.manifest.file, document=0, path=())):
        m = origin.manifest
        return Location(drift=drift, file=m.file, document=m.document, path=m.prefix + drift.path, via="manifest")
    transform = Transform.DELETE_DIRECTIVE if drift.op is Op.REMOVE else Transform.VALUE
    patch = _root_patch(origin)
    if patch is not None:
        return Location(
            drift=drift,
            file=patch.file,
            document=patch.document,
            path=drift.path,
            transform=transform,
            via="overlay patch",
        )
    new = _new_patch(origin)
    return Location(
        drift=drift,
        file=new.file,
        document=0,
        path=drift.path,
        transform=transform,
        new_patch=new,
        via="new overlay patch",
    )
