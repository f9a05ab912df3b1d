"""Node trees with positions (ruamel.yaml round-trip parser) and their plain-data readings.

``compose`` parses a text once (cached) into documents whose nodes carry character
offsets. ``construct`` turns a node into plain Python data as YAML 1.2 (ruamel) or
YAML 1.1 (PyYAML, plus ``y``/``n`` as booleans like go-yaml v2) reads it.
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml as pyyaml
from ruamel.yaml import YAML
from ruamel.yaml.composer import Composer
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent
from ruamel.yaml.nodes import ScalarNode as RuamelScalarNode
from ruamel.yaml.resolver import VersionedResolver

from writeback.errors import yaml_error_position
from writeback.yaml.edit.errors import YamlSyntaxError
from writeback.yaml.reading import freeze, scalar_value

MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"


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
    loader: Any = YAML(typ="rt")
    loader.Composer = _RecordingComposer
    loader.wb_documents = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in loader.compose_all(text):
                pass
    except (YAMLError, ValueError) as e:
        return e
    docs = []
    for i, (start, node, end) in enumerate(loader.wb_documents):
        docs.append(ParsedDoc(index=i, root=node, start=start.start_mark.index, end=end.end_mark.index))
    return tuple(docs)


def compose(text: str, *, source: str) -> tuple[ParsedDoc, ...]:
    """All documents of ``text`` with positioned nodes; raises :class:`YamlSyntaxError`."""
    result = _compose_cached(text)
    if isinstance(result, Exception):
        raise _syntax_error(result, source=source)
    return result


_BaseLoader: Any = pyyaml.CSafeLoader if pyyaml.__with_libyaml__ else pyyaml.SafeLoader


class _Loader11(_BaseLoader):  # type: ignore[misc]
    """YAML 1.1 as kubectl/Helm (go-yaml) read it: PyYAML's resolver plus ``y``/``n`` booleans."""


_Loader11.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))


class _Loader12(_BaseLoader):  # type: ignore[misc]
    """libyaml with YAML 1.2 resolution (ruamel's table): a fast second reading, used only to verify."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is pyyaml.ScalarNode:
            return _resolve12(value) if implicit[0] else _STR_TAG
        return "tag:yaml.org,2002:seq" if kind is pyyaml.SequenceNode else "tag:yaml.org,2002:map"


_R12 = VersionedResolver(version=(1, 2))


@functools.lru_cache(maxsize=65536)
def _resolve12(value: str) -> str:
    return str(_R12.resolve(RuamelScalarNode, value, (True, False)))


@functools.lru_cache(maxsize=16)
def read_fast(text: str) -> tuple[Any, ...] | None:
    """The documents of ``text`` as plain data read by libyaml with YAML 1.2 rules, or None when it cannot tell.

    libyaml is a YAML 1.1 parser: a ``%YAML`` directive, a text it rejects (an anchor defined twice, YAML 1.2
    syntax) or a deep structure gives None, and the caller reads with ruamel instead.
    """
    if "%YAML" in text or not pyyaml.__with_libyaml__:
        return None
    try:
        return tuple(construct(tree) for tree in pyyaml.compose_all(text, Loader=_Loader12))
    except (pyyaml.YAMLError, ValueError, RecursionError):
        return None


def compose11(text: str) -> list[Any] | None:
    """The YAML 1.1 node trees of ``text`` (PyYAML), or None if PyYAML cannot parse it."""
    try:
        return list(pyyaml.compose_all(text, Loader=_Loader11))
    except (pyyaml.YAMLError, ValueError):
        return None


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
    return str(tag) == _STR_TAG
