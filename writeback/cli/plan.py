"""``writeback plan``: print the change sets (unified diffs) that would be proposed; commits nothing."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from writeback.adapters.controllers import context_name
from writeback.adapters.forges.opening import read_secret
from writeback.cli.common import Inputs, add_source_flags, inputs_from_args
from writeback.config import Target, load_config
from writeback.core.engine import drift_to_json
from writeback.core.unified_diffs import render_file_patch
from writeback.model import ChangeSet, Unresolved
from writeback.paths import format_path
from writeback.pipeline.plan import PlanOptions, PlanOutcome, plan_target
from writeback.pipeline.previewing import pr_preview
from writeback.service.progress import stage_progress

EXIT_OK, EXIT_DRIFT, EXIT_INPUT, EXIT_FAILED = 0, 1, 2, 3

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


def _options(args: argparse.Namespace, target: Target | None, target_name: str) -> PlanOptions:
    source, edit_base, key = args.source, bool(args.edit_base), None
    if target is not None:
        source = source or target.source
        edit_base = edit_base or target.edit_base
        ref = target.pull_request.fingerprint_key
        key = read_secret(ref, key=f"targets[{target.name}].pull_request.fingerprint_key").encode() if ref else None
    return PlanOptions(
        target=target_name or _default_name(args), source=source, edit_base=edit_base, fingerprint_key=key
    )


def _config_target(args: argparse.Namespace, name: str) -> Target | None:
    """The config target ``plan`` runs for, if any (its templates and PR settings shape the preview)."""
    if not args.config:
        return None
    return next((t for t in load_config(args.config).targets if t.name == name), None)


def _with_preview(text: str, preview: str) -> str:
    """The change set's summary, then the PR title and body it would open, then its diff."""
    summary, sep, diff = text.partition("\n\n")
    return f"{summary}\n\n{preview}" + (diff if sep else "")


def _cluster_name(inputs: Inputs) -> str:
    """How the PR preview names the cluster: the live dump offline, else the kubeconfig context."""
    if inputs.live_path is not None:
        return f"offline dump {Path(inputs.live_path).name}"
    return (inputs.access and context_name(inputs.access)) or ""


def _default_name(args: argparse.Namespace) -> str:
    """Without a config target: the --path (or the repo directory's) name."""
    path = Path(args.path or ".")
    name = path.name if str(path) not in (".", "") else Path(args.repo or ".").resolve().name
    return name or "default"


def run(args: argparse.Namespace) -> int:
    inputs = inputs_from_args(args)
    target = _config_target(args, inputs.target)
    options = _options(args, target, inputs.target)
    cluster = inputs.open_cluster()
    with stage_progress(targets=[inputs.target]) as progress:  # drawn only on a terminal
        progress.stage(inputs.target, "snapshot and plan")
        outcome = plan_target(request=inputs.request, options=options, cluster=cluster, live_path=inputs.live_path)
        progress.finish(inputs.target, f"{len(outcome.plan.changesets)} change set(s)")
    if args.output == "json":
        json.dump(plan_json(outcome), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        preview = pr_preview(target=target, cluster_name=_cluster_name(inputs))

        def renderer(cs: ChangeSet) -> str:  # a change set without file changes opens no pull request
            return _with_preview(changeset_text(cs), preview(cs)) if cs.files else changeset_text(cs)

        render_text(outcome, out=sys.stdout, renderer=renderer)
    problems = outcome.detection.problems if outcome.detection else ()
    for p in problems:
        print(f"writeback: error: {p}", file=sys.stderr)
    for e in outcome.plan.errors:
        print(f"writeback: error: {e}", file=sys.stderr)
    if any(e for e in outcome.plan.errors if "aborted" in e):
        return EXIT_FAILED
    if problems or outcome.plan.errors:
        return EXIT_INPUT
    if args.exit_code and any(cs.files for cs in outcome.plan.changesets):
        return EXIT_DRIFT
    return EXIT_OK


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
