"""``writeback plan``: print the change sets and the pull request ``run`` would open for each; commits nothing.

stdout: per change set its drifts, the pull request (branch, base, title, labels, reviewers, assignees, draft and
the whole body) and the unified diff of each file; or, with ``--output json``, the same fields plus ``notes`` and
``problems``. stderr: the notes and problems, each once, and on a terminal the progress of the work.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TextIO

from writeback.cli.common import inputs_from_args, one_shot
from writeback.cli.documents import Kind, document, problem, write
from writeback.cli.exits import Tally
from writeback.cli.flags import add_format_flag, add_source_flags
from writeback.cli.helptext import summary
from writeback.cli.output import PLAIN, Palette, Printer
from writeback.drift.engine import drift_to_json
from writeback.kube.paths import format_path
from writeback.model import ChangeSet, PullRequestSpec, Unresolved
from writeback.pipeline.planning import PlanOutcome, plan_target
from writeback.pipeline.targets import TargetSpec
from writeback.pr.diffs import render_file_patch
from writeback.service.progress import stage_progress

# A change set's pull request, or None when it opens none (it changes no file).
PullRequestOf = Callable[[ChangeSet], PullRequestSpec | None]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "plan",
        help=summary("plan"),
        description="Detect drift like `writeback diff`, find the source of each drifted field in the repo "
        "(plain manifests, Kustomize overlays, $writeback markers) and print, per change set, the pull request "
        "`writeback run` would open (branch, labels, reviewers, assignees, draft, title and body) and the unified "
        "diff of every file it would change.",
    )
    add_source_flags(parser)
    add_format_flag(parser)
    parser.add_argument("--edit-base", action="store_true", help="kustomize: edit a shared base, not the overlay")
    parser.add_argument("--exit-code", action="store_true",
                        help="exit 1 when a change set changes files or leaves a write-back unresolved")  # fmt: skip
    parser.set_defaults(func=run)


def pull_requests_of(spec: TargetSpec, *, cluster_name: str, proofs: Mapping[str, str] | None = None) -> PullRequestOf:
    """The pull request of each change set (``proofs``: the source's own proof of each, by change set id)."""
    # Imported once the plan is made (Jinja2 and the pull request templates): what a plan allocates after detection
    # takes memory detection freed, and a plan's peak RSS is at its end (issue 23)
    from writeback.pipeline.pull_requests import preview

    def of(cs: ChangeSet) -> PullRequestSpec | None:  # a change set without file changes opens no pull request
        proof = (proofs or {}).get(cs.id)
        return preview(spec, cs, cluster_name=cluster_name, verification=proof) if cs.files else None

    return of


def run(args: argparse.Namespace) -> int:
    one_shot()
    printer = Printer.from_args(args)
    inputs = inputs_from_args(args)
    spec = inputs.spec
    with stage_progress(targets=[spec.name], transient=True) as progress:  # drawn on a terminal only
        edges = replace(inputs.edges, on_step=lambda step: progress.stage(spec.name, step))
        outcome = plan_target(spec=spec, repo=inputs.repo, edges=edges)
    proofs = {cs_id: p.proof for cs_id, p in outcome.rendered.items() if p.proof and not outcome.source.verified_live}
    pull_request = pull_requests_of(spec, cluster_name=inputs.edges.cluster_name, proofs=proofs)
    problems = [str(p) for p in (outcome.detection.problems if outcome.detection else ())]
    problems += [str(e) for e in outcome.plan.errors]
    if args.output != "text":
        write(plan_json(outcome, pull_request=pull_request), out=printer.out, output=args.output)
    else:
        render_text(outcome, out=printer.out, pull_request=pull_request, color=printer.color)
        for note in notes_of(outcome):
            printer.say("note", note)
    for p in problems:
        printer.say("error", p)
    changes = any(cs.files or cs.unresolved for cs in outcome.plan.changesets)  # unresolved: CI must see it
    bad_input = bool(outcome.detection.problems) if outcome.detection else False
    tally = Tally.of_problems(outcome.plan.errors, bad_input=bad_input, changes=changes)
    return tally.exit_code(exit_on_changes=args.exit_code)


def notes_of(outcome: PlanOutcome) -> tuple[str, ...]:
    return (*outcome.notes, *(outcome.detection.report.all_notes if outcome.detection else ()))


def unresolved_json(u: Unresolved) -> dict[str, Any]:
    return {
        "resource": u.resource.as_json(),
        "path": format_path(u.path) if u.path else None,
        "reason": u.reason,
    }


def pull_request_json(pr: PullRequestSpec | None) -> dict[str, Any] | None:
    if pr is None:
        return None
    return {
        "branch": pr.branch, "base": pr.base, "title": pr.title, "body": pr.body, "labels": list(pr.labels),
        "reviewers": list(pr.reviewers), "assignees": list(pr.assignees), "draft": pr.draft,
    }  # fmt: skip


def changeset_json(cs: ChangeSet, *, pull_request: PullRequestOf | None = None) -> dict[str, Any]:
    return {
        "id": cs.id,
        "fingerprint": cs.fingerprint,
        "target": cs.target,
        "review": cs.review.value,
        "files": [{"path": f.path, "diff": render_file_patch(f)} for f in cs.files],
        "drifts": [drift_to_json(d) for d in cs.drifts],
        "unresolved": [unresolved_json(u) for u in cs.unresolved],
        "pullRequest": pull_request_json(pull_request(cs) if pull_request else None),
    }


def plan_json(outcome: PlanOutcome, *, pull_request: PullRequestOf | None = None) -> dict[str, Any]:
    """The ``Plan`` document (``cli.documents``)."""
    problems = [problem(p) for p in (outcome.detection.problems if outcome.detection else ())]
    return document(Kind.PLAN, {
        "changesets": [changeset_json(cs, pull_request=pull_request) for cs in outcome.plan.changesets],
        "notes": list(notes_of(outcome)),
        "problems": [*problems, *(problem(e) for e in outcome.plan.errors)],
    })  # fmt: skip


def _listed(items: tuple[str, ...]) -> str:
    return ", ".join(items) if items else "-"


def pull_request_text(pr: PullRequestSpec, *, color: Palette = PLAIN) -> str:
    """The pull request as ``run`` would open it: its settings, then the whole body, indented."""
    body = "".join(f"    {line}".rstrip() + "\n" for line in pr.body.splitlines())
    rows = (
        ("branch", f"{pr.branch} -> {pr.base}"), ("title", pr.title), ("labels", _listed(pr.labels)),
        ("reviewers", _listed(pr.reviewers)), ("assignees", _listed(pr.assignees)),
        ("draft", "yes" if pr.draft else "no"),
    )  # fmt: skip
    head = "".join(f"  {name + ':':<11}{value}\n" for name, value in rows)
    return f"{color.paint('pull request (what run would open):', 'meta')}\n{head}  body:\n{body}"


def changeset_text(cs: ChangeSet, *, pull_request: PullRequestSpec | None = None, color: Palette = PLAIN) -> str:
    """One change set as text: header, drifts, unresolved fields, its pull request, then each file's diff."""
    header = f"changeset {cs.id}  (target {cs.target}, review: {cs.review.value}, fingerprint {cs.fingerprint[:12]})"
    lines = [color.paint(header, "meta")]
    for d in cs.drifts:
        decision = d.decision.value
        lines.append(f"  {color.paint(f'{decision:<9}', decision)} {d.op.value:<6} {d.resource} {format_path(d.path)}")
    for u in cs.unresolved:
        where = f" {format_path(u.path)}" if u.path else ""
        lines.append(f"  unresolved {u.resource}{where}: {u.reason}")
    if cs.ignored:
        lines.append(f"  ({len(cs.ignored)} drift(s) deliberately not written back)")
    text = "\n".join(lines) + "\n"
    if pull_request is not None:
        text += "\n" + pull_request_text(pull_request, color=color)
    diffs = "".join(render_file_patch(f) for f in cs.files)
    return text + ("\n" + color.diff_text(diffs) if diffs else "  no file changes\n")


def render_text(
    outcome: PlanOutcome, *, out: TextIO, pull_request: PullRequestOf | None = None, color: Palette = PLAIN
) -> None:
    if not outcome.plan.changesets:
        out.write("no change sets: nothing to write back\n")
    for i, cs in enumerate(outcome.plan.changesets):
        pr = pull_request(cs) if pull_request is not None else None
        out.write(("\n" if i else "") + changeset_text(cs, pull_request=pr, color=color))
