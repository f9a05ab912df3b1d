"""A target's results kept from one service cycle to the next (issue 23, section 2): a warm cycle costs what changed.

The service holds one ``WarmState`` per target (``service.serving.TargetRuntime``) and passes it down in
``Edges.memo``; ``diff``, ``plan`` and ``run --once`` pass none and compute everything. Each kept result carries
the exact inputs it was made from, and is used again only when every one of them is unchanged:

- **the Git side** (the desired objects at the applied revision and at the head): by the source kind, the path, the
  id of the path's tree at both commits (``git rev-parse C:PATH``; the commits themselves where a note names them),
  and the namespace defaults; only for a path whose working tree is pristine (``revisions.pristine``), which holds
  no symbolic link, and for a source kind that reads files rather than renders them (a rendering reaches beyond the
  path: a Kustomize ``../base``, a remote chart);
- **each object's outcome in the engine** (``drift.engine.ObjectOutcome``): by its live object (uid,
  resourceVersion, and the very body, or an equal one), its Git document (the desired object: what the Git blob of
  its source gave), the head's document (pending fields), the applied revision, the engine's options (the policy,
  the ignore rules, the controller's ignore rules, the fingerprint key: the policy's digest) and the autoscaler
  that scales it. An object whose dry-run failed is never kept (its note must be made again);
- **dry-run answers**: by (the digest of the manifest sent, the live resourceVersion, the server's version);
- **change sets** (``plan``): by the written and whole-object drifts that produce them (their full text; the
  held-back ones are only listed, ``sources.changesets.with_held_back``), the apps of the drifted objects, the
  spec, the repository's tree (pristine, with no symbolic link) and the live objects' refs;
- **the PR's verification line**: by the change set (its full text but the held-back list), the resourceVersions of
  its objects and the server's version.

Plain data, but for the ids of Git trees (``git_key``, through ``adapters.git.revisions``). One cycle at a time
per target (the scheduler's per-target lock); results not used by a cycle are forgotten at its end, so what is kept
stays the size of one cycle.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from writeback.adapters.git import revisions
from writeback.drift.engine import EngineOptions, GitChanges, ObjectOutcome, oldest_write
from writeback.drift.indexing import Index, advance, build
from writeback.kube.refs import Identity
from writeback.model import DesiredObject, DryRun, DryRunKind, LiveObject

__all__ = ["Answer", "ObjectRound", "Warm", "WarmState", "ask", "digest", "git_key"]


class Answer(Protocol):
    """A verification line, and whether the API server answered (``pipeline.verification.Verified``)."""

    @property
    def line(self) -> str: ...

    @property
    def answered(self) -> bool: ...


def digest(value: Any) -> str:
    """A digest of decoded JSON (or anything ``repr`` spells fully), for a key that must not hold the value."""
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return hashlib.sha256(text.encode()).hexdigest()


def _version(body: Mapping[str, Any]) -> tuple[str, str]:
    meta = body.get("metadata")
    if not isinstance(meta, Mapping):
        return "", ""
    return str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Kept:
    """One object's outcome and the inputs it was computed from."""

    live: Mapping[str, Any]
    version: tuple[str, str]  # uid, resourceVersion
    desired: DesiredObject
    head: DesiredObject | None
    scaler: str | None
    outcome: ObjectOutcome


@dataclass(slots=True, kw_only=True)
class _Inputs:
    live: LiveObject
    desired: DesiredObject
    head: DesiredObject | None
    scaler: str | None


def _same(a: object, b: object) -> bool:
    return a is b or a == b


