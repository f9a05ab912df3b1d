"""``writeback diff``: print the drift between live and Git, with a decision and a reason per field.

stdout: the report (text or JSON). stderr: the warnings, notes and problems, each once, and on a terminal the
progress of the work. Ignored fields are grouped by reason (``-v``/``--explain``: each on its own).
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from writeback.cli.common import inputs_from_args, one_shot
from writeback.cli.documents import Kind, document, problem, write
from writeback.cli.exits import Tally
from writeback.cli.flags import add_output_flags, add_source_flags
from writeback.cli.helptext import summary
from writeback.cli.output import Palette, Printer
from writeback.drift.engine import report_to_json
from writeback.drift.report import shown
from writeback.kube.paths import format_path
from writeback.kube.pathtypes import ABSENT
from writeback.model import Decision, Drift, Dropped
from writeback.pipeline.detecting import Detection, detect
from writeback.service.progress import stage_progress

# the order in which a resource's drifts are listed (and counted)
_ORDER = (Decision.FLAG, Decision.WRITEBACK, Decision.UNATTRIBUTED, Decision.NEW, Decision.DELETED, Decision.PENDING,
          Decision.IGNORE)  # fmt: skip
_GROUPED = Decision.IGNORE  # the decision whose items are grouped by reason unless -v


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "diff",
        help=summary("diff"),
        description="Compare live resources (a cluster, or --live dumps) with the Git manifests at the revision "
        "the GitOps controller last applied, and print each drift with its decision and reason.",
    )
    add_source_flags(parser)
    add_output_flags(parser)
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="list every ignored field (default: grouped by reason)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    one_shot()
    printer = Printer.from_args(args)
    inputs = inputs_from_args(args)
    inputs = replace(inputs, spec=replace(inputs.spec, explain=bool(args.explain)))
    name = inputs.spec.name
    with stage_progress(targets=[name], transient=True) as progress:  # drawn on a terminal only
        edges = replace(inputs.edges, on_step=lambda step: progress.stage(name, step))
        detection = detect(spec=inputs.spec, repo=inputs.repo, edges=edges)
    if args.output != "text":
        write(detection_json(detection, explain=args.explain), out=printer.out, output=args.output)
        for warning in detection.report.warnings:  # the notes are in the document; these must reach a person too
            printer.say("warning", warning)
    else:
        verbose = args.verbose or args.explain
        grouped = render_text(detection, explain=args.explain, verbose=verbose, printer=printer)
        for warning in detection.report.warnings:
            printer.say("warning", warning)
        for note in detection.report.notes:
            printer.say("note", note)
        if grouped:
            printer.say("note", f"{grouped} ignored fields are grouped by reason; -v or --explain lists each")
    for p in detection.problems:
        printer.say("error", str(p))
    tally = Tally.of_decisions((d.decision for d in detection.report.drifts), bad_input=bool(detection.problems))
    return tally.exit_code(exit_on_changes=args.exit_code)


def detection_json(detection: Detection, *, explain: bool = False) -> dict[str, Any]:
    """The ``DriftReport`` document (``cli.documents``): the report of issue 3, plus ``revisionSource``,
    ``problems`` and (with --explain) ``dropped``."""
    doc = dict(report_to_json(detection.report, explain=explain))
    doc["revisionSource"] = detection.revision_source
    doc["problems"] = [problem(p) for p in detection.problems]
    return document(Kind.DRIFT_REPORT, doc)


def _value(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _text_diff(git: str, live: str, color: Palette) -> list[str]:
    """A multi-line value (a PEM bundle, a config file) as the lines that changed."""
    lines = difflib.unified_diff(git.splitlines(), live.splitlines(), "git", "live", n=1, lineterm="")
    return [color.diff_line(line, indent="            | ") for line in lines]


def _head(d: Drift, color: Palette) -> str:
    decision = d.decision.value
    return f"  {color.paint(f'{decision:<9}', decision)} {d.op.value:<6} {format_path(d.path)}"


def _drift_lines(d: Drift, color: Palette, *, explain: bool) -> list[str]:
    git, live = shown(d, d.git), shown(d, d.live)
    reason = f"            reason: {d.reason}" + (f" [rule: {d.rule}]" if explain and d.rule is not None else "")
    if isinstance(git, str) and isinstance(live, str) and ("\n" in git or "\n" in live):
        by = f" by {d.manager} ({d.operation}) at {d.time}" if d.manager else ""
        head = [_head(d, color), f"            multi-line value changed{by}:"]
        return [*head, *_text_diff(git, live, color), reason]
    sides = []
    if git is not ABSENT:
        sides.append(f"git {_value(git)}")
    if live is not ABSENT:
        sides.append(f"live {_value(live)}")
    by = ""
    if d.manager:
        by = f" by {d.manager}" + (f" ({d.operation})" if d.operation else "")
        by += f" at {d.time}" if d.time else ""
    lines = [_head(d, color)]
    if sides:
        lines.append(f"            {' -> '.join(sides)}{by}")
    elif by:
        lines.append(f"           {by}")
    lines.append(reason)
    return lines


def _grouped_lines(items: Sequence[Drift], color: Palette) -> tuple[list[str], int]:
    """Ignored items of one resource, one line per reason (with its count); and how many were folded."""
    by_reason: dict[str, list[Drift]] = {}
    for d in items:
        by_reason.setdefault(d.reason, []).append(d)
    lines, folded = [], 0
    label = color.paint(f"{_GROUPED.value:<9}", _GROUPED.value)
    for reason, group in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if len(group) == 1:
            lines.append(f"  {label} {group[0].op.value:<6} {format_path(group[0].path)}: {reason}")
        else:
            folded += len(group)
            lines.append(f"  {label} {len(group)} fields: {reason}")
    return lines, folded


def render_text(detection: Detection, *, explain: bool, verbose: bool = True, printer: Printer) -> int:
    """The report as text on ``printer.out``; returns how many ignored fields were folded into groups."""
    out, color, report = printer.out, printer.color, detection.report
    source = f" ({detection.revision_source})" if detection.revision_source else ""
    out.write(f"mode: {report.mode}   revision: {report.revision or ''}{source}\n")
    groups: dict[str, list[Drift]] = {}
    for d in report.drifts:
        groups.setdefault(str(d.resource), []).append(d)
    dropped_by: dict[str, list[Dropped]] = {}
    if explain:
        for dr in report.dropped:
            dropped_by.setdefault(str(dr.resource), []).append(dr)
    folded = 0
    for title in sorted(set(groups) | set(dropped_by)):
        out.write(f"\n{color.paint(title, 'meta')}\n")
        items = sorted(groups.get(title, []), key=lambda d: (_ORDER.index(d.decision), format_path(d.path)))
        for d in items:
            if verbose or d.decision is not _GROUPED:
                out.write("\n".join(_drift_lines(d, color, explain=explain)) + "\n")
        if not verbose:
            lines, n = _grouped_lines([d for d in items if d.decision is _GROUPED], color)
            folded += n
            out.write("".join(f"{line}\n" for line in lines))
        if explain and dropped_by.get(title):
            out.write("  dropped before comparing:\n")
            for dr in dropped_by[title]:
                out.write(f"    {format_path(dr.path)}  ({dr.side}: {dr.rule})\n")
    if not report.drifts:
        out.write("\nno drift\n")
    counts = {k: sum(1 for d in report.drifts if d.decision is k) for k in _ORDER}
    out.write("\n" + ", ".join(f"{n} {k.value}" for k, n in counts.items() if n) + ("\n" if report.drifts else ""))
    return folded
