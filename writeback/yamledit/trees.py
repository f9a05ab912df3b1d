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

from writeback.errors import yaml_error_position
from writeback.yamledit.errors import YamlSyntaxError

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
        f"{where}: invalid YAML: {problem}", source=source, problem=problem, line=line, column=column
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


def compose11(text: str) -> list[Any] | None:
    """The YAML 1.1 node trees of ``text`` (PyYAML), or None if PyYAML cannot parse it."""
    try:
        return list(pyyaml.compose_all(text, Loader=_Loader11))
    except (pyyaml.YAMLError, ValueError):
        return None


# ---------------------------------------------------------------- construction


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


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return ComplexKey((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return ComplexKey(_freeze(v) for v in value)
    return value


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
        key = _freeze(construct(key_node, v11=v11, _depth=_depth + 1))
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
