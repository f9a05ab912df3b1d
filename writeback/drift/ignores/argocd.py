"""Argo CD ``spec.ignoreDifferences``: the drifts an Application tells Argo CD to ignore. Pure.

An entry names objects (``group`` and ``kind`` are globs, a missing group is the core group ""; ``name`` and
``namespace`` narrow it) and what to ignore in them, read as Argo CD reads it:

- ``jsonPointers``: RFC 6901 pointers (``kube.jsonpatch.parse_pointer``);
- ``jqPathExpressions``: jq path expressions, evaluated by libjq (the ``jq`` package) as ``[path(EXPR)]`` on the
  live and on the Git object, as Argo CD evaluates them with gojq;
- ``managedFieldsManagers``: every field these managers own.

A pointer or an expression selects nodes; a drift at or below one is ignored. A list position becomes the item's
key selector when the list is keyed (``containers/0`` is ``containers[name=web]``), as drift paths name items
(``writeback.drift.ignores.pointers``).

Before jq sees an expression, it is held to the forms people write for Argo CD: field and string keys, ``[]``,
``[N]``, ``["key"]``, ``?``, ``|`` and ``select(...)``, whose condition compares single values (``==``, ``!=``,
``<``, ``<=``, ``>``, ``>=``, ``and``, ``or``, ``not``, ``has``, ``startswith``, ``endswith``, ``contains``,
``test``). Anything else becomes a note and is not used. So no expression reads the environment, prints, or runs
long: there is no ``,``, ``..``, iteration inside a condition, function definition, variable, string
interpolation or arithmetic. jq's runtime errors (their messages may quote the object's values, and are never
shown) select nothing, as in Argo CD.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jq

from writeback.drift.ignores.pointers import at_or_below, field_path
from writeback.drift.listkeys import KeyResolver
from writeback.errors import PathSyntaxError
from writeback.kube.jsonpatch import parse_pointer
from writeback.kube.pathtypes import FieldPath
from writeback.kube.refs import ObjectRef
from writeback.model import Explanation, FieldOwner, Rule

__all__ = ["IgnoreDifference", "compile_ignore_differences", "glob_matches"]


def glob_matches(pattern: str | None, value: str | None) -> bool:
    """``pattern`` as Argo CD globs it; no pattern, ``""`` and ``*`` match anything."""
    return pattern is None or pattern in ("", "*") or fnmatch.fnmatchcase(value or "", pattern)


# ------------------------------------------------------------------ the forms of jq an expression may use

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<string>"(?:[^"\\]|\\[^(])*")
    | (?P<field>\.[A-Za-z_][A-Za-z0-9_]*)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<number>[0-9]+)
    | (?P<symbol>==|!=|<=|>=|\.\.|[.\[\]()|?<>])
    )""",
    re.VERBOSE,
)
_CONDITION_WORDS = frozenset(
    {"and", "or", "not", "has", "startswith", "endswith", "contains", "test", "true", "false", "null"}
)
_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">="})


def _tokens(expr: str) -> list[tuple[str, str]] | None:
    text, pos, out = expr.strip(), 0, []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.lastgroup is None:
            return None
        pos = m.end()
        out.append((m.lastgroup, m[m.lastgroup]))
    return out


def _simple(expr: str) -> bool:
    """Whether ``expr`` keeps to the forms in the module docstring (jq then checks its syntax)."""
    tokens = _tokens(expr)
    if not tokens:
        return False
    depth, i = 0, 0
    while i < len(tokens):
        kind, text = tokens[i]
        before = tokens[i - 1][1] if i else ""
        if text == "[":  # ``[]`` (not inside a condition), ``[N]`` or ``["key"]``
            inner = tokens[i + 1 : i + 3]
            if inner[:1] == [("symbol", "]")] and depth == 0:
                i += 2
                continue
            if len(inner) == 2 and inner[0][0] in ("number", "string") and inner[1] == ("symbol", "]"):
                i += 3
                continue
            return False
        if text in ("..", "]"):
            return False
        if kind == "word" and text != "select" and (depth == 0 or text not in _CONDITION_WORDS):
            return False
        if depth == 0 and (text in _COMPARISONS or kind == "number" or (kind == "string" and before != ".")):
            return False
        depth += {"(": 1, ")": -1}.get(text, 0) if kind == "symbol" else 0
        if depth < 0:
            return False
        i += 1
    return depth == 0


