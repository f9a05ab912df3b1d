"""A provenance model of a Kustomize overlay, read from the repo texts. Pure.

This does not render (the real ``kustomize build`` does that, see ``writeback.adapters.kustomize``): it records,
for every resource the overlay produces, the file that declares it and every kustomization layer it passes
through (names, namespaces, images, replicas, patches and generators), so that the source of a field is known.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from writeback.errors import PatchError
from writeback.kube.manifests import KUSTOMIZATION_FILES
from writeback.kube.pathtypes import FieldPath, Index, Key
from writeback.kube.refs import Identity
from writeback.sources.documents import Manifest, documents, join, manifests_in, normdir

CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PersistentVolume",
        "StorageClass",
        "PriorityClass",
        "IngressClass",
        "RuntimeClass",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "APIService",
    }
)


class KustomizeSourceError(PatchError):
    """A kustomization that cannot be resolved; names the file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageEntry:
    index: int
    name: str
    new_name: str | None = None
    new_tag: str | None = None
    digest: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaEntry:
    index: int
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelEntry:
    """A label a layer sets: ``commonLabels`` (everywhere) or a ``labels:`` pair (templates/selectors opt-in)."""

    key: str
    path: FieldPath  # of the value in the kustomization document
    templates: bool = False
    selectors: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PatchTarget:
    group: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    label_selector: str | None = None
    annotation_selector: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Patch:
    """One patch document: strategic-merge (a mapping) or JSON 6902 (a list of operations)."""

    file: str  # the patch file, or the kustomization file for an inline patch
    document: int
    data: Any
    target: PatchTarget | None = None
    inline: FieldPath | None = None  # path of the inline patch string in the kustomization document

    @property
    def is_json6902(self) -> bool:
        return isinstance(self.data, list)


@dataclass(frozen=True, slots=True, kw_only=True)
class Generator:
    kind: str  # ConfigMap | Secret
    index: int  # in configMapGenerator / secretGenerator
    name: str
    namespace: str | None = None
    behavior: str = "create"
    literals: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    envs: tuple[str, ...] = ()
    hashed: bool = True

    @property
    def list_key(self) -> str:
        return "configMapGenerator" if self.kind == "ConfigMap" else "secretGenerator"


