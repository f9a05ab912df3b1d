"""Every PR lifecycle transition, against both fake forges over HTTP and a real bare git remote."""

from __future__ import annotations

from typing import Any

from tests.forges.conftest import BOT, WEB, WEB_V1, Env, change_set, gone
from tests.support.gitrepos import git
from writeback.model import CapturedHotfix, Outcome, PullRequestSpec, ResultReason, Review
from writeback.pr.markers import parse_marker

BRANCH = "writeback/prod/web-1"


def _pr(env: Env, number: int | None) -> dict[str, Any]:
    """The fake's record of PR ``number`` (a result's ``pr``: it must name one)."""
    assert number is not None, "the result names no PR"
    pr: dict[str, Any] = env.fake.prs[number] if env.kind == "github" else env.fake.mrs[number]
    return pr


def _comments(env: Env, number: int | None) -> list[str]:
    assert number is not None, "the result names no PR"
    store = env.fake.comments if env.kind == "github" else env.fake.notes
    return [c["body"] for c in store.get(number, [])]


def _people(env: Env, pr: dict[str, Any], field: str) -> list[str]:
    if env.kind == "github":
        return list(pr[field])
    ids = pr["reviewer_ids" if field == "reviewers" else "assignee_ids"]
    return [name for name, uid in env.fake.users.items() if uid in ids]


def test_no_open_pr_creates_one_with_labels_reviewers_and_assignees(env: Env) -> None:
    [result] = env.cycle(change_set(replicas=3))

    assert result.outcome is Outcome.CREATED
    number = result.pr
    pr = _pr(env, number)
    assert result.url and str(number) in result.url
    assert pr["labels"] == ["writeback"]
    assert _people(env, pr, "reviewers") == ["alice"]
    assert _people(env, pr, "assignees") == ["bob"]
    body = pr["body"] if env.kind == "github" else pr["description"]
    marker = parse_marker(body)
    assert marker is not None and marker.changeset_id == "web-1"
    assert body.startswith("<!-- writeback:fingerprint=")
    # the bot branch on the real remote holds the patch, committed by the bot on top of main
    assert env.remote.show(BRANCH, "apps/web.yaml") == WEB_V1.replace("replicas: 2", "replicas: 3")
    author = git("--git-dir", str(env.remote.bare), "log", "-1", "--format=%ae %ce", BRANCH)
    assert author == f"{BOT.email} {BOT.email}"
    parent = git("--git-dir", str(env.remote.bare), "rev-parse", f"{BRANCH}^")
    assert parent == env.remote.sha("main")


def test_draft_flag(env: Env) -> None:
    [result] = env.cycle(change_set(replicas=3), draft=True)
    pr = _pr(env, result.pr)
    if env.kind == "github":
        assert pr["draft"] is True
    else:  # GitLab has no draft field on create: the title prefix makes it one
        assert pr["title"].startswith("Draft: ")
        assert env.forge.find_open_pr(branch=BRANCH).draft  # type: ignore[union-attr]


def test_same_fingerprint_twice_is_zero_writes(env: Env) -> None:
    env.cycle(change_set(replicas=3))
    refs, mark = env.remote.refs(), env.fake.mark()

    [again] = env.cycle(change_set(replicas=3))
    [third] = env.cycle(change_set(replicas=3))

    assert again.outcome is Outcome.UNCHANGED and third.outcome is Outcome.UNCHANGED
    assert again.url is not None
    assert [r for r in env.fake.since(mark) if r.method != "GET"] == []
    assert env.remote.refs() == refs