class _Expression:
    """One jq path expression, compiled once, with the paths it selected in the last few objects it was asked about."""

    __slots__ = ("_memo", "_program", "text")

    def __init__(self, *, text: str, program: Any) -> None:
        self.text = text
        self._program = program
        self._memo: dict[int, tuple[Any, KeyResolver, tuple[FieldPath, ...]]] = {}

    def selected(self, body: Any, keys: KeyResolver) -> tuple[FieldPath, ...]:
        """The drift paths of the nodes the expression selects in ``body``."""
        memo = self._memo.get(id(body))
        if memo is not None and memo[0] is body and memo[1] is keys:
            return memo[2]
        paths = self._evaluate(body, keys)
        if len(self._memo) >= 4:  # the live and the Git side of the object being decided, and the previous one
            self._memo.clear()
        self._memo[id(body)] = (body, keys, paths)
        return paths

    def _evaluate(self, body: Any, keys: KeyResolver) -> tuple[FieldPath, ...]:
        if not isinstance(body, Mapping):
            return ()
        try:
            found = self._program.input_text(json.dumps(body, default=str)).first()
        except (TypeError, ValueError):  # jq's runtime error: nothing selected
            return ()
        paths = (field_path(raw, body, keys) for raw in found if isinstance(raw, list))
        return tuple(p for p in paths if p is not None)


def _compile(expr: str) -> _Expression | None:
    program = _program(expr) if _simple(expr) else None
    return None if program is None else _Expression(text=expr, program=program)


@functools.lru_cache(maxsize=256)
def _program(expr: str) -> Any | None:
    """The compiled ``[path(EXPR)]`` (jq compiles its builtins each time: milliseconds), or None on a syntax error.

    Cached because the rules are built per run and per dry-run check; a compiled program is safe to share between
    threads (each evaluation takes its own jq state).
    """
    try:
        return jq.compile(f"[path({expr})]")
    except (ValueError, UnicodeError):
        return None


# ------------------------------------------------------------------ the entries


@dataclass(frozen=True, slots=True, kw_only=True)
class IgnoreDifference:
    """One compiled ``spec.ignoreDifferences`` entry."""

    kind: str = "*"
    group: str = ""
    name: str | None = None
    namespace: str | None = None
    pointers: tuple[tuple[str, ...], ...] = ()
    expressions: tuple[_Expression, ...] = ()
    managers: tuple[str, ...] = ()

    def is_about(self, ref: ObjectRef) -> bool:
        """Whether the entry is about ``ref``: as Argo CD matches, a group of ``""`` is the core group only."""
        group = self.group == ref.group or (bool(self.group) and glob_matches(self.group, ref.group))
        return group and all(
            glob_matches(p, v)
            for p, v in ((self.kind, ref.kind), (self.name, ref.name), (self.namespace, ref.namespace))
        )

    def explain(
        self, *, ref: ObjectRef, path: FieldPath, owner: FieldOwner | None, live: Any, git: Any, keys: KeyResolver
    ) -> Explanation | None:
        """Why the entry ignores the drift at ``path`` of ``ref``, or None."""
        if not self.is_about(ref):
            return None
        if owner is not None and any(glob_matches(m, owner.manager) for m in self.managers):
            return _why(f"managedFieldsManagers {owner.manager}")
        for tokens in self.pointers:
            target = field_path(tokens, live, keys) or field_path(tokens, git, keys)
            if target is not None and at_or_below(path, target):
                return _why("jsonPointers /" + "/".join(tokens))
        for expression in self.expressions:
            selected = (*expression.selected(live, keys), *expression.selected(git, keys))
            if any(at_or_below(path, target) for target in selected):
                return _why("jqPathExpressions")
        return None


def _why(what: str) -> Explanation:
    return Explanation(Rule.ARGOCD_IGNORE_DIFFERENCES, f"Argo CD ignoreDifferences: {what}")


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
        text = str(p)
        if not text.startswith("/"):
            notes.append(f"{where}: jsonPointer {p!r} does not start with '/': not used")
            continue
        try:
            pointers.append(parse_pointer(text))
        except PathSyntaxError:
            notes.append(f"{where}: jsonPointer {p!r} has an escape other than ~0 and ~1: not used")
    expressions: list[_Expression] = []
    for expr in entry.get("jqPathExpressions") or ():
        compiled = _compile(str(expr))
        if compiled is None:
            notes.append(f"{where}: jqPathExpression {expr!r} is not one of the supported simple forms: not used")
        else:
            expressions.append(compiled)
    return IgnoreDifference(
        kind=str(entry.get("kind") or "*"),
        group=str(entry.get("group") or ""),
        name=entry.get("name") or None,
        namespace=entry.get("namespace") or None,
        pointers=tuple(pointers),
        expressions=tuple(expressions),
        managers=tuple(str(m) for m in entry.get("managedFieldsManagers") or ()),
    )
