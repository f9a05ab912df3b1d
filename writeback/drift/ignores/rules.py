"""Ignore rules: which drifts are not a person's change to write back. Pure.

Five sources, each with its own module, compiled together by :func:`build_ignores`:

- configured rules (``ignore:`` in the config), here: never blanket, each names paths (the path grammar, with
  ``*``, ``[*]``, ``**`` and list-key selectors) and may be narrowed to a kind, group, name, namespace and managers;
- webhook presets (``writeback.drift.ignores.webhooks``): what a known injector adds;
- Argo CD ``ignoreDifferences`` (``writeback.drift.ignores.argocd``): JSON pointers, jq path expressions and
  field managers;
- Flux's ignore rules (``writeback.drift.ignores.flux``): a Kustomization's ``spec.ignore``, a HelmRelease's
  ``spec.driftDetection.ignore``: JSON pointers for the objects a target selects;
- Flux annotations that take an object out of Flux's hands (``writeback.drift.ignores.flux``), checked per
  object by the engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from writeback.drift.ignores.argocd import IgnoreDifference, compile_ignore_differences, glob_matches
from writeback.drift.ignores.flux import FluxIgnore, compile_flux_ignores
from writeback.drift.ignores.webhooks import Presets, choose_presets
from writeback.drift.listkeys import KeyResolver
from writeback.gitops.base import PathIgnore
from writeback.kube.paths import match, parse_pattern
from writeback.kube.pathtypes import FieldPath, PatternSegment
from writeback.kube.refs import ObjectRef
from writeback.model import Explanation, FieldOwner, Op, Rule
from writeback.settings import IgnoreRule

__all__ = ["Ignores", "build_ignores"]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Configured:
    patterns: tuple[tuple[PatternSegment, ...], ...]
    reason: str
    kind: str | None = None
    group: str | None = None
    name: str | None = None
    namespace: str | None = None
    managers: tuple[str, ...] = ()

    def applies(self, ref: ObjectRef, owner: FieldOwner | None) -> bool:
        if not all(
            glob_matches(p, v)
            for p, v in ((self.kind, ref.kind), (self.name, ref.name), (self.namespace, ref.namespace))
        ):
            return False
        if self.group is not None and not (
            self.group == ref.group or (self.group and glob_matches(self.group, ref.group))
        ):
            return False
        return not self.managers or (owner is not None and any(glob_matches(m, owner.manager) for m in self.managers))


@dataclass(frozen=True, slots=True, kw_only=True)
class Ignores:
    rules: tuple[_Configured, ...] = ()
    presets: Presets = field(default_factory=Presets)
    argo: tuple[IgnoreDifference, ...] = ()
    flux_rules: tuple[FluxIgnore, ...] = ()
    notes: tuple[str, ...] = ()

    def configured(self, *, ref: ObjectRef, path: FieldPath, owner: FieldOwner | None) -> Explanation | None:
        """The configured ignore rule that matches (its reason is the text), or None."""
        for rule in self.rules:
            if rule.applies(ref, owner) and any(match(p, path) for p in rule.patterns):
                return Explanation(Rule.IGNORE_RULE, rule.reason) if rule.reason else None  # "": no reason to ignore
        return None

    def argocd(
        self, *, ref: ObjectRef, path: FieldPath, owner: FieldOwner | None, live: Any, git: Any, keys: KeyResolver
    ) -> Explanation | None:
        """The first Argo CD ``ignoreDifferences`` entry that matches, or None."""
        for entry in self.argo:
            why = entry.explain(ref=ref, path=path, owner=owner, live=live, git=git, keys=keys)
            if why is not None:
                return why
        return None

    def flux(
        self, *, ref: ObjectRef, path: FieldPath, live: Any, git: Any, raw_live: Any, keys: KeyResolver
    ) -> Explanation | None:
        """The first Flux ignore rule that matches, or None."""
        for rule in self.flux_rules:
            why = rule.explain(ref=ref, path=path, live=live, git=git, raw_live=raw_live, keys=keys)
            if why is not None:
                return why
        return None

    def preset(self, *, path: FieldPath, op: Op) -> Explanation | None:
        """The webhook preset that explains an added field, or None."""
        return self.presets.explain(path=path, op=op)


def build_ignores(
    *,
    rules: Sequence[IgnoreRule],
    presets: Sequence[str],
    argocd: Sequence[Mapping[str, Any]] = (),
    flux: Sequence[PathIgnore] = (),
) -> Ignores:
    """Compile configured rules, the enabled presets, Argo CD ``ignoreDifferences`` entries and Flux ignore rules."""
    notes: list[str] = []
    compiled = tuple(
        _Configured(
            patterns=tuple(parse_pattern(p) for p in r.paths),
            reason=r.reason,
            kind=r.kind,
            group=r.group,
            name=r.name,
            namespace=r.namespace,
            managers=r.managers,
        )
        for r in rules
    )
    chosen = choose_presets(presets, notes=notes)
    argo = compile_ignore_differences(argocd, notes=notes)
    flux_rules = compile_flux_ignores(flux, notes=notes)
    return Ignores(rules=compiled, presets=chosen, argo=argo, flux_rules=flux_rules, notes=tuple(notes))
