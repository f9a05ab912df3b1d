"""Merged first: may a break-glass that ``end`` left waiting give auto-sync back now?

    readiness = check(objects=..., item=held, pulls=forge.get_pr, history=history)

Only when every backport PR is merged AND the controller's source revision contains each merge commit: the Flux
GitRepository's ``status.artifact.revision`` (of the Kustomization's ``spec.sourceRef``, or the HelmRelease's
chart source), or Argo CD's resolved ``status.sync.revision``. Before that, resuming would make the controller
apply the old Git and wipe the hotfix. "Contains" is asked of real git (``merge-base --is-ancestor``) in the
target's clone, synced only when the revision is not the merge commit itself.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from writeback.adapters.forges.base import PRInfo, PRState
from writeback.adapters.git.locking import clone_lock
from writeback.adapters.git.repo import GitRepo, Identity
from writeback.breakglass import record as bg
from writeback.breakglass.guards import Objects
from writeback.errors import ClusterError, KindNotServed
from writeback.gitops import registry
from writeback.gitops.base import Fetched
from writeback.kube.refs import ObjectRef
from writeback.kube.wellknown import BREAK_GLASS_MANAGER
from writeback.pipeline.cycling import TargetRun, git_auth, target_forge

log = logging.getLogger(__name__)


class Readiness(enum.StrEnum):
    READY = "ready"  # merged, and the controller's source has it: resume
    WAITING_MERGE = "waiting-merge"  # a backport PR is still open
    WAITING_SOURCE = "waiting-source"  # merged; the controller's source has not fetched the merge commit yet
    NO_SOURCE = "no-source"  # merged; which commit the controller has cannot be read (resume with --force)
    CLOSED = "closed"  # a backport PR was closed without merging: the fix is not in Git


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    readiness: Readiness
    detail: str
    merged: tuple[bg.PullRef, ...] = ()  # the PRs found merged (they stay in the record when it is rewritten)

    @property
    def merged_all(self) -> bool:
        return self.readiness in (Readiness.READY, Readiness.WAITING_SOURCE, Readiness.NO_SOURCE)


class History(Protocol):
    def contains(self, *, commit: str, ancestor: str) -> bool: ...


def _get(objects: Objects, ref: ObjectRef) -> Mapping[str, Any] | None:
    try:
        return objects.get(ref=ref)
    except KindNotServed:
        return None


def source_of(objects: Objects, *, ref: ObjectRef) -> Fetched:
    """The commit the controller of ``ref`` has fetched (what it would apply once auto-sync resumes)."""
    controller = registry.find(ref)
    if controller is None:
        return Fetched(where=registry.describe(ref), commit=None)
    return controller.fetched(objects.get(ref=ref) or {}, ref=ref, get=lambda r: _get(objects, r))


def request_fetch(objects: Objects, *, ref: ObjectRef, token: str) -> bool:
    """Ask the controller of ``ref`` to fetch from Git now (Argo CD's refresh, Flux's requestedAt on the source), so
    that a merged backport resumes auto-sync without waiting for the next poll; False when it cannot be asked. A
    failed request is logged: the next cycle checks again, and the poll fetches it anyway."""
    controller = registry.find(ref)
    body = _get(objects, ref)
    if controller is None or body is None:
        return False
    request = controller.fetch_request(body, ref=ref, get=lambda r: _get(objects, r), token=token)
    if request is None:
        return False
    target, ops = request
    try:
        objects.json_patch(ref=target, ops=ops, field_manager=BREAK_GLASS_MANAGER)
    except ClusterError as e:
        log.warning("break-glass: could not ask %s to fetch from Git: %s", registry.describe(target), e)
        return False
    return True


def check(*, objects: Objects, ref: ObjectRef, ending: bg.Ending, pulls: Callable[[int], PRInfo],
          history: History) -> Check:  # fmt: skip
    """Where a waiting break-glass stands (see ``Readiness``); the forge is asked first, the cluster next, git last."""
    infos = [(p, pulls(p.number)) for p in ending.pulls]
    merged = tuple(p for p, info in infos if info.state is PRState.MERGED)
    closed = [p for p, info in infos if info.state is PRState.CLOSED]
    if closed:
        return Check(readiness=Readiness.CLOSED, merged=merged,
                     detail=f"PR #{closed[0].number} was closed without merging: the fix is not in Git")  # fmt: skip
    still_open = [p for p, info in infos if info.state is PRState.OPEN]
    if still_open:
        text = bg.Ending(by=ending.by, at=ending.at, target=ending.target, pulls=tuple(still_open)).waiting_text()
        return Check(readiness=Readiness.WAITING_MERGE, merged=merged, detail=text)
    source = source_of(objects, ref=ref)
    if source.commit is None:
        return Check(readiness=Readiness.NO_SOURCE, merged=merged,
                     detail=f"merged, but the controller's commit cannot be read from {source.where}")  # fmt: skip
    for p, info in infos:
        sha = info.merge_sha or info.head_sha
        if sha != source.commit and not history.contains(commit=source.commit, ancestor=sha):
            asked = "; asked it to fetch now" if request_fetch(objects, ref=ref, token=sha) else ""
            return Check(
                readiness=Readiness.WAITING_SOURCE, merged=merged,
                detail=f"PR #{p.number} merged as {sha[:12]}; waiting for {source.where} ({source.commit[:12]}) "
                f"to contain it{asked}",
            )  # fmt: skip
    return Check(readiness=Readiness.READY, merged=merged,
                 detail=f"merged, and {source.where} ({source.commit[:12]}) contains it")  # fmt: skip


class TargetHistory:
    """Answers "does this commit contain that one?" in the target's clone (``workdir/<target>``, shared with its cycle),
    fetched from the remote first (the controller may have a commit newer than the last cycle's)."""

    def __init__(self, *, run: TargetRun) -> None:
        self._run = run

    def contains(self, *, commit: str, ancestor: str) -> bool:
        run = self._run
        target = run.spec.target
        assert target is not None
        forge = target_forge(run.spec, edges=run.edges)
        bot = Identity(name=target.git.author_name, email=target.git.author_email)
        with git_auth(target, forge, run.edges.environ) as auth, clone_lock(run.options.workdir / target.name):
            repo = GitRepo(url=target.repo_url, workdir=run.options.workdir / target.name, auth=auth, bot=bot)
            repo.sync(base=target.base)
            return repo.contains(commit=commit, ancestor=ancestor)
