"""Which values keys may control a rendered field, and the distinct values that perturb them. Pure.

A scalar field's candidates are the keys whose current value appears in it (equal, or inside the string); keys
whose every occurrence lies inside a longer candidate's come later, with the keys that are null or empty. A field
that drift *adds* has as candidates the maps and lists of the values (empty ones and those already rendered in the
place first): one entry (an item, or a key) with fresh tokens is added to each.

Strings are perturbed with tokens (``wbq12x``), numbers with 6-digit sentinels (``731012``), both found again in
the output; booleans and schema enums are flipped (then only their effect is seen, not where they land).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from writeback.sources.helm.schema import Schema
from writeback.sources.helm.values import ValuesPath, collections, leaves

__all__ = ["Perturb", "Sentinels", "add_candidates", "num_text", "scalar_candidates", "tree_candidates"]

MAX_FIRST = 64  # candidates tried in the first round per field; the rest wait for the broadened round


def num_text(value: Any) -> str:
    """A number as Go templates print it (a whole float64 without ``.0``)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def scalar_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return num_text(value)
    if isinstance(value, str):
        return value
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Perturb:
    """One key's perturbation: its new value, and the tokens that find it in the output (none: a flip)."""

    key: ValuesPath
    value: Any
    tokens: tuple[str, ...] = ()
    entry: Any = None  # collections: the added entry (a list item, or {token: value} of a map)
    adds: bool = False  # a collection with one entry added


@dataclass
class Sentinels:
    """Fresh tokens and numbers, distinct within one trace."""

    schema: Schema
    n: int = 0
    issued: dict[str, ValuesPath] = field(default_factory=dict)

    def token(self) -> str:
        self.n += 1
        return f"wbq{self.n}x"

    def number(self) -> int:
        """A sentinel below 1e6: values reach templates as float64, which Go prints as ``7.31e+06`` from there."""
        self.n += 1
        return 731000 + self.n % 1000

    def scalar(self, key: ValuesPath, current: Any, like: Any = None) -> Perturb | None:
        """A value for ``key`` (current value ``current``; ``like``: the type wanted when it is null or empty)."""
        shape = like if current is None or current == "" else current
        options: list[tuple[Any, tuple[str, ...]]] = []
        if isinstance(shape, bool):
            options.append((not shape if isinstance(current, bool) else True, ()))
        elif isinstance(shape, int | float):
            n = self.number()
            options.append(
                (n if isinstance(shape, int) else n + 0.5, (num_text(n if isinstance(shape, int) else n + 0.5),))
            )
        elif isinstance(shape, str):
            t = self.token()
            options.append((t, (t,)))
        for value in self.schema.enum(key) or ():
            if value != current:
                options.append((value, ()))
        for value, tokens in options:
            if self.schema.accepts(key, value):
                for t in tokens:
                    self.issued[t] = key
                return Perturb(key=key, value=value, tokens=tokens)
        return None

    def shaped(self, value: Any, tokens: list[str]) -> Any:
        """``value`` with every string leaf replaced by a fresh token (collected in ``tokens``)."""
        if isinstance(value, Mapping):
            return {k: self.shaped(v, tokens) for k, v in value.items()}
        if isinstance(value, list):
            return [self.shaped(v, tokens) for v in value]
        if isinstance(value, str):
            t = self.token()
            tokens.append(t)
            return t
        return copy.deepcopy(value)

    def addition(self, key: ValuesPath, current: Any, live: Any) -> Perturb | None:
        """``current`` (a map or list) with one entry added: a list gets an item shaped like ``live`` (its strings
        tokens), a map the entry ``{token: token}``."""
        tokens: list[str] = []
        if isinstance(current, list):
            if current and any(isinstance(i, Mapping) != isinstance(live, Mapping) for i in current):
                return None  # items of another shape: the template would not take this one
            entry: Any = self.shaped(live, tokens)
            value: Any = [*current, entry]
        elif isinstance(current, Mapping):
            name, inner = self.token(), self.token()
            tokens += [name, inner]
            entry = {name: inner}
            value = {**current, name: inner}
        else:
            return None
        if not tokens or not self.schema.accepts(key, value):
            return None
        for t in tokens:
            self.issued[t] = key
        return Perturb(key=key, value=value, tokens=tuple(tokens), entry=entry, adds=True)