@dataclass(slots=True, kw_only=True)
class ObjectRound:
    """One cycle's use of the kept object outcomes: ``reusable`` per object, ``record`` what the engine computed,
    ``finish`` to keep this cycle's results (and only them)."""

    kept: Mapping[Identity, _Kept]
    keep: Callable[[dict[Identity, _Kept]], None]
    known: dict[Identity, ObjectOutcome] = field(default_factory=dict)
    _inputs: dict[Identity, _Inputs] = field(default_factory=dict)
    _new: dict[Identity, _Kept] = field(default_factory=dict)
    _unkept: set[Identity] = field(default_factory=set)
    recomputed: int = 0

    def reusable(
        self, ident: Identity, *, live: LiveObject, desired: DesiredObject, head: DesiredObject | None,
        scaler: str | None,
    ) -> bool:  # fmt: skip
        """Is the kept outcome of this object valid for these inputs? If so it is in ``known``; if not, the
        inputs are noted for ``record``."""
        k = self.kept.get(ident)
        if (
            k is not None
            and (k.live is live.body or (k.version == _version(live.body) and k.live == live.body))
            and _same(k.desired, desired)
            and _same(k.head, head)
            and k.scaler == scaler
        ):
            self.known[ident] = k.outcome
            self._new[ident] = k
            return True
        self._inputs[ident] = _Inputs(live=live, desired=desired, head=head, scaler=scaler)
        return False

    def carry(self, changed: frozenset[Identity]) -> None:
        """Keep, as used by this cycle, the outcomes of every object but ``changed`` (the engine's index proved their
        inputs unchanged: the very live object, Git's objects and the head's unchanged); ``changed`` ones go through
        ``reusable``."""
        self._new = dict(self.kept)
        for ident in changed:
            self._new.pop(ident, None)

    def unkept(self, ident: Identity) -> None:
        """This object's outcome depends on something not in the key (a failed dry-run and its note)."""
        self._unkept.add(ident)

    def record(self, ident: Identity, outcome: ObjectOutcome) -> None:
        self.recomputed += 1
        given = self._inputs.get(ident)
        if given is None or ident in self._unkept:
            return
        self._new[ident] = _Kept(live=given.live.body, version=_version(given.live.body), desired=given.desired,
                                 head=given.head, scaler=given.scaler, outcome=outcome)  # fmt: skip

    def finish(self) -> None:
        self.keep(self._new)


@dataclass(frozen=True, slots=True, kw_only=True)
class _DryKey:
    kind: DryRunKind
    manifest: str  # digest of the manifest sent
    live_version: str
    server: str


