"""Facts about Kubernetes manifests that every layer shares: List expansion, kustomization file names. Pure.

A ``kind: List`` document (and any ``*List`` kind, as kubectl reads them) declares the objects in its ``items``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["KUSTOMIZATION_FILES", "expand_lists", "list_items"]

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")  # what kustomize looks for


def list_items(doc: Mapping[str, Any]) -> Iterator[tuple[int | None, Any]]:
    """A document, or the items of a List kind with their index in ``items`` (``None`` for a plain document)."""
    items = doc.get("items")
    if str(doc.get("kind", "")).endswith("List") and isinstance(items, list):
        yield from enumerate(items)
    else:
        yield None, doc


def expand_lists(docs: Iterable[Any]) -> Iterator[Mapping[str, Any]]:
    """The objects of parsed documents: mappings, with List kinds replaced by their mapping items."""
    for doc in docs:
        if isinstance(doc, Mapping):
            for _, item in list_items(doc):
                if isinstance(item, Mapping):
                    yield item
