"""YAML documents of repo files as plain data, and field-path lookups into them. Pure."""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.kube.manifests import list_items
from writeback.kube.pathtypes import FieldPath, Index, Key
from writeback.kube.refs import group_of
from writeback.yaml.reading import load_all, scoped_summary

YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    """One resource declared in a repo file (a document, or one item of a List kind)."""

    file: str
    document: int
    prefix: FieldPath  # () for a document, ("items", Index(i)) for a List item
    data: Mapping[str, Any]

    @property
    def identity(self) -> tuple[str, str, str | None, str]:
        meta = self.data.get("metadata") or {}
        api = str(self.data.get("apiVersion") or "")
        group = group_of(api)
        ns = meta.get("namespace") if isinstance(meta, Mapping) else None
        return (group, str(self.data.get("kind") or ""), None if ns is None else str(ns), _name_of(meta))


def _name_of(meta: Any) -> str:
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return str(name or "")


def documents(text: str, *, source: str) -> list[Any]:
    """The data of each YAML document in ``text``; raises YamlError (a PatchError) on bad YAML.

    Parsed once: the same text was usually read by the drift step already (see writeback.yaml.reading).
    The data is shared with the parse cache: do not modify it.
    """
    return load_all(text, source=source)


def is_yaml(path: str) -> bool:
    return path.endswith(YAML_SUFFIXES)


def under(path: str, directory: str) -> bool:
    """Is ``path`` inside ``directory`` (repo-relative, "." or "" is the root)?"""
    d = normdir(directory)
    return d == "" or path == d or path.startswith(d + "/")


def normdir(directory: str) -> str:
    d = posixpath.normpath(directory or ".")
    return "" if d == "." else d.strip("/")


def join(directory: str, rel: str) -> str:
    return normdir(posixpath.join(directory or ".", rel))


def manifests_in(text: str, *, file: str) -> Iterator[Manifest]:
    """Resources declared in one file; List kinds are expanded into their items."""
    return _manifests(documents(text, source=file), file=file)


def _manifests(docs: Sequence[Any], *, file: str) -> Iterator[Manifest]:
    for index, data in enumerate(docs):
        if not isinstance(data, Mapping) or "kind" not in data:
            continue
        for i, item in list_items(data):
            if isinstance(item, Mapping):
                prefix: FieldPath = () if i is None else (Key("items"), Index(i))
                yield Manifest(file=file, document=index, prefix=prefix, data=item)


def declared_names(docs: Sequence[Any]) -> tuple[str, ...]:
    """The name of each resource :func:`manifests_in` finds in these documents (a file's parsed documents): what
    a one-shot ``plan`` keeps of each file it parsed (``yaml.reading.parse_scope``'s summary), so that locating
    parses again only the files that declare a drifted object's name."""
    return tuple(_name_of(m.data.get("metadata")) for m in _manifests(docs, file=""))


def may_declare(text: str, *, file: str, names: Collection[str]) -> bool:
    """Whether ``text`` (read as ``file``) may declare a resource of one of these names: False only when this run
    parsed it already and found none of them (:func:`declared_names`)."""
    kept = scoped_summary(text, source=file)
    return not isinstance(kept, tuple) or any(n in names for n in kept)
