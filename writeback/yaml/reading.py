"""Reading YAML as plain data: the one loading function for Git manifests, live dumps, config and kustomize output.

``load_all(text, source=...)`` returns the data of every document (``None`` for an empty one). It reads the way
kubectl and kustomize do, with a C parser (libyaml, through PyYAML's ``CParser``), and keeps the reading rules
writeback documents (docs/yamledit.md), exactly as ``writeback.yaml.edit.load_documents`` reads them:

- YAML 1.2 resolution (ruamel.yaml's table): ``true``/``false`` are booleans, ``yes``/``on`` are strings,
  ``0755`` is the integer 755, ``0o755`` is octal, ``1e3`` is a float; a ``%YAML 1.1`` directive switches to the
  YAML 1.1 table from that document on, as ruamel.yaml does;
- timestamps and unknown tags stay strings; merge keys (``<<``) are applied; a mapping used as a key becomes a
  hashable :class:`ComplexKey`; an anchor may be defined again (the later definition wins).

It is bounded, so that a hostile file fails fast with an error naming it (``YamlError``) while the others load:

- a text longer than :data:`MAX_CHARS` is refused before it is parsed;
- nesting deeper than :data:`MAX_DEPTH` levels is refused;
- aliases may add at most :data:`MAX_ALIAS_GROWTH` units (a node, or a character of a scalar) to a document
  beyond what it holds without them. The size is computed on the composed node graph, where each anchored node
  exists once, before anything is constructed: a billion-laughs document is refused after composing a few
  dozen nodes. An alias to a node that contains it is refused too.

The loaders and their resolvers are ``writeback.yaml.loaders``'. Positions are not kept: the YAML editor
(``writeback.yaml.edit``) composes them itself, only for the files it edits.

Parsed texts are kept by (source, digest of the text): the key holds a 16-byte BLAKE2b digest, not the text.

- Inside a :func:`parse_scope` (a ``detect`` or ``plan`` run opens one), a text is parsed once: ``plan`` locates
  its drifts in the manifests ``detect`` read, without parsing them again. With the cache off (a one-shot run) the
  scope holds each text's documents packed (``marshal``: about a seventh of their size as objects, issue 23) and
  gives each reader its own copy, so a one-shot ``plan`` keeps the repository's documents only as bytes; its
  entries go when it ends.
- Across runs, a cache of :data:`CACHE_CHARS` characters' worth of texts (least recently used goes first) spares
  the service's next cycles the files that did not change. A one-shot run (``writeback diff``, ``plan``, ``run
  --once``) turns it off with :func:`set_cache`: it would only hold memory.

The data is shared: callers must not modify what they get (the pipeline copies before it changes anything).
Pure: text in, data out.
"""

from __future__ import annotations

import functools
import hashlib
import marshal
import math
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import Node, ScalarNode, SequenceNode

from writeback.errors import YamlError, yaml_error_position
from writeback.yaml.loaders import MERGE_TAG, STR_TAG, EventLoader, fast_loader

__all__ = [
    "MAX_ALIAS_GROWTH",
    "MAX_CHARS",
    "MAX_DEPTH",
    "CacheInfo",
    "ComplexKey",
    "YamlError",
    "cache_info",
    "cached",
    "clear_cache",
    "freeze",
    "load_all",
    "parse_scope",
    "read_fast",
    "scalar_value",
    "set_cache",
]

MAX_CHARS = 64 * 2**20  # 64 Mi characters: a bigger text is refused (a 10 MB file reads in about a second)
MAX_DEPTH = 200  # nesting levels, aliases followed; Kubernetes objects nest a few dozen at most
MAX_ALIAS_GROWTH = 1_000_000  # nodes + scalar characters that aliases may add to one document
CACHE_CHARS = 32 * 2**20  # how much source text the parse cache keeps (least recently used goes first)


# ---------------------------------------------------------------- bounds on the composed graph


class _Measure:
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
                raise _refused(self.source, "a YAML alias refers to a node that contains it")
            if depth + known[1] - 1 > MAX_DEPTH:
                raise _too_deep(self.source)
            self.expanded += known[0]
            if self.expanded - self.own > MAX_ALIAS_GROWTH:  # what is still to walk cannot make up for it
                raise _refused(
                    self.source,
                    f"YAML aliases expand this document by more than {MAX_ALIAS_GROWTH:,} nodes and characters "
                    "(a YAML bomb?); refused without expanding it",
                )
            return known
        if depth > MAX_DEPTH:
            raise _too_deep(self.source)
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


