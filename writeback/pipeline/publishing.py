"""The PR lifecycle: one change set in, one idempotent step on the forge out.

Each transition is a small function:
  no open PR                      -> create (branch, commit, push, PR with labels/reviewers/assignees/draft)
  open PR, same fingerprint       -> unchanged: reads only, no push, no API write; but when the controller has
                                     reverted the live change since the PR was written: update its description
                                     and comment once (the PR is now the only copy of the change)
  open PR, drift changed          -> regenerate the commit on the current base, force-with-lease, update, comment
  drift gone                      -> close with a comment and delete the bot branch
  closed unmerged, same drift     -> skipped (unless ``reopen_closed``)
  merged, same drift still there  -> persistent drift: comment on the merged PR once, report it (not when the
                                     merge commit is newer than the base this cycle compared: merged meanwhile)
  a person committed to the branch-> stop updating, comment once
``dry_run`` runs every read and stops before the push and the API writes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from writeback.adapters.forges.base import Forge, PRInfo, PRState
from writeback.adapters.git.repo import GitRepo, PushStatus
from writeback.errors import GitError, RateLimited, WritebackError
from writeback.kube.paths import format_path
from writeback.model import CapturedHotfix, ChangeSet, EnsureResult, Outcome, PullRequestSpec, ResultReason
from writeback.pipeline.publish_settings import PublishSettings
from writeback.pr.markers import comment_marker
from writeback.pr.text import Rendered

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Publication:
    """A change set with its rendered commit message, title and body, and the hotfixes of its resources that the
    controller reverted in the cluster (captured by the watch; the body reports them)."""

    change_set: ChangeSet
    rendered: Rendered
    reverted: tuple[CapturedHotfix, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Publisher:
    forge: Forge
    repo: GitRepo
    base_sha: str
    settings: PublishSettings


def _result(
    pub: Publisher,
    cs_id: str,
    outcome: Outcome,
    pr: PRInfo | None,
    detail: str,
    *,
    head: str | None = None,
    reason: ResultReason | None = None,
) -> EnsureResult:
    if pub.settings.dry_run:
        detail = f"dry run: {detail}"
    return EnsureResult(
        outcome=outcome,
        target=pub.settings.target,
        changeset_id=cs_id,
        url=pr.url if pr else None,
        detail=detail,
        pr=pr.number if pr else None,
        head=head,
        reason=reason,
    )


def comment_once(*, forge: Forge, number: int, kind: str, key: str, text: str, dry_run: bool) -> bool:
    """Post ``text`` unless a comment with the same hidden (kind, key) marker is there. True when posted."""
    marker = comment_marker(kind, key)
    if any(marker in c for c in forge.comments(number=number)):
        return False
    if not dry_run:
        forge.comment(number=number, text=f"{text}\n\n{marker}")
    return True


def _spec(pub: Publisher, p: Publication) -> PullRequestSpec:
    return pub.settings.pull_request(p.change_set, p.rendered)


def _commit_and_push(pub: Publisher, p: Publication, branch: str) -> tuple[PushStatus, str, tuple[str, ...]] | None:
    """Commit on the current base and push with a lease. None when the patches change nothing. LEASE_LOST also
    when another writer pushed the very same commit first (it opens the PR)."""
    sha = pub.repo.commit(
        base_sha=pub.base_sha,
        branch=branch,
        patches=p.change_set.files,
        message=p.rendered.commit_message,
        signoff=pub.settings.signoff,
    )
    if sha is None:
        return None
    expected = pub.repo.remote_sha(branch)
    pushed = pub.repo.push(branch=branch, base=pub.settings.base, expected=expected)
    status = PushStatus.LEASE_LOST if pushed.by_another else pushed.status
    return status, pushed.sha, pushed.foreign


def _create(pub: Publisher, p: Publication, branch: str) -> EnsureResult:
    cs = p.change_set
    if pub.settings.dry_run:
        return _result(pub, cs.id, Outcome.CREATED, None, f"would push {branch} and open a pull request")
    pushed = _commit_and_push(pub, p, branch)
    if pushed is None:
        return _result(pub, cs.id, Outcome.SKIPPED, None, "the patches change nothing on the base branch")
    status, sha, foreign = pushed
    if status is PushStatus.HUMAN_COMMITS:
        return _result(pub, cs.id, Outcome.SKIPPED, None, f"{branch} holds commits the bot did not make: {foreign[0]}")
    if status is PushStatus.LEASE_LOST:
        return _lost_race(pub, cs.id, branch)
    pr = pub.forge.create_pr(spec=_spec(pub, p))
    return _result(pub, cs.id, Outcome.CREATED, pr, f"opened on {branch}", head=sha)


def _lost_race(pub: Publisher, cs_id: str, branch: str) -> EnsureResult:
    """The branch changed between the bot's look and its push (a second replica, a person): nothing was pushed.
    The PR the other writer opened is reported if it is there already; the next cycle looks again."""
    log.warning("target %s: %s changed on the remote while pushing; leaving it to the other writer",
                pub.settings.target, branch)  # fmt: skip
    pr = pub.forge.find_open_pr(branch=branch)
    detail = f"{branch} changed on the remote while pushing (another writer); not pushed, the next cycle looks again"
    return _result(pub, cs_id, Outcome.SKIPPED, pr, detail, reason=ResultReason.CONCURRENT_WRITER)


def _human_commits(pub: Publisher, cs_id: str, pr: PRInfo, head: str, foreign: Sequence[str]) -> EnsureResult:
    who = ", ".join(sorted({f.split(" ", 1)[1] for f in foreign}))
    log.warning("target %s: %s has commits the bot did not make (%s); not updating it", pub.settings.target,
                pr.head_branch, who)  # fmt: skip
    text = (
        f"writeback found commits on `{pr.head_branch}` that it did not make (by {who}), so it stops updating "
        "this branch. The live drift changed since; merge or close this, and writeback opens a fresh one."
    )
    comment_once(forge=pub.forge, number=pr.number, kind="human-commits", key=head, text=text, dry_run=False)
    return _result(
        pub,
        cs_id,
        Outcome.SKIPPED,
        pr,
        "a person committed to the bot branch; not updating",
        reason=ResultReason.PERSON_COMMITTED,
    )


def _update(pub: Publisher, p: Publication, pr: PRInfo, *, base_moved: bool = False) -> EnsureResult:
    cs = p.change_set
    if pub.settings.dry_run:
        return _result(pub, cs.id, Outcome.UPDATED, pr, "would regenerate the branch and update the pull request")
    pushed = _commit_and_push(pub, p, pr.head_branch)
    if pushed is None:
        return _result(pub, cs.id, Outcome.SKIPPED, pr, "the patches change nothing on the base branch")
    status, sha, foreign = pushed
    if status is PushStatus.HUMAN_COMMITS:
        return _human_commits(pub, cs.id, pr, sha, foreign)
    if status is PushStatus.LEASE_LOST:
        return _lost_race(pub, cs.id, pr.head_branch)
    pub.forge.update_pr(number=pr.number, title=p.rendered.title, body=p.rendered.body)
    try:
        stat = pub.repo.diff(pr.head_sha, sha) if pr.head_sha else ""
    except GitError:
        stat = ""
    fields = "\n".join(f"- {d.resource}: `{format_path(d.path)}`" for d in cs.drifts)
    text = (
        f"The live drift changed, so writeback regenerated this branch on top of `{pub.settings.base}` "
        f"(fingerprint `{pr.fingerprint or '?'}` -> `{cs.fingerprint}`)."
    )
    if base_moved:
        text = (
            f"`{pub.settings.base}` changed the files of this branch since it was made, so writeback regenerated "
            f"it on top of `{pub.settings.base}` (same drift, fingerprint `{cs.fingerprint}`)."
        )
    text += f"\n\n```\n{stat}\n```" if stat else ""
    text += f"\n\nFields now written back:\n{fields}" if fields else ""
    pub.forge.comment(number=pr.number, text=text)
    why = "regenerated on the moved base branch" if base_moved else "regenerated for a changed drift"
    return _result(pub, cs.id, Outcome.UPDATED, pr, why, head=sha)


def _reverted_since(pub: Publisher, p: Publication, pr: PRInfo) -> EnsureResult:
    """The PR was written while the change was live; the controller has reverted it since. The reviewer must know:
    the description says so from now on, and one comment (a notification) tells them."""
    cs = p.change_set
    if pub.settings.dry_run:
        return _result(pub, cs.id, Outcome.UPDATED, pr, "would update the description: the live change was reverted")
    pub.forge.update_pr(number=pr.number, title=p.rendered.title, body=p.rendered.body)
    lines = "\n".join(
        f"- {h.resource}: changed by `{h.manager}`{f' at {h.time}' if h.time else ''}, reverted"
        f"{f' by `{h.reverted_by}`' if h.reverted_by else ''}{f' at {h.reverted_at}' if h.reverted_at else ''}"
        for h in p.reverted
    )
    text = (
        "**The live change was reverted in the cluster.** The GitOps controller wrote over it before it reached "
        f"Git:\n{lines}\n\nThis pull request, built from the change writeback captured, is now its only copy: "
        "merging it restores the change. The description says so too."
    )
    comment_once(forge=pub.forge, number=pr.number, kind="reverted", key=p.rendered.reverted_key or "", text=text,
                 dry_run=False)  # fmt: skip
    return _result(pub, cs.id, Outcome.UPDATED, pr, "the live change was reverted in the cluster: description updated")


def _persistent(pub: Publisher, cs: ChangeSet, merged: PRInfo) -> EnsureResult:
    log.warning(
        "persistent drift: target %s, change set %s was merged in #%d but the same drift is still live",
        pub.settings.target, cs.id, merged.number,
    )  # fmt: skip
    text = (
        f"This was merged, but the same live drift is still there (fingerprint `{cs.fingerprint}`): the cluster "
        "still differs from Git. Check that the GitOps controller synced this path and that the patch edited the "
        "file it renders from."
    )
    comment_once(
        forge=pub.forge, number=merged.number, kind="persistent-drift", key=cs.fingerprint, text=text,
        dry_run=pub.settings.dry_run,
    )  # fmt: skip
    return _result(pub, cs.id, Outcome.SKIPPED, merged, f"persistent drift after merge of #{merged.number}",
                   reason=ResultReason.PERSISTENT_DRIFT)  # fmt: skip


def _foreign_commits(pub: Publisher, branch: str) -> tuple[str, ...]:
    if pub.repo.remote_sha(branch) is None:
        return ()  # already gone
    return pub.repo.foreign_commits(branch=branch, base=pub.settings.base)


def close_pr(pub: Publisher, pr: PRInfo, *, reason: str) -> EnsureResult:
    """Drift gone: close with a comment, delete the bot branch (kept if a person committed to it)."""
    cs_id = pr.changeset_id or ""
    if not pub.settings.dry_run:
        foreign = _foreign_commits(pub, pr.head_branch)
        kept = f" The branch `{pr.head_branch}` is kept: it holds commits writeback did not make." if foreign else ""
        pub.forge.comment(number=pr.number, text=f"writeback closes this: {reason}{kept}")
        pub.forge.close_pr(number=pr.number)
        if not foreign:
            pub.forge.delete_branch(branch=pr.head_branch)
    return _result(pub, cs_id, Outcome.CLOSED, pr, reason)


def _finish_setup(pub: Publisher, p: Publication, pr: PRInfo) -> str:
    """A PR whose creation was cut short (the process died between opening it and labelling it) gets the rest.

    Creation adds labels, then reviewers, then assignees: a configured label or assignee missing means it was
    interrupted, so the missing ones are added (a reviewer already requested is not asked again). A person who
    removes a label from a complete PR is left alone only when the assignees are all there."""
    spec = _spec(pub, p)
    labels = [x for x in spec.labels if x not in pr.labels]
    assignees = [x for x in spec.assignees if x not in pr.assignees]
    if not labels and not assignees:
        return ""
    if pub.settings.dry_run:
        return "; would finish its interrupted set-up"
    log.warning("target %s: #%d lacks its labels or assignees (its creation was interrupted); adding them",
                pub.settings.target, pr.number)  # fmt: skip
    pub.forge.add_labels(number=pr.number, labels=labels)
    pub.forge.request_reviewers(number=pr.number, reviewers=[x for x in spec.reviewers if x not in pr.reviewers])
    pub.forge.assign(number=pr.number, assignees=assignees)
    return "; finished its interrupted set-up (labels, reviewers, assignees)"


def ensure_change_set(*, publisher: Publisher, publication: Publication) -> EnsureResult:
    """Bring the forge in line with one change set (see the module docstring for the transitions)."""
    pub, cs = publisher, publication.change_set
    branch = pub.settings.branch(cs.id)
    open_pr = pub.forge.find_open_pr(branch=branch)
    if not cs.files:
        if open_pr is not None:
            return close_pr(pub, open_pr, reason="the drift is gone (Git or the cluster was changed to match).")
        return _result(pub, cs.id, Outcome.UNCHANGED, None, "nothing to write back")
    if open_pr is not None:
        paths = [f.path for f in cs.files]
        if open_pr.fingerprint == cs.fingerprint and pub.repo.base_moved_under(
            head=open_pr.head_sha, base_sha=pub.base_sha, paths=paths
        ):  # the base changed the PR's files since: rebase (regenerate on the base) so it stays mergeable
            return _update(pub, publication, open_pr, base_moved=True)
        if open_pr.fingerprint == cs.fingerprint:
            key = publication.rendered.reverted_key
            if key is not None and comment_marker("reverted", key) not in open_pr.body:
                return _reverted_since(pub, publication, open_pr)
            finished = _finish_setup(pub, publication, open_pr)
            return _result(pub, cs.id, Outcome.UNCHANGED, open_pr, "same drift as the open pull request" + finished)
        return _update(pub, publication, open_pr)
    earlier = [p for p in pub.forge.find_prs(branch=branch) if p.fingerprint == cs.fingerprint]
    if earlier and earlier[0].state is PRState.MERGED:
        merged = earlier[0]
        if merged.merge_sha and not pub.repo.contains(commit=pub.base_sha, ancestor=merged.merge_sha):
            # merged while this cycle ran: its drift was found against a Git without the merge, not persistent
            return _result(pub, cs.id, Outcome.UNCHANGED, merged,
                           f"#{merged.number} was merged after this cycle read {pub.settings.base}")  # fmt: skip
        return _persistent(pub, cs, merged)
    if earlier and earlier[0].state is PRState.CLOSED and not pub.settings.reopen_closed:
        return _result(pub, cs.id, Outcome.SKIPPED, earlier[0], "a person closed this drift's pull request unmerged")
    return _create(pub, publication, branch)


def retire_stale(*, publisher: Publisher, keep: Sequence[str]) -> list[EnsureResult]:
    """Close the target's open bot PRs whose change set is no longer planned (drift gone)."""
    pub = publisher
    results = []
    for pr in pub.forge.list_open_prs(branch_prefix=pub.settings.branch_prefix()):
        if pr.fingerprint is None or pr.head_branch in keep:
            continue  # not ours, or still wanted
        results.append(close_pr(pub, pr, reason="the drift is gone (Git or the cluster was changed to match)."))
    return results


def publish(*, publisher: Publisher, publications: Sequence[Publication], retire: bool = True) -> list[EnsureResult]:
    """Ensure every change set, then retire stale PRs (only after a complete plan: ``retire``).

    A rate limit skips the rest of the target until the next cycle.
    """
    results: list[EnsureResult] = []
    for p in publications:
        try:
            results.append(ensure_change_set(publisher=publisher, publication=p))
        except RateLimited as e:
            results.append(
                _result(publisher, p.change_set.id, Outcome.SKIPPED, None, str(e), reason=ResultReason.RATE_LIMITED)
            )
            return results
        except WritebackError as e:
            log.warning("target %s, change set %s: %s", publisher.settings.target, p.change_set.id, e)
            results.append(_result(publisher, p.change_set.id, Outcome.FAILED, None, str(e)))
    keep = [publisher.settings.branch(p.change_set.id) for p in publications if p.change_set.files]
    failed = any(r.outcome is Outcome.FAILED for r in results)
    if retire and not failed:
        try:
            results.extend(retire_stale(publisher=publisher, keep=keep))
        except RateLimited as e:
            results.append(_result(publisher, "", Outcome.SKIPPED, None, str(e), reason=ResultReason.RATE_LIMITED))
    return results
