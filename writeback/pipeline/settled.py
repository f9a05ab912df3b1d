"""Live objects settled as their list pages arrive (issue 23, section 3): memory near the floor for one-shot runs.

A one-shot ``diff``/``plan`` hands each listed object to :meth:`PageSettler.keep` as soon as its page is decoded.
An object that Git declares and its managers settle (``drift.settling``) is kept as its settled preparation alone,
holding a compact copy of it (identity, uid, resourceVersion: ``settling.compacted``); its body and managedFields go
with the page, and so does its Git body (the settler holds the desired objects: ``PageSettler.declared``, a settled
one released). Every other object is kept whole, for the dry-runs and the engine. ``compute_drift`` takes the settled
preparations through ``prepared``, so its report is the one a whole snapshot makes.

The first stage needs Git's last change of each object's source, which ``git log --since`` reads; its bound must be at
or before every Apply time it is compared with (a file it does not list changed before the bound, hence before the
Apply: the same answer as any earlier bound). :class:`GitTimes` asks Git when the first object needs it, bounded a
little before that object's oldest write, and asks again, further back, when a later object wrote earlier: each
object is settled with a bound at or before its own oldest write, so the rules stay exact (``docs/drift.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from writeback.adapters.git import revisions
from writeback.bodies import PackedBody
from writeback.drift.engine import (
    EngineOptions,
    GitChanges,
    PreparedObject,
    Settle,
    oldest_write,
    settle_context,
    settle_first,
)
from writeback.drift.evidence.controller_filled import autoscaled
from writeback.kube.refs import Identity
from writeback.model import DesiredObject, LiveObject

__all__ = ["GitTimes", "PageSettler", "settle_after"]

_MARGIN = 60  # seconds: a bound asked for one object reaches this far before its oldest write


class GitTimes:
    """When Git last changed each file under the compared scope (``revisions.change_times``), read lazily: bounded by
    the oldest write asked for so far, read again further back when an older one is asked for."""

    def __init__(self, *, repo: Path, commit: str | None, scope: str, rendered: bool) -> None:
        self._repo, self._commit, self._scope, self._rendered = repo, commit, scope, rendered
        self._changes: GitChanges | None = None
        self._failed = commit is None  # no commit (the files as they are): Git tells nothing
        self.reads = 0  # how many times git was asked

    @property
    def changes(self) -> GitChanges | None:
        """What Git said last (None: not asked yet, or git could not tell)."""
        return None if self._failed else self._changes

    def reaching(self, written: int, *, margin: int = _MARGIN) -> GitChanges | None:
        """Change times bounded at or before ``written`` (an object's oldest write, seconds since the epoch); None when
        git cannot tell (then nothing more is settled by its managers). Each read further back at least doubles the
        distance, so a list of objects written over a long time costs few reads."""
        known = self._changes
        if self._failed or (known is not None and known.since <= written):
            return self.changes
        reach = margin if known is None else max(margin, known.since - written)
        since = written - reach
        assert self._commit is not None
        self.reads += 1
        by_file = revisions.change_times(self._repo, self._commit, path=self._scope, since=since)
        if by_file is None:
            self._failed = True
            return None
        self._changes = GitChanges(since=since, by_file=by_file, rendered=self._rendered)
        return self._changes


def settle_after(times: GitTimes, *, live: Sequence[LiveObject], head: Sequence[DesiredObject] | None) -> Settle | None:
    """The first stage's context for a snapshot held whole (a dump, the service's watch cache): bounded by the oldest
    write of all of ``live``, read once."""
    since = oldest_write(live)
    if since is None:
        return None
    return settle_context(times.reaching(since, margin=0), head=head)


class PageSettler:
    """:meth:`keep` for ``snapshots.snapshot``: an object its managers settle is kept as a compact copy, its settled
    preparation kept aside (:meth:`prepared`); every other object is kept as listed.

    The settler holds the desired objects from then on (:attr:`declared`, in their order): a packed body
    (``bodies.PackedBody``) is unpacked when its live object arrives, and a settled object's Git body is released
    (``DesiredObject.released``), so the caller lets go of its own sequence and compares :meth:`finish`'s objects
    (the preparations hold those very objects)."""

    def __init__(
        self,
        *,
        desired: Sequence[DesiredObject],
        options: EngineOptions,
        times: GitTimes,
        head: Sequence[DesiredObject] | None,
    ) -> None:
        self.declared: list[DesiredObject] = list(desired)
        self._at = {d.ref.identity: n for n, d in enumerate(self.declared)}  # where each is in ``declared``
        self._seen = bytearray(len(self.declared))  # by position: its live object came already
        self._options = options
        self._times = times
        self._head = head
        self._context: Settle | None = None
        self._settled: dict[Identity, PreparedObject] = {}

    def keep(self, obj: LiveObject) -> LiveObject:
        ident = obj.ref.identity
        pos = self._at.get(ident)
        if pos is None:
            return obj  # not Git's: "new" or not compared, decided from its body
        d = self.declared[pos]
        if type(d.body) is PackedBody:  # its live object is here: Git's body is read from now on
            d = self.declared[pos] = d.unpacked()
        written = oldest_write((obj,))
        if written is None:
            return obj  # no write time: never settled by its managers
        context = self._settle(written)
        first = not self._seen[pos]
        self._seen[pos] = 1
        # a second copy (a list started again, an object in two scopes) stays whole: one preparation per identity
        if context is None or not first or autoscaled(((obj.ref, obj.body),)):
            return obj  # an autoscaler is read whole by the engine (what it scales)
        prep = settle_first(live=obj, desired=d, options=self._options, settle=context)
        if prep is None:
            return obj
        self._settled[prep.live.ref.identity] = prep  # Git's identity when the compact copy shares Git's reference
        if prep.desired is not d:  # its Git body released: the settler's copy is the one compared from now on
            self.declared[pos] = prep.desired
        return prep.live

    def finish(self) -> tuple[DesiredObject, ...]:
        """:attr:`declared` once the lists are done, every body unpacked (those no live object came for: missing
        objects, a list that failed), settled ones released."""
        self.declared = [d.unpacked() for d in self.declared]
        return tuple(self.declared)

    def _settle(self, written: int) -> Settle | None:
        changes = self._times.reaching(written)
        if changes is None:
            self._context = None
        elif self._context is None:
            self._context = settle_context(changes, head=self._head)
        elif self._context.changes is not changes:
            self._context = replace(self._context, changes=changes)
        return self._context

    def context(self) -> Settle | None:
        """The first stage's context for the objects left whole: its bound is at or before each one's oldest write."""
        return self._context

    def prepared(self, live: Sequence[LiveObject]) -> Mapping[Identity, PreparedObject]:
        """The settled preparations of the compact objects in ``live`` (the snapshot as kept), by identity."""
        out: dict[Identity, PreparedObject] = {}
        for o in live:
            prep = self._settled.get(o.ref.identity)
            if prep is not None and prep.live is o:
                out[o.ref.identity] = prep
        return out
