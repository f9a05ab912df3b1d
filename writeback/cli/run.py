"""``writeback run --once``: one full cycle per target (snapshot, plan, push, ensure PR), one line per outcome."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from writeback.cli.common import edges_for, one_shot, spec_of, targets_from_args
from writeback.cli.documents import Kind, document, write
from writeback.cli.exits import Tally
from writeback.cli.flags import add_format_flag, add_repo_forge_flags, add_source_flags
from writeback.cli.helptext import summary
from writeback.cli.output import Palette, Printer
from writeback.config import Target
from writeback.errors import InputError
from writeback.model import EnsureResult, ResultReason
from writeback.pipeline.cycling import CycleOptions, run_cycle, run_targets
from writeback.service.progress import stage_progress


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help=summary("run"),
        description="For every target of --config (or the one target the repo and forge flags describe): "
        "compare live with Git, patch the repo, push a bot branch and ensure its pull request (GitHub) or "
        "merge request (GitLab). Prints one line per outcome: created, updated, unchanged, closed, skipped "
        "or failed, with the URL.",
    )
    add_source_flags(parser, repo=False)  # run clones --repo-url (or the target's repo_url) itself
    add_repo_forge_flags(parser)
    parser.add_argument(
        "--once", action="store_true", help="run one cycle and exit (without it: the service, forever, needs --config)"
    )
    parser.add_argument("--dry-run", action="store_true", help="everything except the push and the API writes")
    parser.add_argument("--workdir", metavar="DIR", help="where the clones live (default: state_dir, else a temp dir)")
    add_format_flag(parser)
    parser.add_argument(
        "--exit-code", action="store_true", help="exit 1 when a pull request was opened or updated (with --once)"
    )
    parser.set_defaults(func=run)


def result_line(r: EnsureResult, *, color: Palette | None = None) -> str:
    outcome = str(r.outcome)
    parts = [r.target, color.paint(outcome, outcome) if color else outcome, r.url or "-"]
    if r.changeset_id:
        parts.insert(1, r.changeset_id)
    return "  ".join(parts) + (f"  ({r.detail})" if r.detail else "")


# The JSON flags docs/forges.md documents, one per reason.
_REASON_FLAGS = {
    ResultReason.BAD_INPUT: "input_error",
    ResultReason.RATE_LIMITED: "rate_limited",
    ResultReason.PERSON_COMMITTED: "human",
    ResultReason.PERSISTENT_DRIFT: "persistent_drift",
    ResultReason.CONCURRENT_WRITER: "concurrent",
}


def result_json(r: EnsureResult) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "target": r.target,
        "changeset": r.changeset_id or None,
        "outcome": str(r.outcome),
        "url": r.url,
        "detail": r.detail,
    }
    if r.pr is not None:
        doc["pr"] = r.pr
    if r.head is not None:
        doc["head"] = r.head
    if r.reason is not None:
        doc["reason"] = str(r.reason)
        doc[_REASON_FLAGS[r.reason]] = True
    return doc


def run_json(results: list[EnsureResult]) -> dict[str, Any]:
    """The ``RunReport`` document (``cli.documents``): one result per target and change set."""
    return document(Kind.RUN_REPORT, {"results": [result_json(r) for r in results]})


def _serve(args: argparse.Namespace) -> int:
    """Without --once: the long-running service (writeback.service.serving), every target on its schedule."""
    if not args.config:
        raise InputError("run without --once is the long-running service: give --config FILE (or add --once)")
    if args.live or args.dry_run or args.exit_code:
        raise InputError("--live, --dry-run and --exit-code work only with --once")
    import logging

    from writeback.service.serving import serve

    cfg, targets = targets_from_args(args)
    assert cfg is not None
    cfg = cfg.model_copy(update={"targets": targets})
    level = logging.DEBUG if getattr(args, "debug", False) else logging.INFO
    return serve(cfg, workdir=Path(args.workdir) if args.workdir else None, level=level)


def run(args: argparse.Namespace) -> int:
    if not args.once:
        return _serve(args)
    one_shot()
    cfg, targets = targets_from_args(args)
    printer = Printer.from_args(args)
    with tempfile.TemporaryDirectory(prefix="writeback-run-") as tmp:
        workdir = Path(args.workdir or (Path(cfg.state_dir) / "repos" if cfg and cfg.state_dir else tmp))

        with stage_progress(targets=[t.name for t in targets]) as progress:  # only on a terminal

            def cycle(target: Target) -> list[EnsureResult]:
                spec = spec_of(args, cfg, target)
                options = CycleOptions(
                    workdir=workdir, dry_run=args.dry_run, on_stage=lambda stage: progress.stage(target.name, stage)
                )
                done = run_cycle(spec, edges=edges_for(args, cfg, target), options=options)
                progress.finish(target.name, ", ".join(sorted({str(r.outcome) for r in done})) or "no change")
                return done

            results = run_targets(targets, cycle=cycle)
    if args.output != "text":
        write(run_json(results), out=printer.out, output=args.output)
    else:
        for r in results:
            printer.write(result_line(r, color=printer.color) + "\n")
        if not results:
            printer.write("nothing to do: no drift, no open pull requests\n")
    return Tally.of_results(results).exit_code(exit_on_changes=args.exit_code)
