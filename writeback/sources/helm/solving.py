"""Given where perturbation tokens landed, the new values for the keys: direct, embedded in a string, or an entry
added to a map or list. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.kube.paths import lookup
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, Select
from writeback.sources.helm.candidates import Perturb, num_text, scalar_text
from writeback.sources.helm.values import ValuesPath, get_value

__all__ = ["Found", "convert", "locate_tokens", "solve_add", "solve_remove", "solve_scalar"]

_TOKEN = re.compile(r"wbq\d+x|731\d{3}(?:\.5)?")

Edits = list[tuple[ValuesPath, Any]]


@dataclass(frozen=True, slots=True)
class Found:
    path: FieldPath  # relative to where the search started
    how: str  # "key" (a map key), "value" (the whole scalar), "embedded" (inside a string)
    token: str


def locate_tokens(value: Any, issued: Mapping[str, ValuesPath], at: FieldPath = ()) -> Iterator[Found]:
    """Every place in ``value`` where one of the ``issued`` tokens is."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str) and k in issued:
                yield Found(path=(*at, Key(k)), how="key", token=k)
            yield from locate_tokens(v, issued, (*at, Key(str(k))))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from locate_tokens(v, issued, (*at, Index(i)))
    else:
        text = scalar_text(value)
        if text:
            for m in _TOKEN.finditer(text):
                if m.group(0) in issued:
                    yield Found(path=at, how="value" if m.group(0) == text else "embedded", token=m.group(0))


def convert(new: Any, current: Any) -> Any:
    """``new`` (a live value, or text cut from one) in the type the key has now, when it reads back the same."""
    text = scalar_text(new)
    if isinstance(current, bool):
        return new if isinstance(new, bool) else {"true": True, "false": False}.get(str(text), new)
    if isinstance(current, int | float) and not isinstance(new, bool):
        if isinstance(new, int | float):
            return new
        if text is not None and re.fullmatch(r"-?\d+", text):
            return int(text)
        if text is not None and re.fullmatch(r"-?\d+\.\d+", text) and isinstance(current, float):
            return float(text)
        return new
    if isinstance(current, str) and text is not None and not isinstance(new, str):
        return text
    return new


def _parts(text: str, perturbs: Mapping[str, Perturb]) -> list[str | ValuesPath]:
    out: list[str | ValuesPath] = []
    pos = 0
    for m in _TOKEN.finditer(text):
        p = perturbs.get(m.group(0))
        if p is None:
            continue
        out.append(text[pos : m.start()])
        out.append(p.key)
        pos = m.end()
    out.append(text[pos:])
    return out


def _splits(
    parts: Sequence[str | ValuesPath], text: str, i: int = 0, pos: int = 0, got: dict[ValuesPath, str] | None = None
) -> Iterator[dict[ValuesPath, str]]:
    got = dict(got or {})
    if i == len(parts):
        if pos == len(text):
            yield got
        return
    part = parts[i]
    if isinstance(part, str):
        if text.startswith(part, pos):
            yield from _splits(parts, text, i + 1, pos + len(part), got)
        return
    if part in got:
        if text.startswith(got[part], pos):
            yield from _splits(parts, text, i + 1, pos + len(got[part]), got)
        return
    for end in range(pos, len(text) + 1):
        got[part] = text[pos:end]
        yield from _splits(parts, text, i + 1, end, got)
    got.pop(part, None)


def solve_scalar(
    perturbed: Any, git: Any, live: Any, *, perturbs: Mapping[str, Perturb], effective: Mapping[str, Any]
) -> Edits | str:
    """New values for the keys whose tokens are in ``perturbed`` (the field in a render with them) so that the
    field renders as ``live``; a reason when that cannot be done."""
    text = scalar_text(perturbed)
    if text is None:
        return "the field is not a scalar in the perturbed render"
    parts = _parts(text, perturbs)
    keys = [p for p in parts if not isinstance(p, str)]
    if len(parts) == 3 and parts[0] == "" and parts[2] == "":
        return [(keys[0], convert(live, get_value(effective, keys[0])))]
    current = {k: scalar_text(get_value(effective, k)) or "" for k in keys}
    rebuilt = "".join(p if isinstance(p, str) else current[p] for p in parts)
    git_text, live_text = scalar_text(git), scalar_text(live)
    if rebuilt != git_text:
        names = ", ".join(_fmt(k) for k in dict.fromkeys(keys))
        return f"the template transforms the value of {names} (rendered {git_text!r}, not {rebuilt!r})"
    if live_text is None:
        return "the live value is not a scalar"
    best: dict[ValuesPath, str] | None = None
    best_cost = (len(keys) + 1, 0)
    for got in _splits(parts, live_text):
        changed = sum(1 for k, v in got.items() if v != current[k])
        cost = (changed, sum(1 for v in got.values() if v == ""))
        if cost < best_cost:
            best, best_cost = got, cost
            if changed <= 1 and cost[1] == 0:
                break
    if best is None:
        return f"the live value {live_text!r} does not fit the template's pattern {_pattern(parts)!r}"
    return [(k, convert(v, get_value(effective, k))) for k, v in best.items() if v != current[k]]


