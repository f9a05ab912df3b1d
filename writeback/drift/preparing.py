"""One object's preparation for the drift engine: normalize both sides, diff, parse managedFields. Pure.

Both ``needs_dry_run`` and ``compute_drift`` need it; the pipeline makes it once per object and cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from writeback.drift.deciding import Role, manager_role, table_default
from writeback.drift.diffing import Leaf, diff
from writeback.drift.listkeys import KeyResolver, resolver
from writeback.drift.normalizing import normalize
from writeback.drift.ownership import Ownership, entry_owner, parse_managed_fields
from writeback.drift.settling import SCALED, Settle, compacted, replicas, settle
from writeback.kube.pathtypes import Key
from writeback.model import DesiredObject, Drift, Dropped, FieldOwner, LiveObject, Op, Side
from writeback.settings import Policy

__all__ = ["ObjectOutcome", "PreparedObject", "is_trimmed", "prepare", "reuse", "settled_first", "trimmed"]


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
    # With ``by_managers`` and not ``settled``: a controller's /scale write changed spec.replicas (``settling.SCALED``),
    # the one leaf left; ``ownership`` holds who owns that field alone, the bodies are not normalized (None).
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


_REPLICAS = (Key("spec"), Key("replicas"))


def _scaled(
    obj: LiveObject, d: DesiredObject, *, offline: bool, policy: Policy, compact: bool, trim: bool
) -> PreparedObject | None:
    """An object settled by its managers but for ``spec.replicas``, which a controller's /scale write owns: no drift
    when live has Git's value (``compact``: kept as a settled object is), else that one difference, as diffing the
    normalized bodies finds it (normalizing leaves an integer ``replicas`` as it is); None (the normal path) when the
    field's owner, as the engine reads managedFields, is not a controller. ``trim``: that difference's object keeps
    no managedFields (its ownership is read here) and no status (never compared): :func:`trimmed`."""
    pair = replicas(obj.body, d.body)
    assert pair is not None  # settle checked it
    if pair[0] == pair[1]:
        if compact:
            obj, d = compacted(obj, ref=d.ref), d.released()
        return PreparedObject(live=obj, desired=d, offline=offline, settled=True, by_managers=True, dropped=())
    own = _replicas_ownership(obj.body)
    owner = own.owner_of(_REPLICAS) if own is not None else None
    if own is None or owner is None or manager_role(policy, owner.manager) is not Role.CONTROLLER:
        return None
    leaf = Leaf(path=_REPLICAS, op=Op.CHANGE, live=pair[0], git=pair[1])
    return PreparedObject(live=trimmed(obj) if trim else obj, desired=d, offline=offline, settled=False,
                          by_managers=True, dropped=(), leaves=(leaf,), ownership=own)  # fmt: skip


def trimmed(obj: LiveObject) -> LiveObject:
    """``obj`` without ``metadata.managedFields`` and ``status`` (shallow copies: the rest is shared). What a one-shot
    run keeps of an object :data:`SCALED` leaves one replicas line to decide, when no rule will prepare it again
    (no Argo CD or Flux ignore rule, no dry-run): its preparation holds the ownership of that line already."""
    meta = obj.body.get("metadata")
    body = {k: v for k, v in obj.body.items() if k != "status"}
    if isinstance(meta, Mapping):
        body["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return LiveObject(ref=obj.ref, body=body, source=obj.source)


def is_trimmed(prep: PreparedObject) -> bool:
    """Does ``prep`` hold a :func:`trimmed` object (its ownership read from managedFields it no longer carries)?"""
    meta = prep.live.body.get("metadata")
    own = prep.ownership
    return own is not None and own.present and isinstance(meta, Mapping) and "managedFields" not in meta


def _replicas_ownership(body: Mapping[str, Any]) -> Ownership | None:
    """Who owns ``spec.replicas``, as :func:`parse_managed_fields` reads it, without parsing every tree: the entries
    whose tree owns it as a leaf (the only field the rules read here); None when an entry owns it otherwise (``spec``
    as a whole, or as an inner node)."""
    entries = body["metadata"]["managedFields"]  # settle checked that they are there
    managers: list[FieldOwner] = []
    owners: list[FieldOwner] = []
    for entry in entries:
        owner = entry_owner(entry)
        managers.append(owner)
        tree = entry.get("fieldsV1")
        spec = tree.get("f:spec") if isinstance(tree, Mapping) else None
        if spec is None:
            continue
        if not isinstance(spec, Mapping) or not spec:
            return None
        replicas = spec.get("f:replicas")
        if replicas is None:
            continue
        if isinstance(replicas, Mapping) and replicas:
            return None
        owners.append(owner)
    return Ownership(present=True, managers=tuple(managers), _leaves={_REPLICAS: tuple(owners)})


def settled_first(
    obj: LiveObject,
    d: DesiredObject,
    *,
    offline: bool,
    policy: Policy,
    context: Settle,
    explain: bool = True,
    compact: bool = False,
    trim: bool = False,
) -> PreparedObject | None:
    """The first stage alone (``settling``): the object's preparation when its managers settle it, else None.
    ``compact``: the preparation holds :func:`settling.compacted` of ``obj`` (its identity and versions, no body)
    and ``d`` released (``DesiredObject.released``: no body), for a caller that drops the rest
    (``pipeline.settled``: list pages settled as they arrive); with ``trim`` too, an object left one replicas line
    to decide is :func:`trimmed` (for a caller whose rules never prepare it again)."""
    why = settle(obj, d, policy=policy, context=context, scale=not explain)
    if why is None:
        return None
    if why is SCALED:  # settled but for the replicas a controller's /scale write owns: the whole object, read again
        return _scaled(obj, d, offline=offline, policy=policy, compact=compact, trim=compact and trim)
    whole = (Dropped(resource=d.ref, path=(), rule=f"{why.text} [rule: {why.rule}]", side=Side.LIVE),)
    return PreparedObject(live=compacted(obj, ref=d.ref) if compact else obj, desired=d.released() if compact else d,
                          offline=offline, settled=True, by_managers=True,
                          dropped=whole if explain else ())  # fmt: skip


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
