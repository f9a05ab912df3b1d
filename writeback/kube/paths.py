"""The one path grammar: JSON output, ignore rules, markers, ``--explain`` all use it.

Grammar (informal)::

    path     := segment ( "." name | "[" selector "]" | '["' quoted '"]' )*
    segment  := name | '["' quoted '"]'
    name     := [A-Za-z0-9_$/:@+-]+         (no dots, brackets, quotes, "=", ",")
    selector := INT                         atomic list item by position: args[3]
              | key "=" value ("," key "=" value)*   keyed list item
              | "*"                         any item (patterns only)
              | '"' quoted '"'              a map key that needs quoting
    value    := bare | '"' quoted '"'

In patterns, a name of ``*`` matches any one key (``Wildcard()``), ``[*]`` any one list
item (``Wildcard(item=True)``), and ``**`` any number of segments, none included
(``Wildcard(many=True)``). A concrete key literally named ``*`` or ``**`` is quoted
(``data["*"]``), so ``parse_path(format_path(p)) == p`` for every concrete path that
starts with a key.

Examples::

    spec.template.spec.containers[name=app].env[name=LOG_LEVEL].value
    spec.ports[port=80,protocol=TCP].targetPort
    metadata.annotations["app.kubernetes.io/name"]
    spec.template.spec.containers[name=app].args[3]
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from writeback.errors import PathSyntaxError
from writeback.kube.pathtypes import (
    ABSENT,
    KEY_DEFAULTS,
    FieldPath,
    Index,
    Key,
    PatternSegment,
    Select,
    Wildcard,
    scalar_text,
)

_BARE = re.compile(r"[A-Za-z0-9_$/:@+\-]+")
_BARE_VALUE = re.compile(r"[^\],=\"]+")
_INDEX = re.compile(r"-?[0-9]{1,18}\]")
_GLOBSTAR = Wildcard(many=True)

__all__ = [
    "format_path",
    "key",
    "lookup",
    "lookup_as_served",
    "match",
    "parse_path",
    "parse_pattern",
    "without",
]

_KEYS: dict[str, Key] = {}  # interned path keys
_KEYS_MAX = 1 << 16


def key(name: str) -> Key:
    """``Key(name)``, shared: keys are frozen, so the paths built for every object can hold one instance per name
    (less memory, and no dataclass construction per path segment). A bounded table: data keys (ConfigMap keys,
    labels) are unbounded, so it starts over when full."""
    found = _KEYS.get(name) if type(name) is str else None
    if found is None:
        found = Key(name)
        if type(name) is str:
            if len(_KEYS) >= _KEYS_MAX:
                _KEYS.clear()
            _KEYS[name] = found
    return found


def _quote(text: str) -> str:
    """A JSON string; characters that are not printable (line or paragraph separators too) as ``\\uXXXX``,
    so that a path never breaks a line of a message, a log or a PR body."""
    quoted = json.dumps(text, ensure_ascii=False)
    if quoted.isprintable():
        return quoted
    return "".join(ch if ch.isprintable() else json.dumps(ch)[1:-1] for ch in quoted)  # \\uXXXX (pairs too)


def _format_value(value: str) -> str:
    return value if _BARE.fullmatch(value) else _quote(value)


def format_path(path: Sequence[PatternSegment]) -> str:
    """Render a path in the grammar above. ``parse_path(format_path(p)) == p`` for concrete paths.

    A concrete key named ``*`` or ``**`` is quoted (``["*"]``), so it never reads back as a wildcard.
    """
    out: list[str] = []
    for seg in path:
        if isinstance(seg, Key):
            if _BARE.fullmatch(seg.name):
                out.append(("." if out else "") + seg.name)
            else:
                out.append(f"[{_quote(seg.name)}]")
        elif isinstance(seg, Select):
            inner = ",".join(f"{k}={_format_value(v)}" for k, v in seg.keys)
            out.append(f"[{inner}]")
        elif isinstance(seg, Index):
            out.append(f"[{seg.index}]")
        elif seg.item:
            out.append("[*]")
        else:
            out.append(("." if out else "") + ("**" if seg.many else "*"))
    return "".join(out)


class _Parser:
    def __init__(self, text: str, *, pattern: bool) -> None:
        self.text = text
        self.pos = 0
        self.pattern = pattern

    def fail(self, what: str) -> PathSyntaxError:
        return PathSyntaxError(f"invalid field path {self.text!r} at column {self.pos + 1}: {what}")

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def quoted(self) -> str:
        # JSON string rules: backslash escapes, double quotes only.
        if self.peek() != '"':
            raise self.fail('expected "')
        decoder = json.JSONDecoder()
        try:
            value, end = decoder.raw_decode(self.text, self.pos)
        except json.JSONDecodeError as e:
            raise self.fail("unterminated or invalid quoted string") from e
        if not isinstance(value, str):
            raise self.fail("expected a quoted string")
        self.pos = end
        return value

    def name(self) -> PatternSegment:
        if self.pattern and self.text.startswith("**", self.pos):
            self.pos += 2
            return _GLOBSTAR
        if self.pattern and self.peek() == "*":
            self.pos += 1
            return Wildcard(item=False)
        m = _BARE.match(self.text, self.pos)
        if not m:
            raise self.fail("expected a field name")
        self.pos = m.end()
        return Key(m.group())

    def bracket(self) -> PatternSegment:
        self.pos += 1  # "["
        if not self.peek():
            raise self.fail('unterminated "["')
        ch = self.peek()
        if ch == '"':
            seg: PatternSegment = Key(self.quoted())
        elif ch == "*" and self.pattern:
            self.pos += 1
            seg = Wildcard(item=True)
        else:
            m = _INDEX.match(self.text, self.pos)
            if m:
                idx = int(m.group()[:-1])
                if idx < 0:
                    raise self.fail("negative list index")
                self.pos = m.end() - 1
                seg = Index(idx)
            else:
                seg = Select(tuple(self.selectors()))
        if self.peek() != "]":
            raise self.fail('expected "]"')
        self.pos += 1
        return seg

    def selectors(self) -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = []
        seen: set[str] = set()
        while True:
            m = _BARE.match(self.text, self.pos)
            if not m:
                raise self.fail("expected a list key name")
            key = m.group()
            self.pos = m.end()
            if self.peek() != "=":
                raise self.fail('expected "=" after the list key')
            self.pos += 1
            if self.peek() == '"':
                value = self.quoted()
            else:
                vm = _BARE_VALUE.match(self.text, self.pos)
                if not vm:
                    raise self.fail("expected a list key value")
                value = vm.group()
                self.pos = vm.end()
            if key in seen:
                raise self.fail(f"list key {key!r} given twice")
            seen.add(key)
            pairs.append((key, value))
            if self.peek() == ",":
                self.pos += 1
                continue
            return pairs

    def parse(self) -> tuple[PatternSegment, ...]:
        if not self.text:
            raise self.fail("empty path")
        segs: list[PatternSegment] = []
        if self.peek() == "[":
            seg = self.bracket()
            if not isinstance(seg, Key):
                raise self.fail("a path starts with a field name")
            segs.append(seg)
        else:
            segs.append(self.name())
        while self.pos < len(self.text):
            ch = self.peek()
            if ch == ".":
                self.pos += 1
                segs.append(self.name())
            elif ch == "[":
                segs.append(self.bracket())
            else:
                raise self.fail(f"unexpected character {ch!r}")
        return tuple(segs)


@functools.lru_cache(maxsize=4096)
def parse_pattern(text: str) -> tuple[PatternSegment, ...]:
    """Parse a path that may hold ``*``, ``[*]`` and ``**`` wildcards (ignore rules).

    Cached: rules and presets are compiled once per object, and the result is an immutable tuple.
    """
    return _Parser(text, pattern=True).parse()


def parse_path(text: str) -> FieldPath:
    """Parse a concrete path; raises :class:`PathSyntaxError` naming the column."""
    segs = _Parser(text, pattern=False).parse()
    out: list[Key | Select | Index] = []
    for seg in segs:
        assert not isinstance(seg, Wildcard)
        out.append(seg)
    return tuple(out)


def _seg_match(pat: PatternSegment, seg: Key | Select | Index) -> bool:
    if type(pat) is Key:  # the common case, first
        return type(seg) is Key and pat.name == seg.name
    if isinstance(pat, Wildcard):
        return not isinstance(seg, Key) if pat.item else isinstance(seg, Key)
    if isinstance(pat, Select) and isinstance(seg, Select):
        # A pattern selector matches an item whose keys include the pattern's.
        have = dict(seg.keys)
        return all(have.get(k) == v for k, v in pat.keys)
    return pat == seg


def match(pattern: Sequence[PatternSegment], path: Sequence[Key | Select | Index], *, prefix: bool = True) -> bool:
    """Does ``pattern`` match ``path``? With ``prefix`` it also matches everything below it."""
    return _match_from(pattern, path, 0, 0, prefix)


def _match_from(
    pattern: Sequence[PatternSegment], path: Sequence[Key | Select | Index], i: int, j: int, prefix: bool
) -> bool:
    # Segment by segment; only a ``**`` needs to try every split point.
    n, m = len(pattern), len(path)
    while i < n:
        pat = pattern[i]
        if isinstance(pat, Wildcard) and pat.many:
            nxt = pattern[i + 1] if i + 1 < n else None
            if nxt is not None and not (isinstance(nxt, Wildcard) and nxt.many):
                # Only where the next segment matches can the rest match (never past the end).
                return any(
                    _seg_match(nxt, path[k]) and _match_from(pattern, path, i + 1, k, prefix) for k in range(j, m)
                )
            return any(_match_from(pattern, path, i + 1, k, prefix) for k in range(j, m + 1))
        if j == m or not _seg_match(pat, path[j]):
            return False
        i += 1
        j += 1
    return prefix or j == m


# ---------------------------------------------------------------- walking a path (JSON pointers: kube/jsonpatch)


def lookup(data: Any, path: Sequence[Key | Select | Index], *, key_defaults: bool = False) -> Any:
    """The value at ``path`` in plain data (parsed YAML or JSON), or ABSENT: the one walk of a field path.

    A key matches by name (a YAML key that is not a string, ``80:``, by its text). A keyed item is the only item
    that holds every key field of its selector with that value; no item, or several, is ABSENT. With
    ``key_defaults`` (data as the API server reads it), a key field an item leaves out counts with the server's
    default (``protocol: TCP``). An index is a position.
    """
    node = data
    for seg in path:
        if isinstance(seg, Key):
            if not isinstance(node, Mapping):
                return ABSENT
            if seg.name in node:
                node = node[seg.name]
                continue
            key = next((k for k in node if not isinstance(k, str) and scalar_text(k) == seg.name), ABSENT)
            if key is ABSENT:
                return ABSENT
            node = node[key]
        elif not isinstance(node, list):
            return ABSENT
        elif isinstance(seg, Index):
            if not 0 <= seg.index < len(node):
                return ABSENT
            node = node[seg.index]
        else:
            found = [item for item in node if _selects(seg, item, key_defaults=key_defaults)]
            if len(found) != 1:
                return ABSENT
            node = found[0]
    return node


def lookup_as_served(data: Any, path: Sequence[Key | Select | Index]) -> Any:
    """``lookup`` as the API server reads the data: a key field an item leaves out has its default."""
    return lookup(data, path, key_defaults=True)


def _selects(sel: Select, item: Any, *, key_defaults: bool) -> bool:
    if not key_defaults:
        return sel.matches(item)
    if not isinstance(item, Mapping):
        return False
    for k, v in sel.keys:
        got = scalar_text(item[k]) if k in item and item[k] is not None else KEY_DEFAULTS.get(k)
        if got != v:
            return False
    return True


def without(value: Any, path: Sequence[Key | Select | Index]) -> Any:
    """A copy of ``value`` without the field at ``path`` (list items by position; a map value that the removal
    empties goes too, an emptied list item stays); ABSENT for the empty path, ``value`` when the path is not in it."""
    if not path:
        return ABSENT
    head, rest = path[0], path[1:]
    if isinstance(value, Mapping) and isinstance(head, Key) and head.name in value:
        inner = without(value[head.name], rest)
        out = {k: v for k, v in value.items() if k != head.name}
        if inner is not ABSENT and inner != {} and inner != []:
            out[head.name] = inner
        return out
    if isinstance(value, list) and isinstance(head, Index) and head.index < len(value):
        index = head.index
        inner = without(value[index], rest)
        return [inner if i == index else v for i, v in enumerate(value) if i != index or inner is not ABSENT]
    return value
