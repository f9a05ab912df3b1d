"""One object's preparation for the drift engine: normalize both sides, diff, parse managedFields. Pure.

Both ``needs_dry_run`` and ``compute_drift`` need it; the pipeline makes it once per object and cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from writeback.drift.deciding import table_default
from writeback.drift.diffing import Leaf, diff
from writeback.drift.listkeys import KeyResolver, resolver
from writeback.drift.normalizing import normalize
from writeback.drift.ownership import Ownership, parse_managed_fields
from writeback.drift.settling import Settle, compacted, settle
from writeback.model import DesiredObject, Drift, Dropped, LiveObject, Side
from writeback.settings import Policy

__all__ = ["ObjectOutcome", "PreparedObject", "prepare", "reuse", "settled_first"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectOutcome:
    """What ``engine.compute_drift`` found for one object that Git declares and live holds: its drifts, its dropped
    differences and its notes, in the engine's order. A caller that proves every input of the object unchanged
    (``pipeline.warming``) hands it back through ``known`` instead of having it computed again."""

    drifts: tuple[Drift, ...]
    dropped: tuple[Dropped, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedObject:
    """One object's work that needs neither a dry-run nor the Git head: normalize both sides, diff, and
    (unless every difference is a well-known default) parse managedFields.

    Made by :func:`prepare_object`; ``needs_dry_run`` and ``compute_drift`` reuse it instead of redoing it.
    It is only used for the very ``live``/``desired`` objects (and offline mode) it was made from.
    The bodies are shared: nothing downstream mutates them. A settled object keeps only its ``dropped``
    (the pipeline holds one preparation per object for the whole cycle).
    """

    live: LiveObject
    desired: DesiredObject
    offline: bool
    settled: bool  # settled by its managers, or every difference is a well-known default: no drift
    dropped: tuple[Dropped, ...]  # normalization drops (and the table defaults when ``settled``)
    by_managers: bool = False  # settled by its managers (``settling``): nothing normalized
    # The rest is None (leaves empty) when settled:
    live_body: dict[str, Any] | None = None  # normalized
    git_body: dict[str, Any] | None = None  # normalized
    leaves: tuple[Leaf, ...] = ()  # the differences left to decide
    ownership: Ownership | None = None
    keys: KeyResolver | None = None


def prepare(
    obj: LiveObject,
    d: DesiredObject,
    *,
    offline: bool,
    policy: Policy | None = None,
    context: Settle | None = None,
    explain: bool = True,
) -> PreparedObject:
    """Settle the object by its managers (``settling``, given a ``context``), else normalize both sides, diff, and
    parse managedFields unless every difference is a well-known default. Without ``explain`` a settled object keeps
    no dropped fields (only ``--explain`` lists them)."""
    ref = d.ref
    if context is not None and policy is not None:
        first = settled_first(obj, d, offline=offline, policy=policy, context=context, explain=explain)
        if first is not None:
            return first
    nl = normalize(obj.body, ref=ref, side=Side.LIVE, declared=d.body)
    ng = normalize(d.body, ref=ref, side=Side.GIT)
    dropped = [*nl.dropped, *ng.dropped]
    # Fast path: most objects differ only by well-known defaults; their managedFields need no parsing.
    leaves = diff(live=nl.body, git=ng.body, keys=resolver(kind=ref.kind, learned={}))
    rules: list[str] = []
    for x in leaves:
        why = table_default(kind=ref.kind, leaf=x, live=nl.body, offline=offline)
        if why is None:
            break
        rules.append(why.text)
    else:
        if not explain:
            return PreparedObject(live=obj, desired=d, offline=offline, settled=True, dropped=())
        for x, r in zip(leaves, rules, strict=True):
            dropped.append(Dropped(resource=ref, path=x.path, rule=r, side=Side.LIVE))
        return PreparedObject(live=obj, desired=d, offline=offline, settled=True, dropped=tuple(dropped))
    own = parse_managed_fields(obj.body)
    keys = resolver(kind=ref.kind, learned=own.list_keys)
    if own.list_keys:  # the API server's own list keys may match items the static table does not know
        leaves = diff(live=nl.body, git=ng.body, keys=keys)
    return PreparedObject(
        live=obj,
        desired=d,
        offline=offline,
        live_body=nl.body,
        git_body=ng.body,
        dropped=tuple(dropped),
        leaves=tuple(leaves),
        settled=False,
        ownership=own,
        keys=keys,
    )


def settled_first(
    obj: LiveObject,
    d: DesiredObject,
    *,
    offline: bool,
    policy: Policy,
    context: Settle,
    explain: bool = True,
    compact: bool = False,
) -> PreparedObject | None:
    """The first stage alone (``settling``): the object's preparation when its managers settle it, else None.
    ``compact``: the preparation holds :func:`settling.compacted` of ``obj`` (its identity and versions, no body),
    for a caller that drops the rest (``pipeline.settled``: list pages settled as they arrive)."""
    why = settle(obj, d, policy=policy, context=context)
    if why is None:
        return None
    whole = (Dropped(resource=d.ref, path=(), rule=f"{why.text} [rule: {why.rule}]", side=Side.LIVE),)
    return PreparedObject(live=compacted(obj) if compact else obj, desired=d, offline=offline, settled=True,
                          by_managers=True, dropped=whole if explain else ())  # fmt: skip


def reuse(
    prepared: PreparedObject | None,
    obj: LiveObject,
    d: DesiredObject,
    *,
    offline: bool,
    policy: Policy | None = None,
    context: Settle | None = None,
    explain: bool = True,
) -> PreparedObject:
    """``prepared`` when it was made from these very objects, else a fresh preparation."""
    if prepared is not None and prepared.live is obj and prepared.desired is d and prepared.offline == offline:
        return prepared
    return prepare(obj, d, offline=offline, policy=policy, context=context, explain=explain)
