"""Flux's own drift ignore rules: the objects Flux leaves alone, and the fields its ignore rules leave out. Pure.

- Annotations that take an object out of Flux's hands: ``kustomize.toolkit.fluxcd.io/ssa: IfNotPresent`` or
  ``Ignore`` (Flux creates the object but does not enforce it), ``kustomize.toolkit.fluxcd.io/reconcile: disabled``
  (Flux leaves it alone) and ``helm.toolkit.fluxcd.io/driftDetection: disabled`` (helm-controller does not correct
  its drift), as an annotation or a label (any case) of the live or the Git object (:func:`flux_skip`).
- Ignore rules (a Kustomization's ``spec.ignore``, a HelmRelease's ``spec.driftDetection.ignore``; read by
  ``writeback.gitops.flux``), compiled by :func:`compile_flux_ignores` and read as fluxcd/pkg ``ssa/jsondiff`` reads
  them: a rule's ``target`` selects objects (``group``, ``version``, ``kind``, ``name``, ``namespace`` are regular
  expressions that must match the whole value; ``labelSelector`` and ``annotationSelector`` are label selectors
  over the labels and annotations of the object Flux applies: Git's, over what live has besides); its ``paths`` are
  JSON pointers whose nodes Flux removes from both sides before it compares, so a drift at or below one is ignored.
  ``""`` is the whole object. A list position may count from the end (``-1``), as Flux's JSON patch allows; it
  becomes the item's key selector (``writeback.drift.ignores.pointers``). A rule Flux would refuse (a regular
  expression or a selector that does not parse) becomes a note and ignores nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.decisions import Explanation, Rule
from writeback.drift.ignores.pointers import at_or_below, field_path
from writeback.drift.listkeys import KeyResolver
from writeback.errors import PathSyntaxError
from writeback.gitops.base import PathIgnore
from writeback.kube.jsonpatch import parse_pointer
from writeback.kube.paths import lookup_as_served
from writeback.kube.pathtypes import FieldPath, Key
from writeback.kube.refs import ObjectRef
from writeback.kube.selectors import LabelSelector, SelectorSyntaxError, parse_selector

__all__ = ["FluxIgnore", "compile_flux_ignores", "flux_skip"]

_FLUX_SSA = "kustomize.toolkit.fluxcd.io/ssa"
_FLUX_RECONCILE = "kustomize.toolkit.fluxcd.io/reconcile"
_HELM_DRIFT = "helm.toolkit.fluxcd.io/driftDetection"


def flux_skip(*bodies: Any) -> Explanation | None:
    """Flux does not enforce this object (``ssa: IfNotPresent|Ignore``, ``reconcile: disabled``, helm-controller's
    ``driftDetection: disabled``), or None."""
    for body in bodies:
        for field in ("annotations", "labels"):  # Flux reads either (fluxcd/pkg ssa/utils.AnyInMetadata)
            meta = _metadata(body, field)
            ssa = meta.get(_FLUX_SSA, "").lower()
            if ssa in ("ifnotpresent", "ignore"):
                return _skip(f"Flux does not enforce this object ({_FLUX_SSA}: {meta[_FLUX_SSA]})")
            if meta.get(_FLUX_RECONCILE, "").lower() == "disabled":
                return _skip(f"Flux does not reconcile this object ({_FLUX_RECONCILE}: disabled)")
            if meta.get(_HELM_DRIFT, "").lower() == "disabled":
                return _skip(f"Flux does not correct this object's drift ({_HELM_DRIFT}: disabled)")
    return None


def _skip(text: str) -> Explanation:
    return Explanation(Rule.FLUX_ANNOTATION, text)


def _metadata(body: Any, name: str) -> Mapping[str, str]:
    found = lookup_as_served(body, (Key("metadata"), Key(name)))
    if not isinstance(found, Mapping):
        return {}
    return {str(k): str(v) for k, v in found.items()}


# ---------------------------------------------------------------- ignore rules


@dataclass(frozen=True, slots=True, kw_only=True)
class FluxIgnore:
    """One compiled Flux ignore rule."""

    where: str
    pointers: tuple[tuple[str, tuple[str, ...]], ...]  # (as written, its tokens)
    patterns: tuple[tuple[str, re.Pattern[str]], ...] = ()  # (group|version|kind|name|namespace, its expression)
    labels: LabelSelector | None = None
    annotations: LabelSelector | None = None

    def selects(self, ref: ObjectRef, *, live: Any, git: Any) -> bool:
        """Whether the rule's target selects ``ref`` (its labels and annotations: Git's over live's)."""
        group, _, version = ref.api_version.rpartition("/")
        values = {"group": group, "version": version, "kind": ref.kind, "name": ref.name,
                  "namespace": ref.namespace or ""}  # fmt: skip
        if not all(pattern.fullmatch(values[what]) for what, pattern in self.patterns):
            return False
        for selector, field in ((self.labels, "labels"), (self.annotations, "annotations")):
            if selector is not None and not selector.matches({**_metadata(live, field), **_metadata(git, field)}):
                return False
        return True

    def explain(
        self, *, ref: ObjectRef, path: FieldPath, live: Any, git: Any, raw_live: Any, keys: KeyResolver
    ) -> Explanation | None:
        """Why the rule ignores the drift at ``path`` of ``ref`` (``live``/``git``: the bodies compared, ``raw_live``:
        the live object as read, whose labels and annotations the target sees), or None."""
        if not self.pointers or not self.selects(ref, live=raw_live, git=git):
            return None
        for text, tokens in self.pointers:
            target = field_path(tokens, live, keys, position=_position)
            target = target or field_path(tokens, git, keys, position=_position)
            if target is not None and at_or_below(path, target):
                shown = text or '"" (the whole object)'
                return Explanation(Rule.FLUX_IGNORE, f"{self.where} ignores {shown}")
        return None


