"""``writeback plan``: print the change sets (unified diffs) that would be proposed; commits nothing."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from writeback.cli.common import add_source_flags, inputs_from_args
from writeback.cli.exits import Tally
from writeback.core.engine import drift_to_json
from writeback.core.unified_diffs import render_file_patch
from writeback.model import ChangeSet, Unresolved
from writeback.paths import format_path
from writeback.pipeline.plan import PlanOutcome, plan_target
from writeback.pipeline.pull_requests import PullRequestText
from writeback.service.progress import stage_progress

# A hook for richer text output (e.g. the PR title/body preview): replace to render each change set differently.
ChangeSetRenderer = Callable[[ChangeSet], str]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="show the patches writeback would propose, grouped in change sets (commits nothing)",
        description="Detect drift like `writeback diff`, find the source of each drifted field in the repo "
        "(plain manifests, Kustomize overlays, $writeback markers) and print the unified diff of every file "
        "each change set would change.",
    )
    add_source_flags(parser)
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("--edit-base", action="store_true", help="kustomize: edit a shared base, not the overlay")
    parser.add_argument("--exit-code", action="store_true", help="exit 1 when a change set changes files")
    parser.set_defaults(func=run)


def _with_preview(text: str, preview: str) -> str:
    """The change set's summary, then the PR title and body it would open, then its diff."""
    summary, sep, diff = text.partition("\n\n")
    return f"{summary}\n\n{preview}" + (diff if sep else "")


def _preview(text: PullRequestText) -> Callable[[ChangeSet], str]:
    """A change-set renderer: ``title:`` line, then the body, indented, as the forge would receive it."""

    def preview(cs: ChangeSet) -> str:
        rendered = text.render(cs)
        body = "".join(f"    {line}".rstrip() + "\n" for line in rendered.body.splitlines())
        return f"pull request title: {rendered.title}\npull request body:\n{body}\n"

    return preview


def run(args: argparse.Namespace) -> int:
    inputs = inputs_from_args(args)
    spec = inputs.spec
    with stage_progress(targets=[spec.name]) as progress:  # drawn only on a terminal
        progress.stage(spec.name, "snapshot and plan")
        outcome = plan_target(spec=spec, repo=inputs.repo, edges=inputs.edges)
        progress.finish(spec.name, f"{len(outcome.plan.changesets)} change set(s)")
    if args.output == "json":
        json.dump(plan_json(outcome), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        preview = _preview(PullRequestText.for_spec(spec, cluster_name=inputs.edges.cluster_name))

        def renderer(cs: ChangeSet) -> str:  # a change set without file changes opens no pull request
            return _with_preview(changeset_text(cs), preview(cs)) if cs.files else changeset_text(cs)

        render_text(outcome, out=sys.stdout, renderer=renderer)
    problems = outcome.detection.problems if outcome.detection else ()
    for p in problems:
        print(f"writeback: error: {p}", file=sys.stderr)
    for e in outcome.plan.errors:
        print(f"writeback: error: {e}", file=sys.stderr)
    changes = any(cs.files for cs in outcome.plan.changesets)
    tally = Tally.of_problems(outcome.plan.errors, bad_input=bool(problems), changes=changes)
    return tally.exit_code(exit_on_changes=args.exit_code)


def unresolved_json(u: Unresolved) -> dict[str, Any]:
    return {
        "resource": u.resource.as_json(),
        "path": format_path(u.path) if u.path else None,
        "reason": u.reason,
    }


def changeset_json(cs: ChangeSet) -> dict[str, Any]:
    return {
        "id": cs.id,
        "fingerprint": cs.fingerprint,
        "target": cs.target,
        "review": cs.review.value,
        "files": [{"path": f.path, "diff": render_file_patch(f)} for f in cs.files],
        "drifts": [drift_to_json(d) for d in cs.drifts],
        "unresolved": [unresolved_json(u) for u in cs.unresolved],
    }


def plan_json(outcome: PlanOutcome) -> dict[str, Any]:
    return {"changesets": [changeset_json(cs) for cs in outcome.plan.changesets]}


def changeset_text(cs: ChangeSet) -> str:
    """One change set as text: header, drifts, unresolved fields, then the unified diff of each file."""
    lines = [f"changeset {cs.id}  (target {cs.target}, review: {cs.review.value}, fingerprint {cs.fingerprint[:12]})"]
    for d in cs.drifts:
        lines.append(f"  {d.decision.value:<9} {d.op.value:<6} {d.resource} {format_path(d.path)}")
    for u in cs.unresolved:
        where = f" {format_path(u.path)}" if u.path else ""
        lines.append(f"  unresolved {u.resource}{where}: {u.reason}")
    if cs.ignored:
        lines.append(f"  ({len(cs.ignored)} drift(s) deliberately not written back)")
    text = "\n".join(lines) + "\n"
    diffs = "".join(render_file_patch(f) for f in cs.files)
    return text + ("\n" + diffs if diffs else "  no file changes\n")


def render_text(outcome: PlanOutcome, *, out: TextIO, renderer: ChangeSetRenderer = changeset_text) -> None:
    if not outcome.plan.changesets:
        out.write("no change sets: nothing to write back\n")
    for i, cs in enumerate(outcome.plan.changesets):
        out.write(("\n" if i else "") + renderer(cs))
    for note in (*outcome.notes, *(outcome.detection.report.all_notes if outcome.detection else ())):
        out.write(f"note: {note}\n")
