"""Node trees with positions (ruamel.yaml round-trip parser) and their plain-data readings.

``compose`` parses a text once (cached) into documents whose nodes carry character
offsets. ``construct`` turns a node into plain Python data as YAML 1.2 (ruamel) or
YAML 1.1 (``writeback.yaml.loaders.compose11``: PyYAML, plus ``y``/``n`` as booleans like go-yaml v2) reads it.
The loaders and resolvers are ``writeback.yaml.loaders``'; the fast reading that verifies is ``yaml.reading``'s.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.composer import Composer
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent

from writeback.errors import yaml_error_position
from writeback.yaml.constructing import freeze, scalar_value
from writeback.yaml.edit.errors import YamlSyntaxError
from writeback.yaml.loaders import MERGE_TAG, STR_TAG, compose11, ruamel_yaml
from writeback.yaml.reading import read_fast

__all__ = [
    "MERGE_TAG",
    "AliasRef",
    "ParsedDoc",
    "compose",
    "compose11",
    "construct",
    "is_str_tag",
    "read_fast",
    "same",
    "tag_of",
    "walk_nodes",
]


@dataclass(frozen=True, slots=True)
class AliasRef:
    """An alias occurrence (``*name``): where it is written, and the anchored node it refers to."""

    target: Any
    start: int
    end: int

    id = "alias"


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedDoc:
    index: int
    root: Any  # a ruamel node, or AliasRef
    start: int
    end: int


class _RecordingComposer(Composer):
    """Records document start/end events and keeps alias occurrences as :class:`AliasRef`."""

    def compose_document(self) -> Any:
        self.anchors = {}
        start = self.parser.get_event()
        node = self.compose_node(None, None)
        end = self.parser.get_event()
        self.loader.wb_documents.append((start, node, end))
        return node

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.parser.check_event(AliasEvent):
            event = self.parser.get_event()
            if event.anchor not in self.anchors:
                raise MarkedYAMLError(None, None, f"found undefined alias {event.anchor!r}", event.start_mark)
            return AliasRef(self.anchors[event.anchor], event.start_mark.index, event.end_mark.index)
        return super().compose_node(parent, index)


def _syntax_error(err: Exception, *, source: str) -> YamlSyntaxError:
    mark, problem = yaml_error_position(err)
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
    where = f"{source}:{line}:{column}" if mark is not None else source
    return YamlSyntaxError(
        f"{where}: not valid YAML: {problem}", source=source, problem=problem, line=line, column=column
    )


@functools.lru_cache(maxsize=16)
def _compose_cached(text: str) -> tuple[ParsedDoc, ...] | Exception:
    with ruamel_yaml(typ="rt") as loader:
        loader.Composer = _RecordingComposer
        loader.wb_documents = []
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for _ in loader.compose_all(text):
                    pass
        except (YAMLError, ValueError) as e:
            return e
        return tuple(ParsedDoc(index=i, root=node, start=start.start_mark.index, end=end.end_mark.index)
                     for i, (start, node, end) in enumerate(loader.wb_documents))  # fmt: skip


def compose(text: str, *, source: str) -> tuple[ParsedDoc, ...]:
    """All documents of ``text`` with positioned nodes; raises :class:`YamlSyntaxError`."""
    result = _compose_cached(text)
    if isinstance(result, Exception):
        raise _syntax_error(result, source=source)
    return result


# ---------------------------------------------------------------- construction


def _kind(node: Any) -> str:
    return str(node.id)


def construct(node: Any, *, v11: bool = False, _depth: int = 0) -> Any:
    """Plain data (dict/list/scalars) for a ruamel or PyYAML node."""
    if _depth > 200:
        raise RecursionError("YAML structure too deep or recursive")
    if isinstance(node, AliasRef):
        node = node.target
    kind = _kind(node)
    tag = str(node.tag)
    if kind == "scalar":
        text = node.value
        if node.style == ">" and "\a" in text:
            text = text.replace("\a", "")  # ruamel's round-trip fold markers
        return scalar_value(tag, text, v11=v11)
    if kind == "sequence":
        return [construct(item, v11=v11, _depth=_depth + 1) for item in node.value]
    merged: dict[Any, Any] = {}
    own: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        if tag_of(key_node) == MERGE_TAG:
            sources = value_node.target if isinstance(value_node, AliasRef) else value_node
            items = sources.value if _kind(sources) == "sequence" else [sources]
            for src in items:
                data = construct(src, v11=v11, _depth=_depth + 1)
                if isinstance(data, dict):
                    for k, v in data.items():
                        merged.setdefault(k, v)
            continue
        key = freeze(construct(key_node, v11=v11, _depth=_depth + 1))
        own[key] = construct(value_node, v11=v11, _depth=_depth + 1)
    if not merged:
        return own
    merged.update(own)
    return merged


def same(a: Any, b: Any) -> bool:
    """Strict equality: ``1``, ``1.0`` and ``True`` differ; NaN equals NaN; key order is ignored."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def walk_nodes(node: Any) -> Iterator[Any]:
    """Every node below ``node`` (aliases are not followed)."""
    yield node
    if isinstance(node, AliasRef):
        return
    if _kind(node) == "sequence":
        for item in node.value:
            yield from walk_nodes(item)
    elif _kind(node) == "mapping":
        for k, v in node.value:
            yield from walk_nodes(k)
            yield from walk_nodes(v)


def tag_of(node: Any) -> str:
    return str((node.target if isinstance(node, AliasRef) else node).tag)


def is_str_tag(tag: Any) -> bool:
    return str(tag) == STR_TAG