_INDEX = re.compile(r"[+-]?[0-9]+")


def _position(items: list[Any], token: str | int) -> int | None:
    """A pointer token's list position as Flux's JSON patch reads it: a decimal integer, negative from the end."""
    text = str(token)
    if _INDEX.fullmatch(text) is None:
        return None
    at = int(text)
    at = at + len(items) if at < 0 else at
    return at if 0 <= at < len(items) else None


_TARGET = ("group", "version", "kind", "name", "namespace")


def compile_flux_ignores(rules: Sequence[PathIgnore], *, notes: list[str]) -> tuple[FluxIgnore, ...]:
    """The rules compiled; a pointer, an expression or a selector that cannot be used becomes a note."""
    out: list[FluxIgnore] = []
    for rule in rules:
        compiled = _compile(rule, notes=notes)
        if compiled is not None:
            out.append(compiled)
    return tuple(out)


def _compile(rule: PathIgnore, *, notes: list[str]) -> FluxIgnore | None:
    patterns: list[tuple[str, re.Pattern[str]]] = []
    for what in _TARGET:
        text = getattr(rule, what)
        if not text:
            continue
        try:
            patterns.append((what, re.compile(f"(?:{text})")))
        except re.error as e:
            notes.append(f"{rule.where}: target.{what} {text!r} is not a regular expression ({e}); Flux refuses the "
                         "rule: not used")  # fmt: skip
            return None
    selectors: dict[str, LabelSelector | None] = {}
    for what, text in (("labels", rule.label_selector), ("annotations", rule.annotation_selector)):
        try:
            selectors[what] = parse_selector(text) if text else None
        except SelectorSyntaxError as e:
            notes.append(f"{rule.where}: {e}; Flux refuses the rule: not used")
            return None
    pointers: list[tuple[str, tuple[str, ...]]] = []
    for text in rule.paths:
        if text and not text.startswith("/"):
            notes.append(f"{rule.where}: path {text!r} is not a JSON pointer (it does not start with '/'): not used")
            continue
        try:
            pointers.append((text, parse_pointer(text)))
        except PathSyntaxError:
            notes.append(f"{rule.where}: path {text!r} has an escape other than ~0 and ~1: not used")
    return FluxIgnore(where=rule.where, pointers=tuple(pointers), patterns=tuple(patterns), **selectors)
