"""Helm values as data: paths, merging as Helm and Flux merge, ``--set`` keys, leaves. Pure.

A values path is a tuple of map keys (``str``) and list positions (``int``): ``("image", "tag")``,
``("extraEnvs", 0, "value")``; :func:`format_key` writes it as ``--set`` does (``image.tag``, ``extraEnvs[0].value``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key

ValuesPath = tuple[str | int, ...]

__all__ = [
    "ValuesPath",
    "field_path",
    "format_key",
    "get_value",
    "leaves",
    "merge_maps",
    "parse_key",
    "set_value",
    "setter_layer",
    "typed_value",
    "with_value",
]


def format_key(path: Sequence[str | int]) -> str:
    """``("image", "tag")`` -> ``image.tag``; ``("env", 0, "name")`` -> ``env[0].name``; dots in keys escaped."""
    out = ""
    for seg in path:
        if isinstance(seg, int):
            out += f"[{seg}]"
        else:
            text = seg.replace("\\", "\\\\").replace(".", "\\.").replace("[", "\\[")
            out += f".{text}" if out else text
    return out or "."


_INDEX = re.compile(r"\[(\d+)\]")


def parse_key(text: str) -> ValuesPath:
    """A ``--set`` key (``a.b[0].c``, ``a\\.b``) as a values path; ValueError when it does not parse."""
    segs: list[str | int] = []
    buf = ""
    i = 0
    pending = False  # a name is being read (possibly empty so far)
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            buf += text[i + 1]
            pending = True
            i += 2
            continue
        if ch == ".":
            if not buf:
                raise ValueError(f"{text!r}: empty key segment")
            segs.append(buf)
            buf, pending = "", False
            i += 1
            continue
        if ch == "[":
            m = _INDEX.match(text, i)
            if m is None:
                raise ValueError(f"{text!r}: a list index must be [N]")
            if buf:
                segs.append(buf)
                buf = ""
            elif not segs:
                raise ValueError(f"{text!r}: a list index without a key")
            segs.append(int(m.group(1)))
            i = m.end()
            pending = False
            if i < len(text) and text[i] == ".":
                i += 1
            continue
        buf += ch
        pending = True
        i += 1
    if pending or buf:
        segs.append(buf)
    if not segs or any(s == "" for s in segs):
        raise ValueError(f"{text!r}: empty key")
    return tuple(segs)


def typed_value(text: str, *, string: bool = False) -> Any:
    """How ``--set`` types a value (helm's strvals): true/false/null, integers without a leading zero, else text.

    ``{a,b}`` is a list. With ``string`` (``--set-string``) the text is kept as it is."""
    if string:
        return text
    if text.startswith("{") and text.endswith("}"):
        inner = text[1:-1]
        return [typed_value(p) for p in _split_commas(inner)] if inner else []
    low = text.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if low == "null":
        return None
    if text == "0":
        return 0
    if text and text[0] != "0" and re.fullmatch(r"[+-]?\d+", text) and -(2**63) <= int(text) < 2**63:
        return int(text)
    return text


def _split_commas(text: str) -> list[str]:
    parts, buf, i = [], "", 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            buf += text[i + 1]
            i += 2
            continue
        if text[i] == ",":
            parts.append(buf)
            buf = ""
        else:
            buf += text[i]
        i += 1
    parts.append(buf)
    return parts


def merge_maps(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """``b`` merged over ``a`` as Helm merges ``-f`` files and Flux merges its values (``MergeMaps``): maps merge
    key by key, anything else (lists too) is replaced. Neither input is modified."""
    out: dict[str, Any] = dict(a)
    for k, v in b.items():
        old = out.get(k)
        if isinstance(v, Mapping) and isinstance(old, Mapping):
            out[k] = merge_maps(old, v)
        else:
            out[k] = v
    return out


def coalesce(defaults: Mapping[str, Any], user: Mapping[str, Any]) -> dict[str, Any]:
    """The values a chart's templates see: ``user`` over the chart's ``defaults``, a user ``null`` deleting the
    key (Helm's coalescing, for the chart itself; subcharts are not modelled)."""
    out: dict[str, Any] = {}
    for k, v in defaults.items():
        out[k] = copy.deepcopy(v)
    for k, v in user.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = coalesce(out[k], v)
        else:
            out[k] = _drop_nulls(v)
    return out


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    return copy.deepcopy(value)


def get_value(values: Any, path: Sequence[str | int]) -> Any:
    """The value at ``path``, or ABSENT."""
    at = values
    for seg in path:
        if isinstance(seg, int):
            if not isinstance(at, list) or not 0 <= seg < len(at):
                return ABSENT
            at = at[seg]
        else:
            if not isinstance(at, Mapping) or seg not in at:
                return ABSENT
            at = at[seg]
    return at


def set_value(values: dict[str, Any], path: Sequence[str | int], value: Any) -> None:
    """Set ``path`` in ``values`` (in place), creating maps on the way; a list position must exist or be the end."""
    at: Any = values
    for i, seg in enumerate(path):
        last = i == len(path) - 1
        nxt = path[i + 1] if not last else None
        if isinstance(seg, int):
            if not isinstance(at, list) or seg > len(at):
                raise ValueError(f"{format_key(path)}: no list item {seg}")
            if seg == len(at):
                at.append(value if last else ([] if isinstance(nxt, int) else {}))
            elif last:
                at[seg] = value
            at = at[seg]
        else:
            if not isinstance(at, dict):
                raise ValueError(f"{format_key(path)}: {format_key(path[:i])} is not a map")
            if last:
                at[seg] = value
            else:
                if not isinstance(at.get(seg), dict | list):
                    at[seg] = [] if isinstance(nxt, int) else {}
                at = at[seg]


def with_value(values: Mapping[str, Any], path: Sequence[str | int], value: Any) -> dict[str, Any]:
    """A deep copy of ``values`` with ``path`` set (``value`` ABSENT: removed)."""
    out = copy.deepcopy(dict(values))
    if value is ABSENT:
        parent = get_value(out, path[:-1])
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
        elif isinstance(parent, list) and isinstance(path[-1], int) and 0 <= path[-1] < len(parent):
            del parent[path[-1]]
        return out
    set_value(out, path, value)
    return out


def leaves(values: Any, at: ValuesPath = ()) -> Iterator[tuple[ValuesPath, Any]]:
    """Every scalar (and empty collection) with its path, maps in key order, lists by position."""
    if isinstance(values, Mapping) and values:
        for k in values:
            if isinstance(k, str):
                yield from leaves(values[k], (*at, k))
    elif isinstance(values, list) and values:
        for i, v in enumerate(values):
            yield from leaves(v, (*at, i))
    else:
        yield at, values


def collections(values: Any, at: ValuesPath = ()) -> Iterator[tuple[ValuesPath, Any]]:
    """Every map and list (the root excluded) with its path."""
    if isinstance(values, Mapping):
        for k, v in values.items():
            if isinstance(k, str) and isinstance(v, Mapping | list):
                yield (*at, k), v
                yield from collections(v, (*at, k))
    elif isinstance(values, list):
        for i, v in enumerate(values):
            if isinstance(v, Mapping | list):
                yield (*at, i), v
                yield from collections(v, (*at, i))


def setter_layer(values: Any, path: Sequence[str | int]) -> ValuesPath | None:
    """Does a layer's ``values`` decide ``path``? The part of ``path`` it holds: ``path`` itself, or the list (or
    scalar) on its way that replaces everything under it when merged. None when it does not touch ``path``."""
    at = values
    for i, seg in enumerate(path):
        if isinstance(seg, int):
            return tuple(path[:i])  # the list above replaces whole
        if not isinstance(at, Mapping) or seg not in at:
            return None
        at = at[seg]
        if i < len(path) - 1 and not isinstance(at, Mapping):
            return tuple(path[: i + 1]) if isinstance(at, list) and isinstance(path[i + 1], int) else None
    return tuple(path)


def field_path(path: Sequence[str | int]) -> FieldPath:
    """A values path as a path of the repo's path grammar (for the YAML editor)."""
    return tuple(Index(s) if isinstance(s, int) else Key(s) for s in path)
