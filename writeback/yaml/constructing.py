"""YAML nodes to plain data, within bounds: what ``writeback.yaml.reading`` builds of each composed document.

- nesting deeper than :data:`MAX_DEPTH` levels is refused;
- aliases may add at most :data:`MAX_ALIAS_GROWTH` units (a node, or a character of a scalar) to a document beyond
  what it holds without them, measured on the composed graph (:class:`Measure`) before anything is constructed;
- scalars resolve by YAML 1.2 (or 1.1 after a ``%YAML 1.1`` directive, :func:`scalar_value`); merge keys are
  applied; a mapping or sequence used as a key becomes a hashable :class:`ComplexKey`.

Pure.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from yaml.nodes import Node, ScalarNode, SequenceNode

from writeback.errors import YamlError
from writeback.yaml.loaders import MERGE_TAG, STR_TAG

__all__ = ["MAX_ALIAS_GROWTH", "MAX_DEPTH", "ComplexKey", "Measure", "construct", "freeze", "refused",
           "scalar_value", "too_deep"]  # fmt: skip

MAX_DEPTH = 200  # nesting levels, aliases followed; Kubernetes objects nest a few dozen at most
MAX_ALIAS_GROWTH = 1_000_000  # nodes + scalar characters that aliases may add to one document


# ---------------------------------------------------------------- bounds on the composed graph


class Measure:
    """Depth and alias growth of one document's node graph (each distinct node is walked once)."""

    def __init__(self, *, source: str) -> None:
        self.source = source
        self.sizes: dict[int, tuple[int, int] | None] = {}  # id -> (expanded size, height); None: being walked
        self.own = 0  # the size of the distinct nodes walked so far
        self.expanded = 0  # the size of everything walked so far, aliases expanded

    def check(self, root: Node) -> None:
        self._size(root, 1)

    def _size(self, node: Node, depth: int) -> tuple[int, int]:
        key = id(node)
        if key in self.sizes:  # an alias (or a merge key's source): counted again, not walked again
            known = self.sizes[key]
            if known is None:
                raise refused(self.source, "a YAML alias refers to a node that contains it")
            if depth + known[1] - 1 > MAX_DEPTH:
                raise too_deep(self.source)
            self.expanded += known[0]
            if self.expanded - self.own > MAX_ALIAS_GROWTH:  # what is still to walk cannot make up for it
                raise refused(
                    self.source,
                    f"YAML aliases expand this document by more than {MAX_ALIAS_GROWTH:,} nodes and characters "
                    "(a YAML bomb?); refused without expanding it",
                )
            return known
        if depth > MAX_DEPTH:
            raise too_deep(self.source)
        self.sizes[key] = None
        size, height = (1 + len(node.value), 1) if isinstance(node, ScalarNode) else (1, 1)
        self.own += size
        self.expanded += size
        if not isinstance(node, ScalarNode):
            children = node.value if isinstance(node, SequenceNode) else [n for kv in node.value for n in kv]
            for child in children:
                s, h = self._size(child, depth + 1)
                size += s
                height = max(height, h + 1)
        self.sizes[key] = (size, height)
        return size, height


def too_deep(source: str) -> YamlError:
    return refused(source, f"YAML nested deeper than {MAX_DEPTH} levels")


def refused(source: str, problem: str) -> YamlError:
    """A text beyond a loading limit (size, depth, aliases): refused, whether or not it is valid YAML."""
    return YamlError(f"{source}: {problem}", source=source, problem=problem, limit=True)


# ---------------------------------------------------------------- construction (plain data)


def _sexagesimal(text: str) -> float:
    total = 0.0
    for part in text.split(":"):
        total = total * 60 + float(part)
    return total


