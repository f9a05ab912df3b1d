"""Argo CD ``spec.ignoreDifferences``: the drifts an Application tells Argo CD to ignore. Pure.

An entry names objects (``group`` and ``kind`` are globs, a missing group is the core group ""; ``name`` and
``namespace`` narrow it) and what to ignore in them: ``jsonPointers``, ``jqPathExpressions`` of the simple forms
Argo CD users write (anything else becomes a note and is not used), and ``managedFieldsManagers`` (every field
these managers own). A drift at or below a selected node is ignored; a list position becomes the item's key
selector when the list is keyed (``containers/0`` is ``containers[name=web]``), as drift paths name items.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.core.diffing import get_at
from writeback.core.listkeys import KeyResolver, item_selector
from writeback.model import FieldOwner, FieldPath, Index, Key, ObjectRef, Segment, Select

__all__ = ["IgnoreDifference", "compile_ignore_differences", "glob_matches"]


def glob_matches(pattern: str | None, value: str | None) -> bool:
    """``pattern`` as Argo CD globs it; no pattern, ``""`` and ``*`` match anything."""
    return pattern is None or pattern in ("", "*") or fnmatch.fnmatchcase(value or "", pattern)


# ------------------------------------------------------------------ jq (the simple forms Argo CD users write)

_JQ_TOKEN = re.compile(
    r"""\s*(?:
      \.(?P<name>[A-Za-z_][A-Za-z0-9_-]*)
    | \.?"(?P<quoted>(?:[^"\\]|\\.)*)"
    | \.?\[\s*"(?P<bracketed>(?:[^"\\]|\\.)*)"\s*\]
    | (?P<pipe>\|)(?=\s*\.)
    | (?P<all>\.?\[\s*\])
    | \.?\[\s*(?P<index>[0-9]+)\s*\]
    | \|\s*select\(\s*\.(?P<field>[A-Za-z_][A-Za-z0-9_-]*)\s*
        (?:(?P<cmp>==|!=)\s*(?P<value>"(?:[^"\\]|\\.)*"|[0-9]+|true|false)
          |\|\s*(?P<fn>startswith|endswith|contains|test)\(\s*(?P<arg>"(?:[^"\\]|\\.)*")\s*\))\s*\)
    )""",
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class _JqStep:
    key: str | None = None  # a map key; None: a list item
    index: int | None = None
    where: tuple[str, str, Any] | None = None  # (field, operator, value)


def _jq_parse(expr: str) -> tuple[_JqStep, ...] | None:
    """The steps of a simple jq path expression, or None when it is not one of the supported forms."""
    try:
        return _jq_steps(expr)
    except (ValueError, re.error):  # a bad escape in a string, or a bad regular expression for test()
        return None


def _jq_steps(expr: str) -> tuple[_JqStep, ...] | None:
    steps: list[_JqStep] = []
    pos, text = 0, expr.strip()
    while pos < len(text):
        m = _JQ_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            return None
        pos = m.end()
        if m["name"] or m["quoted"] is not None or m["bracketed"] is not None:
            raw = m["name"] or m["quoted"] or m["bracketed"] or ""
            steps.append(_JqStep(key=raw if m["name"] else json.loads(f'"{raw}"')))
        elif m["pipe"]:
            continue
        elif m["all"]:
            steps.append(_JqStep())
        elif m["index"]:
            steps.append(_JqStep(index=int(m["index"])))
        elif m["field"]:
            if not steps or steps[-1].key is not None or steps[-1].where is not None:
                return None
            op, val = (m["cmp"], json.loads(m["value"])) if m["cmp"] else (m["fn"], json.loads(m["arg"]))
            if op == "test":
                re.compile(val)
            steps[-1] = _JqStep(index=steps[-1].index, where=(m["field"], op, val))
    return tuple(steps) if steps else None


def _jq_where(item: Any, where: tuple[str, str, Any]) -> bool:
    fld, op, want = where
    got = item.get(fld) if isinstance(item, Mapping) else None
    if op == "==":
        return bool(got == want)
    if op == "!=":
        return bool(got != want)
    if not isinstance(got, str) or not isinstance(want, str):
        return False
    if op == "test":
        return re.search(want, got) is not None
    return {"startswith": got.startswith, "endswith": got.endswith, "contains": got.__contains__}[op](want)


def _jq_match(steps: tuple[_JqStep, ...], path: FieldPath, bodies: Sequence[Any]) -> bool:
    if len(path) < len(steps):
        return False
    for j, step in enumerate(steps):
        seg = path[j]
        if step.key is not None:
            if seg != Key(step.key):
                return False
            continue
        if isinstance(seg, Key):
            return False
        item_path = path[: j + 1]
        items = [get_at(b, item_path) for b in bodies]
        if step.index is not None and not any(_position(b, item_path) == step.index for b in bodies):
            return False
        if step.where is not None and not any(_jq_where(i, step.where) for i in items):
            return False
    return True


def _position(body: Any, item_path: FieldPath) -> int | None:
    seg = item_path[-1]
    if isinstance(seg, Index):
        return seg.index
    items = get_at(body, item_path[:-1])
    if isinstance(seg, Select) and isinstance(items, list):
        want = dict(seg.keys)
        for i, item in enumerate(items):
            sel = item_selector(item, tuple(want))
            if sel is not None and dict(sel.keys) == want:
                return i
    return None


# ------------------------------------------------------------------ JSON pointers


def _pointer_tokens(pointer: str) -> tuple[str, ...] | None:
    if not pointer.startswith("/"):
        return None
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/"))


def _pointer_path(tokens: tuple[str, ...], body: Any, keys: KeyResolver) -> FieldPath | None:
    """A JSON pointer as a path; list positions become the item's key selector when the list is keyed."""
    out: list[Segment] = []
    node = body
    for t in tokens:
        if isinstance(node, list):
            if not t.isdigit() or int(t) >= len(node):
                return None
            names = keys(tuple(out))
            sel = item_selector(node[int(t)], names) if names else None
            out.append(sel or Index(int(t)))
            node = node[int(t)]
        elif isinstance(node, Mapping):
            out.append(Key(t))
            node = node.get(t)
        else:
            out.append(Key(t))
            node = None
    return tuple(out)


