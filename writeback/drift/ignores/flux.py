"""Flux annotations that take an object out of Flux's hands, so its live changes are not drift. Pure.

``kustomize.toolkit.fluxcd.io/ssa: IfNotPresent`` or ``Ignore`` (Flux creates the object but does not enforce it)
and ``kustomize.toolkit.fluxcd.io/reconcile: disabled`` (Flux leaves it alone), on the live or the Git object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from writeback.decisions import Explanation, Rule
from writeback.kube.paths import lookup_as_served
from writeback.kube.pathtypes import Key

__all__ = ["flux_skip"]

_FLUX_SSA = "kustomize.toolkit.fluxcd.io/ssa"
_FLUX_RECONCILE = "kustomize.toolkit.fluxcd.io/reconcile"


def flux_skip(*bodies: Any) -> Explanation | None:
    """Flux does not enforce this object (``ssa: IfNotPresent|Ignore``, ``reconcile: disabled``), or None."""
    for body in bodies:
        ann = lookup_as_served(body, (Key("metadata"), Key("annotations")))
        if not isinstance(ann, Mapping):
            continue
        ssa = str(ann.get(_FLUX_SSA, "")).lower()
        if ssa in ("ifnotpresent", "ignore"):
            return _why(f"Flux does not enforce this object ({_FLUX_SSA}: {ann[_FLUX_SSA]})")
        if str(ann.get(_FLUX_RECONCILE, "")).lower() == "disabled":
            return _why(f"Flux does not reconcile this object ({_FLUX_RECONCILE}: disabled)")
    return None


def _why(text: str) -> Explanation:
    return Explanation(Rule.FLUX_ANNOTATION, text)
