"""The engine's index of one cycle's objects, kept from one service cycle to the next (issue 23 §2). Pure.

``engine.compute_drift`` indexes a cycle's objects (live and desired by identity, the Secrets left out, the
autoscalers) and decides each object Git declares; each one's share of the report is a :class:`Part`. A service
cycle (``pipeline.warming``) keeps the :class:`Index` with those parts, and :func:`advance` moves it to the next
cycle's objects by what changed, when Git's objects, the head's and the Secret policy are the same: the live
objects that are not the very objects of the last cycle (the watch cache hands out the same objects while they are
unchanged) came or went, and only their identities are decided again (``Index.changed``). The report is assembled
from the parts in the order of Git's objects, as the whole path makes it. Where that cannot be done exactly (an
identity twice among the live objects, Git's objects changed), :func:`advance` builds the index anew.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from writeback.drift.evidence.controller_filled import AUTOSCALER_KINDS, autoscaled
from writeback.errors import InputError
from writeback.kube.refs import Identity
from writeback.model import DesiredObject, Drift, Dropped, LiveObject

__all__ = ["Index", "Part", "advance", "autoscalers", "build", "index_desired"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Part:
    """One object Git declares, its share of the report: the drift of a missing live object, or its outcome."""

    drifts: tuple[Drift, ...]
    dropped: tuple[Dropped, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Index:
    """One cycle's objects indexed as the engine compares them, and each compared object's :class:`Part`."""

    live: tuple[LiveObject, ...]
    # id() of each live object (``live`` holds them: no id is reused meanwhile); None: an index nothing advances
    # (a one-shot run's: ``build(followed=False)``)
    by_id: Mapping[int, LiveObject] | None
    desired: tuple[DesiredObject, ...]
    head: tuple[DesiredObject, ...] | None
    include_secrets: bool
    want: Mapping[Identity, DesiredObject]  # Git's objects compared (no Secret unless included), in Git's order
    positions: Mapping[Identity, int] | None  # each one's place in that order (None with ``by_id``)
    have: Mapping[Identity, LiveObject]  # the live objects compared, the first of an identity
    ahead: Mapping[Identity, DesiredObject] | None  # the head's objects, when given
    live_secrets: frozenset[Identity]  # Secrets left out (unless included), live and in Git
    git_secrets: frozenset[Identity]
    extra: frozenset[Identity]  # live objects Git does not declare (``new`` candidates)
    kinds: frozenset[tuple[str, str]]  # the (group, kind) of Git's objects compared
    scalers: Mapping[Identity, str]  # ``autoscalers`` of the live and desired objects
    exact: bool  # no identity twice among the live objects: the index can be advanced
    parts: Mapping[Identity, Part]  # the compared objects' parts that hold anything
    changed: frozenset[Identity] | None = None  # the identities to decide in this cycle (None: all of them)
    arrived: tuple[LiveObject, ...] = ()  # the live objects not held by the last cycle (with ``changed``)


def index_desired(objs: Sequence[DesiredObject]) -> dict[Identity, DesiredObject]:
    out: dict[Identity, DesiredObject] = {}
    for d in objs:
        prior = out.get(d.ref.identity)
        if prior is not None:
            raise InputError(
                f"{d.ref} is declared twice in Git: {prior.file} (document {prior.document}) "
                f"and {d.file} (document {d.document})"
            )
        out[d.ref.identity] = d
    return out


def autoscalers(*, live: Iterable[LiveObject], desired: Iterable[DesiredObject]) -> dict[Identity, str]:
    """The objects an HPA or a ScaledObject (live or in Git) scales, by identity, each with that autoscaler's name."""
    return autoscaled([*((o.ref, o.body) for o in live), *((o.ref, o.body) for o in desired)])