def _fmt(key: ValuesPath) -> str:
    from writeback.sources.helm.values import format_key

    return format_key(key)


def _pattern(parts: Sequence[str | ValuesPath]) -> str:
    return "".join(p if isinstance(p, str) else "{{" + _fmt(p) + "}}" for p in parts)


def solve_remove(found_keys: Sequence[ValuesPath], *, effective: Mapping[str, Any], whole: bool) -> Edits | str:
    """The removal that takes a rendered field (``whole``: an item or map) away: its one key, or the list item that
    all its keys are under."""
    keys = list(dict.fromkeys(found_keys))
    if len(keys) == 1 and not whole:
        return [(keys[0], ABSENT)]
    for depth in range(min(len(k) for k in keys), 0, -1):
        prefix = keys[0][:depth]
        if all(k[:depth] == prefix for k in keys) and isinstance(prefix[-1], int):
            return [(prefix, ABSENT)]
    if len(keys) == 1:
        return [(keys[0], ABSENT)]
    names = ", ".join(_fmt(k) for k in keys)
    return f"the removed field is built from several values ({names}); no single values edit removes it"


def _item_value(entry: Any, item: Any, live: Any, issued: Mapping[str, Any]) -> Any:
    """``entry`` (with tokens) with each token replaced by the live value at the place the token rendered in
    ``item``."""
    where = {f.token: f.path for f in locate_tokens(item, issued) if f.how in ("value", "key")}

    def fill(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {k: fill(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fill(x) for x in v]
        if isinstance(v, str) and v in where:
            got = lookup(live, where[v])
            if got is ABSENT:
                raise LookupError(v)
            return got
        return v

    return fill(entry)


def _item_path(path: FieldPath) -> FieldPath | None:
    """The path of the list item a token rendered in: up to its first list position, through map keys only."""
    for i, seg in enumerate(path):
        if isinstance(seg, Index):
            return tuple(path[: i + 1])
        if not isinstance(seg, Key):
            return None
    return None


def solve_add(
    perturb: Perturb, anchor_value: Any, rest: FieldPath, live: Any, *, effective: Mapping[str, Any]
) -> Edits | str:
    """The entry to add to the map or list ``perturb.key`` so that ``live`` appears at ``rest`` below the anchor.

    ``anchor_value``: the anchor in the render where ``perturb`` added its entry."""
    issued = {t: perturb.key for t in perturb.tokens}
    spots = list(locate_tokens(anchor_value, issued))
    if not spots:
        return "its entry did not render here"
    current = get_value(effective, perturb.key)
    if isinstance(current, list):
        # the item's place below the anchor: the anchor is the list, or (a list the Git values render empty, so
        # not at all) the map that gets it
        places = {_item_path(f.path) for f in spots}
        item_path = next(iter(places))
        if len(places) != 1 or item_path is None or not rest or not isinstance(rest[-1], Select | Index):
            return "its item renders elsewhere"
        if tuple(rest[:-1]) != item_path[:-1]:
            return "its item renders elsewhere"
        item = lookup(anchor_value, item_path)
        try:
            value = _item_value(perturb.entry, item, live, issued)
        except LookupError:
            return "the rendered item does not show where each part of the live item comes from"
        return [((*perturb.key, len(current)), value)]
    name, inner = next(iter(perturb.entry.items()))
    keyed = [f for f in spots if f.how == "key" and f.token == name]
    if keyed:
        at = keyed[0].path[:-1]
        if at == tuple(rest) and isinstance(live, Mapping):
            return [((*perturb.key, str(k)), v) for k, v in live.items()]
        below = rest[len(at) :]
        if tuple(rest[: len(at)]) == at and below and all(isinstance(s, Key) for s in below):
            return [((*perturb.key, *(s.name for s in below if isinstance(s, Key))), live)]
        return "its entries render at another place"
    if rest and isinstance(rest[0], Select | Index) and len(rest) == 1:
        item_paths = {f.path[:1] for f in spots}
        if len(item_paths) == 1:
            item = lookup(anchor_value, next(iter(item_paths)))
            where = {f.token: f.path for f in locate_tokens(item, issued) if f.how == "value"}
            if name in where and inner in where:
                key, value = lookup(live, where[name]), lookup(live, where[inner])
                if isinstance(key, str) and value is not ABSENT:
                    return [((*perturb.key, key), value)]
    return "the rendered entry does not show where the live entry's parts come from"


def text_of(value: Any) -> str:
    return num_text(value) if isinstance(value, int | float) and not isinstance(value, bool) else str(value)