def test_a_revert_after_the_pr_was_opened_updates_its_description_and_comments_once(env: Env) -> None:
    """A real controller reverts on its next interval, often after writeback's debounced cycle opened the PR from
    the live change: the reviewer must learn that the PR is now the only copy of the fix."""
    [first] = env.cycle(change_set(replicas=3))
    body = _pr(env, first.pr)["body" if env.kind == "github" else "description"]
    assert "Already reverted" not in body
    refs, mark = env.remote.refs(), env.fake.mark()
    reverted = CapturedHotfix(resource=WEB, manager="kubectl-edit", time="2026-11-30T03:00:00Z",
                              reverted_at="2026-11-30T03:00:04Z", reverted_by="kustomize-controller")  # fmt: skip

    [second] = env.cycle(change_set(replicas=3), hotfixes=(reverted,))
    assert second.outcome is Outcome.UPDATED and second.pr == first.pr
    pr = _pr(env, first.pr)
    body = pr["body" if env.kind == "github" else "description"]
    assert "Already reverted in the cluster" in body and "kustomize-controller" in body
    [comment] = _comments(env, first.pr)
    assert "reverted in the cluster" in comment and "`kustomize-controller` at 2026-11-30T03:00:04Z" in comment
    assert env.remote.refs() == refs  # the branch is as it was: only the description and one comment
    assert {(r.method, r.path.rsplit("/", 1)[-1]) for r in env.fake.since(mark) if r.method != "GET"} <= {
        ("PATCH", str(first.pr)),
        ("PUT", str(first.pr)),
        ("POST", "comments"),
        ("POST", "notes"),
    }

    mark = env.fake.mark()
    [third] = env.cycle(change_set(replicas=3), hotfixes=(reverted,))
    assert third.outcome is Outcome.UNCHANGED
    assert [r for r in env.fake.since(mark) if r.method != "GET"] == []


def test_a_pr_opened_after_the_revert_says_so_once(env: Env) -> None:
    reverted = CapturedHotfix(resource=WEB, manager="kubectl-edit", time="2026-11-30T03:00:00Z",
                              reverted_at="2026-11-30T03:00:04Z", reverted_by="kustomize-controller")  # fmt: skip
    [first] = env.cycle(change_set(replicas=3), hotfixes=(reverted,))
    assert first.outcome is Outcome.CREATED
    mark = env.fake.mark()
    [again] = env.cycle(change_set(replicas=3), hotfixes=(reverted,))
    assert again.outcome is Outcome.UNCHANGED and _comments(env, first.pr) == []
    assert [r for r in env.fake.since(mark) if r.method != "GET"] == []


def test_changed_drift_regenerates_on_the_current_base_and_comments(env: Env) -> None:
    [first] = env.cycle(change_set(replicas=3))
    old_head = env.remote.sha(BRANCH)
    # the base moves meanwhile (another file), and the live value changes again
    env.remote.person_commit("main", "apps/other.yaml", "kind: ConfigMap\n")
    [second] = env.cycle(change_set(replicas=4))

    assert second.outcome is Outcome.UPDATED
    assert second.pr == first.pr
    assert env.remote.sha(BRANCH) != old_head
    assert git("--git-dir", str(env.remote.bare), "rev-parse", f"{BRANCH}^") == env.remote.sha("main")
    assert env.remote.show(BRANCH, "apps/web.yaml") == WEB_V1.replace("replicas: 2", "replicas: 4")
    pr = _pr(env, first.pr)
    body = pr["body"] if env.kind == "github" else pr["description"]
    assert parse_marker(body).fingerprint == change_set(replicas=4).fingerprint  # type: ignore[union-attr]
    [comment] = _comments(env, first.pr)
    assert "drift changed" in comment and change_set(replicas=4).fingerprint in comment
    assert len(env.forge.find_prs(branch=BRANCH)) == 1


def test_drift_gone_closes_with_a_comment_and_deletes_the_branch(env: Env) -> None:
    [first] = env.cycle(change_set(replicas=3))
    [closed] = env.cycle()  # nothing planned for this target any more

    assert closed.outcome is Outcome.CLOSED and closed.pr == first.pr
    pr = _pr(env, first.pr)
    assert pr["state"] == "closed"
    assert "drift is gone" in _comments(env, first.pr)[0]
    assert f"refs/heads/{BRANCH}" not in env.remote.refs()
    # and the next cycle has nothing left to do
    mark = env.fake.mark()
    assert env.cycle() == []
    assert [r for r in env.fake.since(mark) if r.method != "GET"] == []