# ------------------------------------------------------------------ the entries


@dataclass(frozen=True, slots=True, kw_only=True)
class IgnoreDifference:
    """One compiled ``spec.ignoreDifferences`` entry."""

    kind: str = "*"
    group: str = ""
    name: str | None = None
    namespace: str | None = None
    pointers: tuple[tuple[str, ...], ...] = ()
    jq: tuple[tuple[_JqStep, ...], ...] = ()
    managers: tuple[str, ...] = ()

    def is_about(self, ref: ObjectRef) -> bool:
        """Whether the entry is about ``ref``: as Argo CD matches, a group of ``""`` is the core group only."""
        group = self.group == ref.group or (bool(self.group) and glob_matches(self.group, ref.group))
        return group and all(
            glob_matches(p, v)
            for p, v in ((self.kind, ref.kind), (self.name, ref.name), (self.namespace, ref.namespace))
        )

    def reason(
        self, *, ref: ObjectRef, path: FieldPath, owner: FieldOwner | None, live: Any, git: Any, keys: KeyResolver
    ) -> str | None:
        """Why the entry ignores the drift at ``path`` of ``ref``, or None."""
        if not self.is_about(ref):
            return None
        if owner is not None and any(glob_matches(m, owner.manager) for m in self.managers):
            return f"Argo CD ignoreDifferences: managedFieldsManagers {owner.manager}"
        for tokens in self.pointers:
            target = _pointer_path(tokens, live, keys) or _pointer_path(tokens, git, keys)
            if target is not None and tuple(path[: len(target)]) == target:
                return "Argo CD ignoreDifferences: jsonPointers /" + "/".join(tokens)
        for steps in self.jq:
            if _jq_match(steps, path, (live, git)):
                return "Argo CD ignoreDifferences: jqPathExpressions"
        return None


def compile_ignore_differences(
    entries: Sequence[Mapping[str, Any]], *, notes: list[str]
) -> tuple[IgnoreDifference, ...]:
    """The entries compiled; a pointer or an expression that cannot be used becomes a note."""
    return tuple(
        _entry(entry, where=f"Argo CD spec.ignoreDifferences[{i}]", notes=notes) for i, entry in enumerate(entries)
    )


def _entry(entry: Mapping[str, Any], *, where: str, notes: list[str]) -> IgnoreDifference:
    pointers: list[tuple[str, ...]] = []
    for p in entry.get("jsonPointers") or ():
        tokens = _pointer_tokens(str(p))
        if tokens is None:
            notes.append(f"{where}: jsonPointer {p!r} does not start with '/': not used")
        else:
            pointers.append(tokens)
    jq: list[tuple[_JqStep, ...]] = []
    for expr in entry.get("jqPathExpressions") or ():
        steps = _jq_parse(str(expr))
        if steps is None:
            notes.append(f"{where}: jqPathExpression {expr!r} is not one of the supported simple forms: not used")
        else:
            jq.append(steps)
    return IgnoreDifference(
        kind=str(entry.get("kind") or "*"),
        group=str(entry.get("group") or ""),
        name=entry.get("name") or None,
        namespace=entry.get("namespace") or None,
        pointers=tuple(pointers),
        jq=tuple(jq),
        managers=tuple(str(m) for m in entry.get("managedFieldsManagers") or ()),
    )
