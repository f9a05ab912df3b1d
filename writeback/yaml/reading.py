"""Reading YAML as plain data: the one loading function for Git manifests, live dumps, config and kustomize output.

``load_all(text, source=...)`` returns the data of every document (``None`` for an empty one). It reads the way
kubectl and kustomize do, with a C parser (libyaml, through PyYAML's ``CParser``), and keeps the reading rules
writeback documents (docs/yamledit.md), exactly as ``writeback.yaml.edit.load_documents`` reads them:

- YAML 1.2 resolution (ruamel.yaml's table): ``true``/``false`` are booleans, ``yes``/``on`` are strings,
  ``0755`` is the integer 755, ``0o755`` is octal, ``1e3`` is a float; a ``%YAML 1.1`` directive switches to the
  YAML 1.1 table from that document on, as ruamel.yaml does;
- timestamps and unknown tags stay strings; merge keys (``<<``) are applied; a mapping used as a key becomes a
  hashable ``constructing.ComplexKey``; an anchor may be defined again (the later definition wins).

It is bounded, so that a hostile file fails fast with an error naming it (``YamlError``) while the others load:

- a text longer than :data:`MAX_CHARS` is refused before it is parsed;
- nesting deeper than ``constructing.MAX_DEPTH`` levels is refused;
- aliases may add at most ``constructing.MAX_ALIAS_GROWTH`` units (a node, or a character of a scalar) to a document
  beyond what it holds without them. The size is computed on the composed node graph, where each anchored node
  exists once, before anything is constructed: a billion-laughs document is refused after composing a few
  dozen nodes. An alias to a node that contains it is refused too.

The loaders and their resolvers are ``writeback.yaml.loaders``'. Positions are not kept: the YAML editor
(``writeback.yaml.edit``) composes them itself, only for the files it edits.

Parsed texts are kept by (source, digest of the text): the key holds a 16-byte BLAKE2b digest, not the text.

- Inside a :func:`parse_scope` a text is parsed once (``detect`` opens one to read the compared revision and the
  head). With the cache off (a one-shot run) the scope holds each text's documents packed (``marshal``: about a
  seventh of their size as objects, issue 23) and gives each reader its own copy; its entries go when it ends.
  A scope opened with a ``summary`` keeps, with the cache off, only ``summary(documents)`` of each text, which
  :func:`scoped_summary` reads back: ``plan`` keeps the names each file declares, so that its locator parses
  only the files that declare a drifted object (a reader that needs the documents again parses the text again).
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
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import yaml

from writeback.errors import YamlError, yaml_error_position
from writeback.yaml.constructing import Measure, construct, refused
from writeback.yaml.loaders import EventLoader, fast_loader

__all__ = [
    "MAX_CHARS",
    "CacheInfo",
    "YamlError",
    "cache_info",
    "cached",
    "clear_cache",
    "load_all",
    "parse_scope",
    "read_fast",
    "scoped_summary",
    "set_cache",
]

MAX_CHARS = 64 * 2**20  # 64 Mi characters: a bigger text is refused (a 10 MB file reads in about a second)
CACHE_CHARS = 32 * 2**20  # how much source text the parse cache keeps (least recently used goes first)


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
                Measure(source=source).check(root)
            out.append(construct(root, 1, source))
    finally:
        loader.dispose()
    return out


def _parse(text: str, *, source: str) -> list[Any]:
    if len(text) > MAX_CHARS:
        raise refused(
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
Summary = Callable[[tuple[Any, ...]], object]


@dataclass(slots=True, kw_only=True)
class _Scope:
    summary: Summary | None  # what to keep of a text's documents, with the cache off, instead of the documents
    kept: dict[_Key, _Scoped]  # documents
    summaries: dict[_Key, object]
    nested: int = 0  # inner scopes open without a summary: they keep documents meanwhile

    def keeps_documents(self) -> bool:
        return self.summary is None or _cache_enabled or self.nested > 0

    def keep(self, key: _Key, docs: tuple[Any, ...]) -> None:
        if self.keeps_documents():
            self.kept[key] = _scoped(docs)
        if self.summary is not None and not _cache_enabled:
            self.summaries[key] = self.summary(docs)


_scope: ContextVar[_Scope | None] = ContextVar("writeback_parse_scope", default=None)


def _key(text: str, source: str) -> _Key:
    return source, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@contextmanager
def parse_scope(*, summary: Summary | None = None) -> Iterator[None]:
    """Within the ``with`` block (in this thread or task), a text is parsed at most once, cache or no cache.

    ``summary``: with the cache off, keep only ``summary(documents)`` of each text (:func:`scoped_summary`); a
    text read again is parsed again. Nested blocks share the outermost one's texts; an inner block without a summary
    inside one with a summary keeps documents until it ends."""
    outer = _scope.get()
    if outer is not None:
        if summary is not None or outer.summary is None:
            yield
            return
        outer.nested += 1
        try:
            yield
        finally:
            outer.nested -= 1
            if not outer.keeps_documents():
                outer.kept.clear()
        return
    token = _scope.set(_Scope(summary=summary, kept={}, summaries={}))
    try:
        yield
    finally:
        _scope.reset(token)


def scoped_summary(text: str, *, source: str) -> object | None:
    """The summary the enclosing :func:`parse_scope` keeps of ``text`` read as ``source``, or None: no scope with a
    summary, or a text it has not read (or could not: a text that does not parse is never kept)."""
    scope = _scope.get()
    if scope is None or scope.summary is None:
        return None
    key = _key(text, source)
    found = scope.summaries.get(key)
    if found is None and key in scope.kept:
        found = scope.summary(_unpacked(scope.kept[key]))
    return found


def keeps_documents() -> bool:
    """Whether parsed documents are kept beyond their reader, as the objects the reader got: the cache is on. (With
    it off, a :func:`parse_scope` keeps them packed and gives each reader its own copy, or keeps only their summary
    if it was opened with one.)"""
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
    scoped = scope.kept.get(key) if scope is not None else None
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
            scope.keep(key, hit)
        return list(hit)
    docs = _parse(text, source=source)
    kept = tuple(docs)
    if scope is not None:
        scope.keep(key, kept)
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