def _too_deep(source: str) -> YamlError:
    return _refused(source, f"YAML nested deeper than {MAX_DEPTH} levels")


def _refused(source: str, problem: str) -> YamlError:
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


def _construct(node: Node, depth: int, source: str) -> Any:
    if depth > MAX_DEPTH:
        raise _too_deep(source)
    kind = type(node)
    if kind is ScalarNode:
        return _scalar(node.tag, node.value)
    if kind is SequenceNode:
        return [_construct(item, depth + 1, source) for item in node.value]
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
                data = _construct(src, depth + 1, source)
                if isinstance(data, dict):
                    for k, v in data.items():
                        merged.setdefault(k, v)
            continue
        if type(key_node) is ScalarNode:
            key = _scalar(tag, key_node.value)
        else:
            key = freeze(_construct(key_node, depth + 1, source))
        if inline and type(value_node) is ScalarNode:
            own[key] = _scalar(value_node.tag, value_node.value)
        else:
            own[key] = _construct(value_node, depth + 1, source)
    if not merged:
        return own
    merged.update(own)
    return merged


# ---------------------------------------------------------------- loading


def _syntax_error(err: yaml.YAMLError, *, source: str, text: str) -> YamlError:
    mark, problem = yaml_error_position(err, text=text)
    if mark is None:
        return YamlError(f"{source}: not valid YAML: {problem}", source=source, problem=problem)
    line, column = mark.line + 1, mark.column + 1
    return YamlError(f"{source}:{line}:{column}: not valid YAML: {problem}", source=source, line=line,
                     column=column, problem=problem)  # fmt: skip


def _documents(loader: Any, *, text: str, source: str) -> list[Any]:
    out: list[Any] = []
    anchored = "&" in text  # without an anchor there is no alias: nothing to expand
    try:
        while loader.check_node():
            root = loader.get_node()
            if anchored:
                _Measure(source=source).check(root)
            out.append(_construct(root, 1, source))
    finally:
        loader.dispose()
    return out


def _parse(text: str, *, source: str) -> list[Any]:
    if len(text) > MAX_CHARS:
        raise _refused(
            source,
            f"{len(text) / 2**20:.1f} Mi characters, more than the {MAX_CHARS // 2**20} Mi that writeback reads "
            "from one YAML file or stream; split it",
        )
    try:
        if "%YAML" not in text and fast_loader is not None:
            try:
                return _documents(fast_loader(text), text=text, source=source)
            except yaml.composer.ComposerError as e:
                if "found duplicate anchor" not in str(e):
                    raise
        return _documents(EventLoader(text), text=text, source=source)
    except yaml.YAMLError as e:
        raise _syntax_error(e, source=source, text=text) from e
    except UnicodeError as e:
        raise YamlError(f"{source}: not valid YAML: {e}", source=source, problem=str(e)) from e


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheInfo:
    hits: int  # texts found parsed (in the run's scope or the cache)
    misses: int  # texts parsed
    texts: int  # texts held by the cache across runs
    chars: int  # their size
    enabled: bool = True  # whether the cache across runs keeps anything (see ``set_cache``)


_Key = tuple[str, bytes]  # (source, digest of the text)
_cache: OrderedDict[_Key, tuple[tuple[Any, ...], int]] = OrderedDict()  # key -> (documents, characters)
_cache_chars = 0
_cache_counts = [0, 0]  # hits, misses
_cache_enabled = True
_cache_lock = threading.Lock()
_Scoped = bytes | tuple[Any, ...]  # a text's documents packed by marshal; as they are when marshal cannot hold them
_scope: ContextVar[dict[_Key, _Scoped] | None] = ContextVar("writeback_parse_scope", default=None)


def _key(text: str, source: str) -> _Key:
    return source, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@contextmanager
