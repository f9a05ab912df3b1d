"""The YAML loaders and their resolvers: what turns a text into node trees, in the one place that builds them.

- :data:`fast_loader` and :class:`EventLoader` read as writeback reads every text (``writeback.yaml.reading``):
  libyaml parses (and, for the fast one, composes), and plain scalars resolve by ruamel.yaml's YAML 1.2 table, or
  its YAML 1.1 table from a ``%YAML 1.1`` directive on; an anchor may be defined again (the later one wins).
- :func:`compose11` reads as go-yaml v2 (kubectl, Helm) reads: PyYAML's YAML 1.1 resolver plus ``y``/``n``
  booleans. The YAML editor checks with it that an edited value reads the same to those tools.

Pure: text in, nodes out.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.resolver import implicit_resolvers as _RUAMEL_RESOLVERS
from yaml.composer import Composer
from yaml.nodes import Node, ScalarNode, SequenceNode

__all__ = [
    "MAP_TAG",
    "MERGE_TAG",
    "SEQ_TAG",
    "STR_TAG",
    "EventLoader",
    "compose11",
    "fast_loader",
    "plain_str_everywhere",
    "resolve_plain",
    "ruamel_yaml",
]

MERGE_TAG = "tag:yaml.org,2002:merge"
STR_TAG, SEQ_TAG, MAP_TAG = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"


@contextmanager
def ruamel_yaml(*, typ: str, pure: bool = False) -> Iterator[Any]:
    """A ruamel.yaml ``YAML`` instance for the ``with`` block, taken apart after it.

    The instance and its reader, scanner, parser, composer and constructor refer to each other (and the parser to
    itself, through its next state): only the cyclic collector frees them, and a one-shot command runs without it
    (``cli.entrypoint``), so each instance would live until the process ends with the text, its marks and its node
    tree (a plan of 100 edited files: about 5 MB). Dropping the attributes of the instance and of its parts breaks
    every cycle; what the block took out of it (nodes, data) is kept by its own references.
    """
    loader = YAML(typ=typ, pure=pure)
    try:
        yield loader
    finally:
        for part in vars(loader).values():
            if not isinstance(part, type) and isinstance(getattr(part, "__dict__", None), dict):
                vars(part).clear()
        vars(loader).clear()


# ---------------------------------------------------------------- resolution (YAML 1.2, or 1.1 by directive)

_Table = dict[str, list[tuple[str, Any]]]


def _table(version: tuple[int, int]) -> _Table:
    out: _Table = {}
    for versions, tag, regexp, first in _RUAMEL_RESOLVERS:
        if version in versions:
            for ch in first:
                out.setdefault(ch, []).append((tag, regexp))
    return out


_TABLES = {(1, 2): _table((1, 2)), (1, 1): _table((1, 1))}
_RESOLVED: dict[tuple[int, int], dict[str, str]] = {(1, 2): {}, (1, 1): {}}
_RESOLVED_MAX = 100_000


def resolve_plain(value: str, version: tuple[int, int] = (1, 2)) -> str:
    """The tag of a plain scalar by ruamel.yaml's table for ``version`` (cached)."""
    known = _RESOLVED[version]
    tag = known.get(value)
    if tag is None:
        tag = STR_TAG
        for candidate, regexp in _TABLES[version].get(value[:1], ()):
            if regexp.match(value):
                tag = candidate
                break
        if len(known) >= _RESOLVED_MAX:
            known.clear()
        known[value] = tag
    return tag


class _Resolving:
    """The resolver half of a PyYAML loader (what ``CParser`` and ``Composer`` call), with a YAML version."""

    version: tuple[int, int] = (1, 2)

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass

    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            return resolve_plain(value, self.version) if implicit[0] else STR_TAG
        return SEQ_TAG if kind is SequenceNode else MAP_TAG