def test_drift_gone_keeps_a_bot_branch_a_person_committed_to(env: Env) -> None:
    [first] = env.cycle(change_set(replicas=3))
    human = env.remote.person_commit(BRANCH, "apps/web.yaml", WEB_V1.replace("replicas: 2", "replicas: 9"))

    [closed] = env.cycle()

    assert closed.outcome is Outcome.CLOSED
    assert env.remote.sha(BRANCH) == human  # the person's commit is not deleted with the branch
    assert "is kept" in _comments(env, first.pr)[0]


def test_empty_change_set_closes_its_open_pr(env: Env) -> None:
    env.cycle(change_set(replicas=3))
    [closed] = env.cycle(gone())
    assert closed.outcome is Outcome.CLOSED
    assert f"refs/heads/{BRANCH}" not in env.remote.refs()


def test_pr_closed_unmerged_by_a_person_is_not_reopened(env: Env) -> None:
    [first] = env.cycle(change_set(replicas=3))
    env.fake.close_by_person(first.pr)
    refs, mark = env.remote.refs(), env.fake.mark()

    [skipped] = env.cycle(change_set(replicas=3))

    assert skipped.outcome is Outcome.SKIPPED and "closed" in skipped.detail
    assert [r for r in env.fake.since(mark) if r.method != "GET"] == []
    assert env.remote.refs() == refs
    # a changed drift is a new proposal
    [created] = env.cycle(change_set(replicas=5))
    assert created.outcome is Outcome.CREATED and created.pr != first.pr


def test_reopen_closed_opens_a_fresh_pr_when_configured(env: Env) -> None:
    [first] = env.cycle(change_set(replicas=3))
    env.fake.close_by_person(first.pr)
    [again] = env.cycle(change_set(replicas=3), reopen_closed=True)
    assert again.outcome is Outcome.CREATED and again.pr != first.pr


def test_merged_but_drift_persists_comments_once(env: Env) -> None:
    [first] = env.cycle(change_set(replicas=3))
    env.fake.merge(first.pr)

    [persistent] = env.cycle(change_set(replicas=3))
    [still] = env.cycle(change_set(replicas=3))

    assert persistent.outcome is Outcome.SKIPPED and persistent.reason is ResultReason.PERSISTENT_DRIFT
    assert still.reason is ResultReason.PERSISTENT_DRIFT
    comments = _comments(env, first.pr)
    assert len(comments) == 1 and "still there" in comments[0]


def test_a_pr_merged_while_the_cycle_ran_is_no_persistent_drift(env: Env) -> None:
    """The cycle read main before the reviewer merged: its drift is the merged one, against an older Git."""
    [first] = env.cycle(change_set(replicas=3))

    [meanwhile] = env.cycle(change_set(replicas=3), after_sync=lambda: env.fake.merge(first.pr))
    assert meanwhile.outcome is Outcome.UNCHANGED and meanwhile.reason is None
    assert "merged after this cycle read main" in (meanwhile.detail or "")
    assert _comments(env, first.pr) == []
    [later] = env.cycle(change_set(replicas=3))  # the drift still there against the merged Git: persistent
    assert later.reason is ResultReason.PERSISTENT_DRIFT and len(_comments(env, first.pr)) == 1


def test_a_persons_commit_on_the_bot_branch_stops_updates(env: Env) -> None:
    [first] = env.cycle(change_set(replicas=3))
    human = env.remote.person_commit(BRANCH, "apps/web.yaml", WEB_V1.replace("replicas: 2", "replicas: 9"))

    [skipped] = env.cycle(change_set(replicas=4))
    [again] = env.cycle(change_set(replicas=4))

    assert skipped.outcome is Outcome.SKIPPED and skipped.reason is ResultReason.PERSON_COMMITTED
    assert again.outcome is Outcome.SKIPPED
    assert env.remote.sha(BRANCH) == human  # never force-pushed over the person
    comments = _comments(env, first.pr)
    assert len(comments) == 1 and "alice@example.com" in comments[0]


def test_dry_run_reads_only(env: Env) -> None:
    refs, mark = env.remote.refs(), env.fake.mark()
    [result] = env.cycle(change_set(replicas=3), dry_run=True)
    assert result.outcome is Outcome.CREATED and result.detail.startswith("dry run")
    assert [r for r in env.fake.since(mark) if r.method != "GET"] == []
    assert env.remote.refs() == refs