def parse_scope() -> Iterator[None]:
    """Within the ``with`` block (in this thread or task), a text is parsed at most once, cache or no cache. Nested
    blocks share the outermost one's texts."""
    if _scope.get() is not None:
        yield
        return
    token = _scope.set({})
    try:
        yield
    finally:
        _scope.reset(token)


def keeps_documents() -> bool:
    """Whether parsed documents are kept beyond their reader, as the objects the reader got: the cache is on. (A
    :func:`parse_scope` keeps them packed, and gives each reader its own copy.)"""
    return _cache_enabled


def _scoped(docs: tuple[Any, ...]) -> _Scoped:
    """What a scope keeps of a text: packed, unless the cache across runs shares the objects anyway (a service)."""
    if _cache_enabled:
        return docs
    try:
        return marshal.dumps(docs)
    except ValueError:  # a key marshal cannot hold (``ComplexKey``): kept as it is
        return docs


def _unpacked(kept: _Scoped) -> tuple[Any, ...]:
    if type(kept) is bytes:
        docs: tuple[Any, ...] = marshal.loads(kept)
        return docs
    return kept  # type: ignore[return-value]


def set_cache(*, enabled: bool) -> None:
    """Keep parsed texts across runs (the default: a service's cycles) or not (a one-shot run); turning it off
    forgets what it holds. A :func:`parse_scope` works either way."""
    global _cache_enabled
    with _cache_lock:
        _cache_enabled = enabled
    if not enabled:
        _forget()


def load_all(text: str, *, source: str) -> list[Any]:
    """The data of every document of ``text``; raises :class:`YamlError` naming ``source`` (and the line).

    Do not modify the returned data: it is shared with the parse cache (a scope gives each reader a copy).
    """
    global _cache_chars
    key = _key(text, source)
    scope = _scope.get()
    scoped = scope.get(key) if scope is not None else None
    hit = _unpacked(scoped) if scoped is not None else None
    with _cache_lock:
        if hit is None and _cache_enabled:
            entry = _cache.get(key)
            if entry is not None:
                hit = entry[0]
                _cache.move_to_end(key)
        _cache_counts[0 if hit is not None else 1] += 1
    if hit is not None:
        if scope is not None and scoped is None:
            scope[key] = _scoped(hit)
        return list(hit)
    docs = _parse(text, source=source)
    kept = tuple(docs)
    if scope is not None:
        scope[key] = _scoped(kept)
    if len(text) <= CACHE_CHARS // 4:
        with _cache_lock:
            if _cache_enabled and key not in _cache:
                _cache[key] = (kept, len(text))
                _cache_chars += len(text)
                while _cache_chars > CACHE_CHARS:
                    _, (_, size) = _cache.popitem(last=False)
                    _cache_chars -= size
    return docs


@functools.lru_cache(maxsize=16)
def read_fast(text: str) -> tuple[Any, ...] | None:
    """The documents of ``text`` as :func:`load_all` reads them with libyaml alone, or None when it cannot tell.

    For the YAML editor's check of an edited text (not cached with ``load_all``'s texts). A ``%YAML`` directive,
    a text libyaml rejects (an anchor defined twice, YAML 1.2 syntax) or one beyond a bound gives None, and the
    caller reads with ruamel.yaml instead.
    """
    if "%YAML" in text or fast_loader is None or len(text) > MAX_CHARS:
        return None
    try:
        return tuple(_documents(fast_loader(text), text=text, source="<edited text>"))
    except (yaml.YAMLError, YamlError, RecursionError, ValueError, UnicodeError):
        return None


def clear_cache() -> None:
    """Forget every parsed text and the counts (tests, and a service that wants its memory back)."""
    _forget()
    with _cache_lock:
        _cache_counts[:] = [0, 0]


def _forget() -> None:
    global _cache_chars
    with _cache_lock:
        _cache.clear()
        _cache_chars = 0


def cache_info() -> CacheInfo:
    with _cache_lock:
        return CacheInfo(hits=_cache_counts[0], misses=_cache_counts[1], texts=len(_cache), chars=_cache_chars,
                         enabled=_cache_enabled)  # fmt: skip


def cached() -> list[tuple[str, tuple[Any, ...]]]:
    """What the cache holds: (source, documents), for checks that nobody modified shared data."""
    with _cache_lock:
        return [(source, docs) for (source, _), (docs, _) in _cache.items()]