def _compose_document(self: Any) -> Any:
    start = self.get_event()
    if start.version is not None:  # ruamel.yaml keeps a directive's version for the documents after it
        self.version = (1, 1) if tuple(start.version) == (1, 1) else (1, 2)
    node = self.compose_node(None, None)
    self.get_event()
    self.anchors = {}
    return node


def _compose_node(self: Any, parent: Any, index: Any) -> Any:
    event = self.peek_event()
    anchor = getattr(event, "anchor", None)
    if anchor is not None and not isinstance(event, yaml.AliasEvent):
        self.anchors.pop(anchor, None)  # a second definition replaces the first (YAML 1.2, go-yaml)
    return Composer.compose_node(self, parent, index)


fast_loader: Callable[[str], Any] | None = None  # None: PyYAML without libyaml

if yaml.__with_libyaml__:
    from yaml._yaml import CParser as _Parser

    _known12 = _RESOLVED[(1, 2)].get

    class _FastLoader(_Parser, _Resolving):
        """libyaml parses and composes; only resolution runs in Python (no ``%YAML`` directive, no anchor defined
        twice: libyaml refuses those, so every document reads as YAML 1.2).

        libyaml calls these three for every node (a 10k-object repo: about half a million nodes): the two no-op
        hooks are C callables that ignore their arguments, and a plain scalar read before resolves from the cache
        in one call (issue 23: the Git side's reading is a third of a one-shot ``diff``'s CPU)."""

        descend_resolver = staticmethod(operator.is_)  # type: ignore[assignment]  # (parent, index) -> ignored
        ascend_resolver = staticmethod(tuple)  # type: ignore[assignment]  # () -> ignored

        def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
            if kind is ScalarNode:
                return (_known12(value) or resolve_plain(value)) if implicit[0] else STR_TAG
            return SEQ_TAG if kind is SequenceNode else MAP_TAG

    fast_loader = _FastLoader

    class EventLoader(Composer, _Parser, _Resolving):
        """libyaml parses, Python composes: for ``%YAML`` directives and anchors defined twice (rare)."""

        def __init__(self, text: str) -> None:
            _Parser.__init__(self, text)
            Composer.__init__(self)

        compose_document = _compose_document
        compose_node = _compose_node

else:  # PyYAML without libyaml: the same, in pure Python (slower)
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class EventLoader(Reader, Scanner, Parser, Composer, _Resolving):  # type: ignore[no-redef]
        def __init__(self, text: str) -> None:
            Reader.__init__(self, text)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)

        compose_document = _compose_document
        compose_node = _compose_node


# ---------------------------------------------------------------- YAML 1.1 as go-yaml reads it

_BaseLoader: Any = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


def _go_yaml(cls: Any) -> Any:
    """PyYAML's YAML 1.1 resolver as go-yaml v2 has it: ``y``/``n`` are booleans too."""
    cls.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))
    return cls


@_go_yaml
class _Loader11(_BaseLoader):  # type: ignore[misc]
    """YAML 1.1 as kubectl/Helm (go-yaml) read it."""


@_go_yaml
class _Resolver11(yaml.resolver.Resolver):
    """The resolver of :class:`_Loader11` alone."""


_RESOLVER11: Any = _Resolver11()


def plain_str_everywhere(text: str) -> bool:
    """Whether every reader resolves the plain scalar ``text`` as a string: YAML 1.2 and YAML 1.1 by ruamel.yaml's
    tables, and YAML 1.1 as go-yaml v2 reads it (PyYAML's resolver plus ``y``/``n``)."""
    return (
        resolve_plain(text, (1, 2)) == STR_TAG
        and resolve_plain(text, (1, 1)) == STR_TAG
        and _RESOLVER11.resolve(yaml.ScalarNode, text, (True, False)) == STR_TAG
    )


def compose11(text: str) -> list[Any] | None:
    """The YAML 1.1 node trees of ``text`` (PyYAML), or None if PyYAML cannot parse it."""
    try:
        return list(yaml.compose_all(text, Loader=_Loader11))
    except (yaml.YAMLError, ValueError):
        return None