@dataclass(frozen=True, slots=True, kw_only=True)
class Layer:
    directory: str
    file: str  # the kustomization file
    namespace: str | None = None
    prefix: str = ""
    suffix: str = ""
    images: tuple[ImageEntry, ...] = ()
    replicas: tuple[ReplicaEntry, ...] = ()
    labels: tuple[LabelEntry, ...] = ()
    patches: tuple[Patch, ...] = ()  # in application order (patchesStrategicMerge, patches, patchesJson6902)
    generators: tuple[Generator, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """A layer a resource passes through, with its name and namespace as that layer receives it."""

    layer: Layer
    name: str
    namespace: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Origin:
    """A resource the overlay produces: its declaring document (or generator) and its layers, inner first."""

    group: str
    kind: str
    api_version: str
    name: str  # final (without a generator's hash suffix)
    namespace: str | None
    original_name: str
    manifest: Manifest | None = None
    generators: tuple[tuple[Layer, Generator], ...] = ()  # inner first; empty unless generated
    steps: tuple[Step, ...] = ()

    @property
    def hashed(self) -> bool:
        return any(g.hashed for _, g in self.generators)

    def matches(self, identity: Identity, *, default_namespace: str | None) -> bool:
        group, kind, namespace, name = identity
        if (group, kind) != (self.group, self.kind):
            return False
        ns = self.namespace if self.namespace is not None else default_namespace
        if ns is not None and kind not in CLUSTER_SCOPED and (namespace or "") != ns:
            return False
        if name == self.name:
            return True
        return self.hashed and re.fullmatch(re.escape(self.name) + r"-[a-z0-9]{6,12}", name) is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Tree:
    root: Layer
    origins: tuple[Origin, ...] = ()
    notes: tuple[str, ...] = field(default=())


def find_kustomization(files: Mapping[str, str], directory: str) -> str | None:
    for name in KUSTOMIZATION_FILES:
        path = join(directory, name)
        if path in files:
            return path
    return None


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _list(data: Mapping[str, Any], key: str, file: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise KustomizeSourceError(f"{file}: {key} must be a list")
    return value


def _target(value: Any) -> PatchTarget | None:
    if not isinstance(value, Mapping):
        return None
    return PatchTarget(
        group=_str(value.get("group")),
        kind=_str(value.get("kind")),
        name=_str(value.get("name")),
        namespace=_str(value.get("namespace")),
        label_selector=_str(value.get("labelSelector")),
        annotation_selector=_str(value.get("annotationSelector")),
    )


def _patch_docs(files: Mapping[str, str], path: str, *, by: str) -> list[tuple[int, Any]]:
    if path not in files:
        raise KustomizeSourceError(f"{by}: patch file {path} does not exist")
    return [(i, d) for i, d in enumerate(documents(files[path], source=path)) if d is not None]


def _patches(files: Mapping[str, str], data: Mapping[str, Any], directory: str, kfile: str) -> list[Patch]:
    out: list[Patch] = []
    for entry in _list(data, "patchesStrategicMerge", kfile):
        if isinstance(entry, str) and "\n" not in entry:
            path = join(directory, entry)
            out += [Patch(file=path, document=i, data=d) for i, d in _patch_docs(files, path, by=kfile)]
    for k, entry in enumerate(_list(data, "patches", kfile)):
        if not isinstance(entry, Mapping):
            continue
        target = _target(entry.get("target"))
        if isinstance(entry.get("path"), str):
            path = join(directory, entry["path"])
            out += [Patch(file=path, document=i, data=d, target=target) for i, d in _patch_docs(files, path, by=kfile)]
        elif isinstance(entry.get("patch"), str):
            for i, d in enumerate(documents(entry["patch"], source=f"{kfile} patches[{k}].patch")):
                if d is not None:
                    inline = (Key("patches"), Index(k), Key("patch"))
                    out.append(Patch(file=kfile, document=i, data=d, target=target, inline=inline))
    for entry in _list(data, "patchesJson6902", kfile):
        if isinstance(entry, Mapping) and isinstance(entry.get("path"), str):
            path = join(directory, entry["path"])
            target = _target(entry.get("target"))
            out += [Patch(file=path, document=i, data=d, target=target) for i, d in _patch_docs(files, path, by=kfile)]
    return out


def _generators(data: Mapping[str, Any], kfile: str) -> list[Generator]:
    out: list[Generator] = []
    options = data.get("generatorOptions") or {}
    global_hash = not (isinstance(options, Mapping) and options.get("disableNameSuffixHash"))
    for key, kind in (("configMapGenerator", "ConfigMap"), ("secretGenerator", "Secret")):
        for index, entry in enumerate(_list(data, key, kfile)):
            if not isinstance(entry, Mapping) or not entry.get("name"):
                raise KustomizeSourceError(f"{kfile}: {key}[{index}] has no name")
            opts = entry.get("options") or {}
            hashed = global_hash and not (isinstance(opts, Mapping) and opts.get("disableNameSuffixHash"))
            out.append(
                Generator(
                    kind=kind,
                    index=index,
                    name=str(entry["name"]),
                    namespace=_str(entry.get("namespace")),
                    behavior=str(entry.get("behavior") or "create"),
                    literals=tuple(str(x) for x in entry.get("literals") or ()),
                    files=tuple(str(x) for x in entry.get("files") or ()),
                    envs=tuple(str(x) for x in (entry.get("envs") or ()))
                    + ((str(entry["env"]),) if entry.get("env") else ()),
                    hashed=hashed,
                )
            )
    return out


def _labels(data: Mapping[str, Any], kfile: str) -> list[LabelEntry]:
    out: list[LabelEntry] = []
    common = data.get("commonLabels")
    if isinstance(common, Mapping):
        out += [
            LabelEntry(key=str(k), path=(Key("commonLabels"), Key(str(k))), templates=True, selectors=True)
            for k in common
        ]
    for i, entry in enumerate(_list(data, "labels", kfile)):
        pairs = entry.get("pairs") if isinstance(entry, Mapping) else None
        if not isinstance(pairs, Mapping):
            continue
        sel = bool(entry.get("includeSelectors"))
        tpl = bool(entry.get("includeTemplates")) or sel
        out += [
            LabelEntry(
                key=str(k), path=(Key("labels"), Index(i), Key("pairs"), Key(str(k))), templates=tpl, selectors=sel
            )
            for k in pairs
        ]
    return out


def _layer(files: Mapping[str, str], directory: str, kfile: str, data: Mapping[str, Any]) -> Layer:
    images = [
        ImageEntry(
            index=i,
            name=str(e.get("name")),
            new_name=_str(e.get("newName")),
            new_tag=_str(e.get("newTag")),
            digest=_str(e.get("digest")),
        )
        for i, e in enumerate(_list(data, "images", kfile))
        if isinstance(e, Mapping) and e.get("name")
    ]
    replicas = [
        ReplicaEntry(index=i, name=str(e["name"]))
        for i, e in enumerate(_list(data, "replicas", kfile))
        if isinstance(e, Mapping) and e.get("name")
    ]
    return Layer(
        directory=directory,
        file=kfile,
        namespace=_str(data.get("namespace")),
        prefix=str(data.get("namePrefix") or ""),
        suffix=str(data.get("nameSuffix") or ""),
        images=tuple(images),
        replicas=tuple(replicas),
        labels=tuple(_labels(data, kfile)),
        patches=tuple(_patches(files, data, directory, kfile)),
        generators=tuple(_generators(data, kfile)),
    )


def _origin(m: Manifest) -> Origin:
    group, kind, namespace, name = m.identity
    api = str(m.data.get("apiVersion") or "")
    return Origin(
        group=group, kind=kind, api_version=api, name=name, namespace=namespace, original_name=name, manifest=m
    )


def _through(origin: Origin, layer: Layer) -> Origin:
    """The origin after passing ``layer``'s namespace and name transforms."""
    step = Step(layer=layer, name=origin.name, namespace=origin.namespace)
    ns = origin.namespace
    if layer.namespace and origin.kind not in CLUSTER_SCOPED:
        ns = layer.namespace
    name = origin.name
    if origin.kind not in ("CustomResourceDefinition", "Namespace"):
        name = f"{layer.prefix}{name}{layer.suffix}"
    return replace(origin, name=name, namespace=ns, steps=(*origin.steps, step))


def _resources(
    files: Mapping[str, str], directory: str, entry: str, kfile: str, stack: tuple[str, ...]
) -> list[Origin]:
    if "://" in entry or entry.startswith(("github.com/", "git@")):
        raise KustomizeSourceError(f"{kfile}: remote resource {entry!r} cannot be resolved offline")
    path = join(directory, entry)
    if path in files:
        return [_origin(m) for m in manifests_in(files[path], file=path)]
    if find_kustomization(files, path) is not None:
        return list(_build(files, path, stack).origins)
    raise KustomizeSourceError(f"{kfile}: resource {entry!r} not found ({path} is neither a file nor a kustomization)")


def _generate(origins: list[Origin], layer: Layer) -> list[Origin]:
    out = list(origins)
    for gen in layer.generators:
        if gen.behavior in ("merge", "replace"):
            for i, o in enumerate(out):
                if o.kind == gen.kind and o.generators and gen.name in (o.name, o.original_name):
                    out[i] = replace(o, generators=(*o.generators, (layer, gen)))
            continue
        out.append(
            Origin(
                group="",
                kind=gen.kind,
                api_version="v1",
                name=gen.name,
                namespace=gen.namespace,
                original_name=gen.name,
                generators=((layer, gen),),
            )
        )
    return out


def _build(files: Mapping[str, str], directory: str, stack: tuple[str, ...] = ()) -> Tree:
    directory = normdir(directory)
    if directory in stack:
        raise KustomizeSourceError(f"kustomization cycle: {' -> '.join((*stack, directory))}")
    kfile = find_kustomization(files, directory)
    if kfile is None:
        raise KustomizeSourceError(f"{directory or '.'}: no kustomization.yaml, kustomization.yml or Kustomization")
    docs = documents(files[kfile], source=kfile)
    data = docs[0] if docs else None
    if not isinstance(data, Mapping):
        raise KustomizeSourceError(f"{kfile}: a kustomization must be a mapping")
    layer = _layer(files, directory, kfile, data)
    inner = (*stack, directory)
    origins: list[Origin] = []
    for key in ("resources", "bases"):
        for entry in _list(data, key, kfile):
            origins += _resources(files, directory, str(entry), kfile, inner)
    for entry in _list(data, "components", kfile):
        comp = _build(files, join(directory, str(entry)), inner)  # its own resources already passed it
        origins = [_through(o, comp.root) for o in origins] + list(comp.origins)
    origins = _generate(origins, layer)
    return Tree(root=layer, origins=tuple(_through(o, layer) for o in origins))


def load_tree(files: Mapping[str, str], directory: str) -> Tree:
    """The provenance tree of the kustomization in ``directory``; raises KustomizeSourceError."""
    return _build(files, directory)


def relative(from_dir: str, path: str) -> str:
    return posixpath.relpath(path, from_dir or ".")