class WarmState:
    """One target's kept results (see the module docstring)."""

    def __init__(self) -> None:
        self._git: tuple[Hashable, Any] | None = None
        self._objects_key: tuple[EngineOptions, str | None, bool, str] | None = None
        self._objects: dict[Identity, _Kept] = {}
        self._index: Index | None = None  # the engine's index, kept with the objects' outcomes (same key)
        self._volatile: frozenset[Identity] = frozenset()  # objects whose outcome was not kept: decided every cycle
        self._since: int | None = None  # the settle stage's bound on the live objects' oldest write
        self._changes: tuple[Hashable, int, GitChanges | None] | None = None
        self._derived: tuple[object, object, Any] | None = None
        self._dry: dict[_DryKey, DryRun] = {}
        self._dry_used: dict[_DryKey, DryRun] = {}
        self._plan: tuple[Hashable, Any] | None = None
        self._lines: dict[Hashable, str] = {}
        self._lines_used: dict[Hashable, str] = {}
        self.recomputed: int | None = None  # objects the engine computed in the last cycle (None: no cycle yet)
        self.dry_runs_reused = 0
        self.git_reused = False
        self.plan_reused = False

    # ------------------------------------------------------------ the Git side

    def git_side(self, key: Hashable) -> Any | None:
        """The Git side kept for ``key``, or None."""
        hit = self._git is not None and self._git[0] == key
        self.git_reused = hit
        return self._git[1] if hit and self._git is not None else None

    def keep_git_side(self, key: Hashable, value: Any) -> None:
        self._git = (key, value)

    # ------------------------------------------------------------ objects

    def objects(self, *, options: EngineOptions, revision: str | None, head_given: bool, server: str) -> ObjectRound:
        """This cycle's round of object outcomes; everything kept is dropped when the options (the policy's digest),
        the applied revision, the presence of a head or the server's version changed."""
        key = (options, revision, head_given, server)
        if self._objects_key != key:
            self._objects = {}
            self._objects_key = key
            self._index = None

        def keep(new: dict[Identity, _Kept]) -> None:
            self._objects = new

        return ObjectRound(kept=self._objects, keep=keep)

    def finished(self, rnd: ObjectRound) -> None:
        rnd.finish()
        self.recomputed = rnd.recomputed
        self._volatile = frozenset(rnd._unkept)

    # ------------------------------------------------------------ the engine's index

    def index(
        self, *, live: Sequence[LiveObject], desired: Sequence[DesiredObject], head: Sequence[DesiredObject] | None,
        include_secrets: bool, rnd: ObjectRound,
    ) -> Index:  # fmt: skip
        """The kept index advanced to this cycle's objects (``drift.indexing.advance``; call after :meth:`objects`),
        with the objects whose outcome was not kept among its ``changed``; a new one (everything to decide) when
        none is kept. The round keeps the other objects' outcomes."""
        if self._index is None:
            return build(live=live, desired=desired, head=head, include_secrets=include_secrets)
        index = advance(self._index, live=live, desired=desired, head=head, include_secrets=include_secrets)
        if index.changed is None:
            return index
        changed = index.changed | self._volatile
        rnd.carry(changed)
        return replace(index, changed=changed)

    def keep_index(self, index: Index) -> None:
        self._index = index

    # ------------------------------------------------------------ what the settle stage needs of Git

    def since(self, live: Sequence[LiveObject], index: Index) -> int | None:
        """A bound on the oldest managedFields time of the live objects (``drift.settling.oldest_write``): of all of
        them in a full cycle; else the last bound, or an arriving object's older time. A bound older than the
        oldest write settles exactly the same objects (an Apply is later than both)."""
        if index.changed is None:
            self._since = oldest_write(live)
        else:
            times = [t for t in (self._since, oldest_write(index.arrived)) if t is not None]
            self._since = min(times) if times else None
        return self._since

    def git_changes(self, key: Hashable, since: int, make: Callable[[int], GitChanges | None]) -> GitChanges | None:
        """``make(since)``, or the answer kept for ``key`` (the commit, the path, the source kind) made for an older
        or equal bound: it lists more files, each with its own change time, which settles the same objects."""
        kept = self._changes
        if kept is not None and kept[0] == key and kept[1] <= since:
            return kept[2]
        made = make(since)
        self._changes = (key, since, made)
        return made

    # ------------------------------------------------------------ what a cycle derives from the Git side

    def derived(self, source: object, spec: object, make: Callable[[], Any]) -> Any:
        """``make()``, or what it made for the very ``source`` object (a kept Git side's objects) and an equal
        ``spec``."""
        kept = self._derived
        if kept is not None and kept[0] is source and kept[1] == spec:
            return kept[2]
        made = make()
        self._derived = (source, spec, made)
        return made

    # ------------------------------------------------------------ dry-runs

    def dry_run(self, *, kind: DryRunKind, manifest: Mapping[str, Any], live: LiveObject, server: str,
                ask: Callable[[], Mapping[str, Any]]) -> DryRun:  # fmt: skip
        """The kept answer for this manifest, live resourceVersion and server version, else ``ask()``'s (kept)."""
        key = _DryKey(kind=kind, manifest=digest(manifest), live_version=_version(live.body)[1], server=server)
        kept = self._dry.get(key)
        if kept is None:
            kept = DryRun(kind=kind, body=ask())
        else:
            self.dry_runs_reused += 1
        self._dry_used[key] = kept
        return kept

    def dry_runs_done(self) -> None:
        """The end of a cycle's dry-runs: only the answers it used are kept."""
        self._dry, self._dry_used = self._dry_used, {}

    # ------------------------------------------------------------ change sets

    def plan(self, key: Hashable) -> Any | None:
        hit = self._plan is not None and self._plan[0] == key
        self.plan_reused = hit
        return self._plan[1] if hit and self._plan is not None else None

    def keep_plan(self, key: Hashable, value: Any) -> None:
        self._plan = (key, value)

    # ------------------------------------------------------------ verification lines

    def line(self, key: Hashable, make: Callable[[], Answer]) -> str:
        """The PR's verification line kept for ``key``, else ``make()``'s (kept when the API server answered)."""
        kept = self._lines.get(key)
        if kept is None:
            made = make()
            if not made.answered:
                return made.line
            kept = made.line
        self._lines_used[key] = kept
        return kept

    def lines_done(self) -> None:
        self._lines, self._lines_used = self._lines_used, {}

    def begin_cycle(self) -> None:
        self.dry_runs_reused = 0
        self.git_reused = self.plan_reused = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Warm:
    """One service cycle's use of the results kept from the last one (``pipeline.detecting``)."""

    memo: WarmState
    round: ObjectRound
    scalers: Mapping[Identity, str]
    head: Sequence[DesiredObject] | None
    server: str
    index: Index | None = None  # the engine's index advanced to this cycle's objects

    def reusable(self, live: LiveObject, desired: DesiredObject, heads: Mapping[Identity, DesiredObject]) -> bool:
        ident = desired.ref.identity
        return self.round.reusable(ident, live=live, desired=desired, head=heads.get(ident),
                                   scaler=self.scalers.get(ident))  # fmt: skip


