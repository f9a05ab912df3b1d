"""YAML documents of repo files as plain data, and field-path lookups into them. Pure."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from writeback.kube.manifests import list_items
from writeback.kube.pathtypes import FieldPath, Index, Key
from writeback.kube.refs import group_of
from writeback.yaml.reading import load_all

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
        name = meta.get("name") if isinstance(meta, Mapping) else None
        return (group, str(self.data.get("kind") or ""), None if ns is None else str(ns), str(name or ""))


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
    for index, data in enumerate(documents(text, source=file)):
        if not isinstance(data, Mapping) or "kind" not in data:
            continue
        for i, item in list_items(data):
            if isinstance(item, Mapping):
                prefix: FieldPath = () if i is None else (Key("items"), Index(i))
                yield Manifest(file=file, document=index, prefix=prefix, data=item)