def test_base_moved_fails_that_change_set_only(env: Env) -> None:
    stale = change_set(replicas=3, cs_id="stale", before=WEB_V1.replace("# the shop", "# old comment"))
    fine = change_set(replicas=3, cs_id="fine")
    bad, good = env.cycle(stale, fine)
    assert bad.outcome is Outcome.FAILED and "base moved" in bad.detail
    assert good.outcome is Outcome.CREATED
    assert "refs/heads/writeback/prod/stale" not in env.remote.refs()


def test_security_change_set_gets_the_security_label_and_wording(env: Env) -> None:
    [result] = env.cycle(change_set(replicas=3, cs_id="sec", review=Review.SECURITY))
    pr = _pr(env, result.pr)
    assert pr["labels"] == ["writeback", "security-review"]
    body = pr["body"] if env.kind == "github" else pr["description"]
    assert "may be unwanted" in body and "Reverting it in the cluster" in body


def test_one_open_pr_per_branch_is_enforced_and_handled(env: Env) -> None:
    [first] = env.cycle(change_set(replicas=3))
    spec = PullRequestSpec(branch=BRANCH, base="main", title="t", body="b", fingerprint="1", changeset_id="web-1")
    mark = env.fake.mark()

    again = env.forge.create_pr(spec=spec)

    assert again.number == first.pr
    [create] = [r for r in env.fake.since(mark) if r.method == "POST"]
    assert create.status == (422 if env.kind == "github" else 409)
    assert len(env.forge.find_prs(branch=BRANCH)) == 1


def test_pr_commits_report_git_authors(env: Env) -> None:
    [first] = env.cycle(change_set(replicas=3))
    human = env.remote.person_commit(BRANCH, "apps/web.yaml", WEB_V1.replace("replicas: 2", "replicas: 9"))
    assert first.pr is not None
    commits = env.forge.pr_commits(number=first.pr)
    assert [email for _, email in commits] == [BOT.email, "alice@example.com"]
    assert commits[-1][0] == human


def test_an_interrupted_set_up_is_finished_by_the_next_cycle(env: Env) -> None:
    """The process died after opening the PR, before its labels, reviewers and assignees (tests/reliability)."""
    [first] = env.cycle(change_set(replicas=3))
    pr = _pr(env, first.pr)
    pr["labels"] = []
    pr["reviewers" if env.kind == "github" else "reviewer_ids"] = []
    pr["assignees" if env.kind == "github" else "assignee_ids"] = []
    [again] = env.cycle(change_set(replicas=3))
    assert again.outcome is Outcome.UNCHANGED and "finished its interrupted set-up" in again.detail
    pr = _pr(env, first.pr)
    assert pr["labels"] == ["writeback"]
    assert _people(env, pr, "reviewers") == ["alice"] and _people(env, pr, "assignees") == ["bob"]
    mark = env.fake.mark()
    [third] = env.cycle(change_set(replicas=3))  # complete now: reads only
    assert third.outcome is Outcome.UNCHANGED and "interrupted" not in third.detail
    assert [r for r in env.fake.since(mark) if r.method != "GET"] == []


def test_the_base_changing_the_prs_files_regenerates_it_on_the_new_base(env: Env) -> None:
    env.cycle(change_set(replicas=3))
    moved = "# owned by the shop team\n" + WEB_V1
    new_main = env.remote.person_commit("main", "apps/web.yaml", moved)
    [again] = env.cycle(change_set(replicas=3, before=moved))
    assert again.outcome is Outcome.UPDATED and "moved base" in again.detail
    assert git("--git-dir", str(env.remote.bare), "rev-parse", f"refs/heads/{BRANCH}~1") == new_main
    assert "# owned by the shop team" in env.remote.show(BRANCH, "apps/web.yaml")
    env.remote.person_commit("main", "README.md", "unrelated\n")  # a change elsewhere: no churn
    [third] = env.cycle(change_set(replicas=3, before=moved))
    assert third.outcome is Outcome.UNCHANGED