def ask(
    warm: Warm | None, kind: DryRunKind, manifest: Mapping[str, Any], live: LiveObject,
    asking: Callable[[], Mapping[str, Any]],
) -> DryRun:  # fmt: skip
    """A dry-run's answer: kept from an earlier cycle for the same manifest, live resourceVersion and server version,
    else asked."""
    if warm is None:
        return DryRun(kind=kind, body=asking())
    return warm.memo.dry_run(kind=kind, manifest=manifest, live=live, server=warm.server, ask=asking)


def git_key(
    repo: Path, *, path: str, source: str, namespaces: Hashable, head: str, commit: str
) -> tuple[object, ...] | None:
    """What the Git side of a service cycle is kept by, or None when it must be read: the ids of the path's tree at
    both commits (the commits too when they differ: the notes name them), for a path whose working tree is pristine
    and holds no symbolic link (a link's target is not part of the tree's id). For a source kind that reads the
    path's files (the caller checks that it does not render)."""
    if not revisions.pristine(repo, path=path):
        return None
    trees = revisions.tree_ids(repo, (head, commit) if commit != head else (head,), path=path)
    if trees is None or any(revisions.has_links(repo, t) for t in set(trees)):
        return None
    shas = (head, commit) if commit != head else ()
    return (source, path, trees, shas, namespaces)


def kept_git_changes(
    memo: WarmState,
    *,
    repo: Path,
    commit: str | None,
    scope: str,
    live: Sequence[LiveObject],
    index: Index,
    rendered: bool,
) -> GitChanges | None:
    """When Git last changed each file, for the settle stage of a service cycle: the bound on the oldest write
    follows the arriving objects, and the answer of ``git log`` is kept by the commit (``WarmState.git_changes``)."""
    since = memo.since(live, index)
    if commit is None or since is None:
        return None
    at_commit = commit
    return memo.git_changes((repo, commit, scope, rendered), since, lambda at: _changes_at(repo, at_commit, scope, at,
                                                                                            rendered))  # fmt: skip


def _changes_at(repo: Path, commit: str, scope: str, since: int, rendered: bool) -> GitChanges | None:
    by_file = revisions.change_times(repo, commit, path=scope, since=since)
    return None if by_file is None else GitChanges(since=since, by_file=by_file, rendered=rendered)