def _int(text: str, *, v11: bool) -> int:
    t = text.replace("_", "")
    sign = -1 if t.startswith("-") else 1
    t = t.lstrip("+-")
    low = t.lower()
    if low.startswith("0b"):
        return sign * int(t[2:], 2)
    if low.startswith("0x"):
        return sign * int(t[2:], 16)
    if low.startswith("0o"):
        return sign * int(t[2:], 8)
    if v11 and ":" in t:
        return sign * int(_sexagesimal(t))
    if v11 and len(t) > 1 and t.startswith("0"):
        return sign * int(t, 8)
    return sign * int(t, 10)


def _float(text: str, *, v11: bool) -> float:
    t = text.replace("_", "").lower()
    if t.endswith(".inf"):
        return -math.inf if t.startswith("-") else math.inf
    if t.endswith(".nan"):
        return math.nan
    if v11 and ":" in t:
        sign = -1.0 if t.startswith("-") else 1.0
        return sign * _sexagesimal(t.lstrip("+-"))
    return float(t)


def scalar_value(tag: str, text: str, *, v11: bool = False) -> Any:
    """The plain value of a scalar with a resolved ``tag``. Timestamps and unknown tags stay text."""
    kind = tag.rpartition(":")[2]
    try:
        if kind == "null":
            return None
        if kind == "bool":
            return text.lower() in ("true", "yes", "on", "y")
        if kind == "int":
            return _int(text, v11=v11)
        if kind == "float":
            return _float(text, v11=v11)
    except ValueError:
        return text
    return text


class ComplexKey(tuple[Any, ...]):
    """A hashable stand-in for a mapping or sequence used as a mapping key (``{{ x }}: ...``)."""


def freeze(value: Any) -> Any:
    """A mapping or sequence as a hashable ``ComplexKey`` (a YAML key that is not a scalar)."""
    if isinstance(value, dict):
        return ComplexKey((k, freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return ComplexKey(freeze(v) for v in value)
    return value


# Strings up to this length are shared between documents (``sys.intern``): a repo repeats its keys (``metadata``,
# ``name``, ``containerPort``) and many values (``v1``, ``TCP``) in every object, and one copy of each halves what its
# parsed objects hold (issue 23: 3.8 to 2.1 KiB per object in a 10k-object repo). Longer texts are left as read.
_SHARED_TEXT = 128


def _scalar(tag: str, text: str) -> Any:
    """The value of a scalar with a resolved tag (YAML 1.2); timestamps, unknown tags and unreadable numbers stay
    text (short texts shared: ``_SHARED_TEXT``). Local tags (``!!int`` written as ``!<...>``, ``!int``) read like
    ruamel.yaml: by their last part."""
    if tag == STR_TAG:
        return sys.intern(text) if len(text) <= _SHARED_TEXT else text
    return scalar_value(tag, text)


def construct(node: Node, depth: int, source: str) -> Any:
    if depth > MAX_DEPTH:
        raise too_deep(source)
    kind = type(node)
    if kind is ScalarNode:
        return _scalar(node.tag, node.value)
    if kind is SequenceNode:
        return [construct(item, depth + 1, source) for item in node.value]
    # a mapping: its scalar keys and values read here, not one call each (half of a manifest's nodes are scalars)
    inline = depth < MAX_DEPTH  # a scalar one level down is still within the bound
    merged: dict[Any, Any] | None = None
    own: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        tag = key_node.tag
        if tag == MERGE_TAG:
            sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            merged = {} if merged is None else merged
            for src in sources:
                data = construct(src, depth + 1, source)
                if isinstance(data, dict):
                    for k, v in data.items():
                        merged.setdefault(k, v)
            continue
        if type(key_node) is ScalarNode:
            key = _scalar(tag, key_node.value)
        else:
            key = freeze(construct(key_node, depth + 1, source))
        if inline and type(value_node) is ScalarNode:
            own[key] = _scalar(value_node.tag, value_node.value)
        else:
            own[key] = construct(value_node, depth + 1, source)
    if not merged:
        return own
    merged.update(own)
    return merged
