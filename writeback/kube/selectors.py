"""Kubernetes label selectors in their text form (``app=web,tier in (a,b),!canary``), parsed and matched as
apimachinery's ``labels.Parse`` does them. Pure.

The grammar (``k8s.io/apimachinery/pkg/labels``)::

    selector    ::= "" | requirement ("," requirement)*
    requirement ::= "!" KEY | KEY [ ("=" | "==" | "!=") VALUE? | ("in" | "notin") "(" VALUES ")" | (">" | "<") INT ]

A key is a qualified name (an optional DNS-subdomain prefix and ``/``, then a name of at most 63 characters); a value
a label value (at most 63 characters). Matching: ``=``/``==``/``in`` need the label with one of the values;
``!=``/``notin`` hold when the label is missing or has none of them; ``KEY`` and ``!KEY`` test presence; ``>`` and
``<`` compare the label's value as an integer (a label that is no integer does not match). An empty selector matches
everything. Flux's ignore rules select objects by their labels and by their annotations with this grammar.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from writeback.errors import InputError

__all__ = ["LabelSelector", "SelectorSyntaxError", "parse_selector"]


class SelectorSyntaxError(InputError):
    """A label selector that apimachinery would refuse; the message says where and why."""


class _Op(enum.Enum):
    EQUALS = "="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER = ">"
    LESS = "<"


@dataclass(frozen=True, slots=True)
class _Requirement:
    key: str
    op: _Op
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op in (_Op.EQUALS, _Op.IN):
            return has and value in self.values
        if self.op in (_Op.NOT_EQUALS, _Op.NOT_IN):
            return not has or value not in self.values
        if self.op is _Op.EXISTS:
            return has
        if self.op is _Op.DOES_NOT_EXIST:
            return not has
        if not has or value is None or _INT.fullmatch(value) is None:
            return False
        (bound,) = self.values
        return int(value) > int(bound) if self.op is _Op.GREATER else int(value) < int(bound)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed selector: every requirement must hold."""

    text: str
    requirements: tuple[_Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def keeping(self, keep: Callable[[str], bool]) -> LabelSelector:
        """The requirements about the label keys ``keep`` accepts (the same text: it names what was asked)."""
        return LabelSelector(text=self.text, requirements=tuple(r for r in self.requirements if keep(r.key)))


# ---------------------------------------------------------------- the lexer: apimachinery's tokens

_SPECIAL = "!=,()<>"
_TOKEN = re.compile(r"\s*(?:(?P<symbol>!=|==|[!=,()<>])|(?P<word>[^\s!=,()<>]+))")
_INT = re.compile(r"[+-]?[0-9]+")
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_END = ""


def _lex(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None:  # pragma: no cover - every character is a symbol, a word character or a space
            raise SelectorSyntaxError(f"label selector {text!r}: unexpected {text[pos]!r}")
        out.append(m["symbol"] or m["word"])
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _lex(text)
        self.at = 0

    def peek(self) -> str:
        return self.tokens[self.at] if self.at < len(self.tokens) else _END

    def take(self) -> str:
        token = self.peek()
        self.at += 1
        return token

    def fail(self, found: str, expected: str) -> SelectorSyntaxError:
        shown = found if found != _END else "end of string"
        return SelectorSyntaxError(f"label selector {self.text!r}: found {shown!r}, expected {expected}")

    def selector(self) -> LabelSelector:
        requirements: list[_Requirement] = []
        while self.peek() != _END:
            requirements.append(self.requirement())
            token = self.take()
            if token == _END:
                break
            if token != ",":
                raise self.fail(token, "',' or end of string")
            if not _identifier(self.peek()) and self.peek() != "!":
                raise self.fail(self.peek(), "an identifier after ','")
        return LabelSelector(text=self.text, requirements=tuple(requirements))

    def requirement(self) -> _Requirement:
        negated = self.peek() == "!"
        if negated:
            self.take()
        key = self.take()
        if not _identifier(key):
            raise self.fail(key, "an identifier")
        _check_key(self.text, key)
        if self.peek() in (_END, ","):
            return _Requirement(key, _Op.DOES_NOT_EXIST if negated else _Op.EXISTS)
        if negated:
            raise self.fail(self.peek(), "',' or end of string")
        token = self.take()
        if token in ("=", "=="):
            return _Requirement(key, _Op.EQUALS, frozenset({self.exact()}))
        if token == "!=":
            return _Requirement(key, _Op.NOT_EQUALS, frozenset({self.exact()}))
        if token in (">", "<"):
            bound = self.exact()
            if _INT.fullmatch(bound) is None:
                raise SelectorSyntaxError(f"label selector {self.text!r}: {key}{token}{bound}: not an integer")
            return _Requirement(key, _Op.GREATER if token == ">" else _Op.LESS, frozenset({bound}))
        if token in ("in", "notin"):
            return _Requirement(key, _Op.IN if token == "in" else _Op.NOT_IN, self.value_set())
        raise self.fail(token, "one of '=', '==', '!=', 'in', 'notin', '>', '<'")

    def exact(self) -> str:
        token = self.peek()
        if token in (_END, ","):
            return ""
        if not _identifier(token):
            raise self.fail(token, "a value")
        self.take()
        _check_value(self.text, token)
        return token

    def value_set(self) -> frozenset[str]:
        token = self.take()
        if token != "(":
            raise self.fail(token, "'('")
        values: set[str] = set()
        expect_value = True
        while True:
            token = self.take()
            if token == ")":
                if expect_value:
                    values.add("")  # "()" and "a,)" hold the empty value, as apimachinery reads them
                return frozenset(values)
            if token == ",":
                if expect_value:
                    values.add("")
                expect_value = True
                continue
            if not _identifier(token) or not expect_value:
                raise self.fail(token, "a value, ',' or ')'")
            _check_value(self.text, token)
            values.add(token)
            expect_value = False


def _identifier(token: str) -> bool:
    return token != _END and not any(c in _SPECIAL for c in token)


def _check_key(text: str, key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    ok = (
        0 < len(name) <= 63
        and _NAME.fullmatch(name) is not None
        and (not slash or (0 < len(prefix) <= 253 and _SUBDOMAIN.fullmatch(prefix) is not None))
    )
    if not ok:
        raise SelectorSyntaxError(f"label selector {text!r}: {key!r} is not a valid label key")


def _check_value(text: str, value: str) -> None:
    if len(value) > 63 or (value and _NAME.fullmatch(value) is None):
        raise SelectorSyntaxError(f"label selector {text!r}: {value!r} is not a valid label value")


@functools.lru_cache(maxsize=256)
def parse_selector(text: str) -> LabelSelector:
    """The selector in ``text``; SelectorSyntaxError naming it and the token where it goes wrong otherwise.
    Cached: the same few selectors are matched against every object of a snapshot."""
    return _Parser(text).selector()