def build(
    *,
    live: Sequence[LiveObject],
    desired: Sequence[DesiredObject],
    head: Sequence[DesiredObject] | None,
    include_secrets: bool,
    scalers: Mapping[Identity, str] | None = None,
    followed: bool = True,
) -> Index:
    """The index of these objects, with no part yet (every identity is to be decided). Without ``followed`` (no later
    cycle advances it) it holds no ``by_id`` and no ``positions``: 10,000 objects' worth of two dicts less."""
    keep = include_secrets
    live_t, desired_t = tuple(live), tuple(desired)
    want = index_desired([d for d in desired_t if keep or not d.ref.is_secret])
    ahead = index_desired([d for d in head if keep or not d.ref.is_secret]) if head is not None else None
    have: dict[Identity, LiveObject] = {}
    secrets: set[Identity] = set()
    for obj in live_t:
        if not keep and obj.ref.is_secret:
            secrets.add(obj.ref.identity)
        else:
            have.setdefault(obj.ref.identity, obj)
    return Index(
        live=live_t,
        by_id={id(o): o for o in live_t} if followed else None,
        desired=desired_t,
        head=tuple(head) if head is not None else None,
        include_secrets=include_secrets,
        want=want,
        positions={ident: n for n, ident in enumerate(want)} if followed else None,
        have=have,
        ahead=ahead,
        live_secrets=frozenset(secrets),
        git_secrets=frozenset() if keep else frozenset(d.ref.identity for d in desired_t if d.ref.is_secret),
        extra=frozenset(have.keys() - want.keys()),
        kinds=frozenset((d.ref.group, d.ref.kind) for d in want.values()),
        scalers=scalers if scalers is not None else autoscalers(live=live_t, desired=desired_t),
        exact=len(have) + len(secrets) == len(live_t),
        parts={},
    )


def advance(
    index: Index,
    *,
    live: Sequence[LiveObject],
    desired: Sequence[DesiredObject],
    head: Sequence[DesiredObject] | None,
    include_secrets: bool,
) -> Index:
    """``index`` moved to these objects, ``changed`` naming the identities to decide again; a new index (everything
    to decide) when Git's objects, the head's or the Secret policy differ, or the change cannot be followed exactly."""
    head_t = tuple(head) if head is not None else None
    if (
        index.by_id is None
        or not index.exact
        or include_secrets != index.include_secrets
        or tuple(desired) != index.desired
        or head_t != index.head
    ):
        return build(live=live, desired=desired, head=head, include_secrets=include_secrets)
    live_t = tuple(live)
    now = set(map(id, live_t))
    known = index.by_id
    gone = [known[i] for i in known.keys() - now]
    came = [o for o in live_t if id(o) not in known]
    if not gone and not came:
        return replace(index, live=live_t, changed=frozenset(), arrived=())
    moved = _moved(index, gone=gone, came=came)
    if moved is None:
        return build(live=live, desired=desired, head=head, include_secrets=include_secrets)
    have, secrets, changed = moved
    by_id = dict(known)
    for o in gone:
        del by_id[id(o)]
    by_id.update((id(o), o) for o in came)
    scalers = index.scalers
    if any(o.ref.kind in AUTOSCALER_KINDS for o in (*gone, *came)):
        scalers = autoscalers(live=live_t, desired=index.desired)
        changed |= {i for i in scalers.keys() | index.scalers.keys() if scalers.get(i) != index.scalers.get(i)}
    return replace(index, live=live_t, by_id=by_id, have=have, live_secrets=frozenset(secrets),
                   extra=frozenset(have.keys() - index.want.keys()), scalers=scalers,
                   changed=frozenset(changed), arrived=tuple(came))  # fmt: skip


def _moved(
    index: Index, *, gone: list[LiveObject], came: list[LiveObject]
) -> tuple[dict[Identity, LiveObject], set[Identity], set[Identity]] | None:
    """``have``, the live Secrets and the identities changed after ``gone`` went and ``came`` came; None when an
    identity would be held twice."""
    have = dict(index.have)
    secrets = set(index.live_secrets)
    changed: set[Identity] = set()
    keep = index.include_secrets
    for o in gone:
        ident = o.ref.identity
        if not keep and o.ref.is_secret:
            secrets.discard(ident)
        elif have.get(ident) is o:
            del have[ident]
            changed.add(ident)
        else:
            return None
    for o in came:
        ident = o.ref.identity
        if not keep and o.ref.is_secret:
            if ident in secrets:
                return None
            secrets.add(ident)
        elif ident in have:
            return None
        else:
            have[ident] = o
            changed.add(ident)
    return have, secrets, changed