def _appears(value: Any, rendered: Any) -> bool:
    if isinstance(value, bool) or isinstance(rendered, bool):
        if isinstance(rendered, str):
            return isinstance(value, bool) and rendered == scalar_text(value)
        return isinstance(value, bool) and isinstance(rendered, bool) and value == rendered
    if isinstance(rendered, str):
        text = scalar_text(value)
        return bool(text) and text is not None and text in rendered
    if isinstance(rendered, int | float):
        if isinstance(value, int | float):
            return bool(value == rendered)
        return isinstance(value, str) and value == num_text(rendered)
    return False


def _spans(text: str, part: str) -> list[tuple[int, int]]:
    out, start = [], text.find(part)
    while start >= 0:
        out.append((start, start + len(part)))
        start = text.find(part, start + 1)
    return out


def _changed(git: str, live: str) -> tuple[int, int]:
    """The span of ``git`` that differs from ``live`` (common prefix and suffix taken off)."""
    start = 0
    while start < min(len(git), len(live)) and git[start] == live[start]:
        start += 1
    end = 0
    while end < min(len(git), len(live)) - start and git[-1 - end] == live[-1 - end]:
        end += 1
    return start, len(git) - end


def scalar_candidates(
    effective: Mapping[str, Any], rendered: Any, live: Any = None
) -> tuple[list[ValuesPath], list[ValuesPath]]:
    """(first, later) candidate keys of a rendered scalar. With the ``live`` string, keys whose value lies wholly
    outside the part that changed come later: they need not change."""
    found = [(k, v) for k, v in leaves(effective) if not isinstance(v, Mapping | list) and _appears(v, rendered)]
    first: list[ValuesPath] = []
    later: list[ValuesPath] = []
    if isinstance(rendered, str):
        texts = {k: scalar_text(v) or "" for k, v in found}
        spans = {k: _spans(rendered, t) for k, t in texts.items()}
        lo, hi = _changed(rendered, live) if isinstance(live, str) else (0, len(rendered))
        for k, _ in found:
            covered = all(
                any(len(texts[o]) > len(texts[k]) and os <= s and e <= oe for o in texts for os, oe in spans[o])
                for s, e in spans[k]
            )
            apart = not any(s <= hi and lo <= e for s, e in spans[k])
            (later if covered or apart else first).append(k)
    else:
        first = [k for k, _ in found]
    later += first[MAX_FIRST:]
    first = first[:MAX_FIRST]
    later += [k for k, v in leaves(effective) if (v is None or v == "") and k not in later]
    return first, later


def tree_candidates(effective: Mapping[str, Any], rendered: Any) -> tuple[list[ValuesPath], list[ValuesPath]]:
    """Candidates for a rendered map or list: those of its scalar leaves (not booleans)."""
    first: list[ValuesPath] = []
    later: list[ValuesPath] = []
    for _, leaf in leaves(rendered):
        if isinstance(leaf, bool | Mapping | list) or leaf is None or leaf == "":
            continue
        f, lt = scalar_candidates(effective, leaf)
        first += [k for k in f if k not in first]
        later += [k for k in lt if k not in later]
    return first, [k for k in later if k not in first]


def _contained(part: Any, whole: Any) -> bool:
    """Is ``part`` (a map or list of values) rendered inside ``whole``?"""
    if isinstance(part, Mapping) and isinstance(whole, Mapping):
        return all(k in whole and _contained(v, whole[k]) for k, v in part.items())
    if isinstance(part, list) and isinstance(whole, list):
        return all(any(_contained(p, w) for w in whole) for p in part)
    return part == whole or (isinstance(whole, str) and scalar_text(part) == whole)


def _all_collections(effective: Mapping[str, Any]) -> Iterator[tuple[ValuesPath, Any]]:
    yield from collections(effective)
    for k, v in leaves(effective):
        if isinstance(v, Mapping | list):  # empty ones
            yield k, v


def add_candidates(
    effective: Mapping[str, Any], anchor: Any, *, item: bool
) -> tuple[list[ValuesPath], list[ValuesPath]]:
    """Maps and lists that may render entries into ``anchor`` (``item``: a list item is added, else a map key)."""
    first: list[ValuesPath] = []
    empty: list[ValuesPath] = []
    later: list[ValuesPath] = []
    seen: set[ValuesPath] = set()
    for k, v in _all_collections(effective):
        if k in seen or any(isinstance(s, int) for s in k):
            continue
        seen.add(k)
        if not item and isinstance(v, list):
            continue
        if not v:
            empty.append(k)
        elif _contained(v, anchor) or (isinstance(v, Mapping) and isinstance(anchor, list) and item):
            first.append(k)
        else:
            later.append(k)
    ordered = first + empty
    return ordered[:MAX_FIRST], ordered[MAX_FIRST:] + later
