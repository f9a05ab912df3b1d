"""Which kinds and files a detection compares: ``--kinds``, a partial ``--live`` dump, and the dump's own file.

- ``--kinds deploy,cm`` compares those kinds only, on both sides, online and offline (a named kind that a dump does
  not hold is compared: its Git objects are ``deleted``).
- Without ``--kinds``, a ``--live`` dump that holds no object of a kind Git declares is taken as a dump of other
  kinds (``kubectl get deploy,cm -o yaml``), not as a cluster where every object of that kind was deleted: such a
  kind is not compared, and one note says which (``--live holds no HorizontalPodAutoscaler, Service: not
  compared``). A dump that holds none of Git's kinds at all is still an input error (``detecting._empty_dump``).
- A ``--live`` file or directory inside the repository is never read as a Git manifest (:func:`excluded`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from writeback.errors import InputError
from writeback.kube.kindnames import matches
from writeback.kube.refs import ObjectRef
from writeback.model import DesiredObject, LiveObject

__all__ = ["Compared", "by_kinds", "excluded", "kind_label", "partial_dump"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Compared:
    """The Git objects (and, offline, the dumped objects) a detection compares, and what it says about the rest."""

    desired: tuple[DesiredObject, ...]
    live: tuple[LiveObject, ...] = ()
    note: str | None = None


def kind_label(group: str, kind: str, *, groups_of: dict[str, set[str]]) -> str:
    """``Service``, or ``Issuer.cert-manager.io`` where two groups use the same kind name."""
    return f"{kind}.{group}" if len(groups_of.get(kind, ())) > 1 and group else kind


def _kinds(refs: Iterable[ObjectRef]) -> set[tuple[str, str]]:
    return {(r.group, r.kind) for r in refs}


def by_kinds(names: Sequence[str], *, desired: Sequence[DesiredObject], live: Sequence[LiveObject] = ()) -> Compared:
    """``--kinds``: only the objects of the named kinds, on both sides; a name that matches no kind of either side
    is an input error (a typo would otherwise compare nothing, silently)."""
    known = _kinds(d.ref for d in desired) | _kinds(o.ref for o in live)
    unknown = [n for n in names if not any(matches(n, group=g, kind=k) for g, k in known)]
    if unknown:
        have = ", ".join(sorted({k for _, k in known})) or "none"
        raise InputError(f"--kinds {','.join(unknown)}: no such kind in Git or the live side (they have: {have})")

    def wanted(ref: ObjectRef) -> bool:
        return any(matches(n, group=ref.group, kind=ref.kind) for n in names)

    return Compared(desired=tuple(d for d in desired if wanted(d.ref)), live=tuple(o for o in live if wanted(o.ref)))


def partial_dump(*, desired: Sequence[DesiredObject], dump: Sequence[LiveObject]) -> Compared:
    """Without ``--kinds``: Git's objects of the kinds the dump holds; the other kinds are not compared (a note
    names them). When the dump holds none of Git's kinds, everything is kept (the caller's empty-dump error)."""
    dumped = _kinds(o.ref for o in dump)
    declared = _kinds(d.ref for d in desired)
    missing = declared - dumped
    if not missing or missing == declared:
        return Compared(desired=tuple(desired), live=tuple(dump))
    groups_of: dict[str, set[str]] = {}
    for g, k in declared | dumped:
        groups_of.setdefault(k, set()).add(g)
    names = ", ".join(sorted(kind_label(g, k, groups_of=groups_of) for g, k in missing))
    kept = tuple(d for d in desired if (d.ref.group, d.ref.kind) in dumped)
    note = f"--live holds no {names}: not compared (name the kinds to compare with --kinds)"
    return Compared(desired=kept, live=tuple(dump), note=note)


def excluded(live_path: Path | None, *, repo: Path) -> frozenset[str]:
    """The ``--live`` file or directory, relative to the repository's top, when it lies inside the repository."""
    if live_path is None:
        return frozenset()
    try:
        rel = live_path.resolve().relative_to(repo.resolve())
    except ValueError:
        return frozenset()
    return frozenset({rel.as_posix()}) if rel.as_posix() != "." else frozenset()
