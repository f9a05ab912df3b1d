"""``writeback diff``: print the drift between live and Git, with a decision and a reason per field.

stdout: the report (text or JSON). stderr: the warnings, notes and problems, each once, and on a terminal the
progress of the work. Ignored fields are grouped by reason (``-v``/``--explain``: each on its own).
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from writeback.cli.common import add_output_flags, add_source_flags, inputs_from_args
from writeback.cli.documents import Kind, document, problem, write
from writeback.cli.exits import Tally
from writeback.cli.helptext import summary
from writeback.cli.output import Palette, Printer
from writeback.drift.engine import report_to_json
from writeback.kube.paths import format_path
from writeback.kube.refs import group_of
from writeback.model import Dropped
from writeback.pipeline.detecting import Detection, detect
from writeback.service.progress import stage_progress

_ORDER = ("flag", "writeback", "unattributed", "new", "deleted", "pending", "ignore")
_GROUPED = "ignore"  # the decision whose items are grouped by reason unless -v


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
    printer = Printer.from_args(args)
    inputs = inputs_from_args(args)
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


def _resource_title(r: Mapping[str, Any]) -> str:
    api = str(r.get("apiVersion", ""))
    group = group_of(api)
    ns = f"{r['namespace']}/" if r.get("namespace") else ""
    return f"{r.get('kind')}{'.' + group if group else ''} {ns}{r.get('name')}"


def _text_diff(git: str, live: str, color: Palette) -> list[str]:
    """A multi-line value (a PEM bundle, a config file) as the lines that changed."""
    lines = difflib.unified_diff(git.splitlines(), live.splitlines(), "git", "live", n=1, lineterm="")
    return [color.diff_line(line, indent="            | ") for line in lines]


def _head(d: Mapping[str, Any], color: Palette) -> str:
    decision = str(d["decision"])
    return f"  {color.paint(f'{decision:<9}', decision)} {d['op']:<6} {d['path']}"


def _drift_lines(d: Mapping[str, Any], color: Palette) -> list[str]:
    git, live = d.get("git"), d.get("live")
    if isinstance(git, str) and isinstance(live, str) and ("\n" in git or "\n" in live):
        by = f" by {d['manager']} ({d.get('operation')}) at {d.get('time')}" if d.get("manager") else ""
        head = [_head(d, color), f"            multi-line value changed{by}:"]
        return [*head, *_text_diff(git, live, color), f"            reason: {d.get('reason', '')}"]
    sides = []
    if "git" in d:
        sides.append(f"git {_value(d['git'])}")
    if "live" in d:
        sides.append(f"live {_value(d['live'])}")
    by = ""
    if d.get("manager"):
        by = f" by {d['manager']}" + (f" ({d['operation']})" if d.get("operation") else "")
        by += f" at {d['time']}" if d.get("time") else ""
    lines = [_head(d, color)]
    if sides:
        lines.append(f"            {' -> '.join(sides)}{by}")
    elif by:
        lines.append(f"           {by}")
    lines.append(f"            reason: {d.get('reason', '')}")
    return lines


def _grouped_lines(items: Sequence[Mapping[str, Any]], color: Palette) -> tuple[list[str], int]:
    """Ignored items of one resource, one line per reason (with its count); and how many were folded."""
    by_reason: dict[str, list[Mapping[str, Any]]] = {}
    for d in items:
        by_reason.setdefault(str(d.get("reason", "")), []).append(d)
    lines, folded = [], 0
    label = color.paint(f"{_GROUPED:<9}", _GROUPED)
    for reason, group in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if len(group) == 1:
            lines.append(f"  {label} {group[0]['op']:<6} {group[0]['path']}: {reason}")
        else:
            folded += len(group)
            lines.append(f"  {label} {len(group)} fields: {reason}")
    return lines, folded


def render_text(detection: Detection, *, explain: bool, verbose: bool = True, printer: Printer) -> int:
    """The report as text on ``printer.out``; returns how many ignored fields were folded into groups."""
    out, color = printer.out, printer.color
    doc = report_to_json(detection.report)
    mode = str(doc.get("mode"))
    rev = str(doc.get("revision") or "")
    source = f" ({detection.revision_source})" if detection.revision_source else ""
    out.write(f"mode: {mode}   revision: {rev}{source}\n")
    drifts: Sequence[Mapping[str, Any]] = doc.get("drifts") or []
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for d in drifts:
        groups.setdefault(_resource_title(d["resource"]), []).append(d)
    dropped_by: dict[str, list[Dropped]] = {}
    if explain:
        for dr in detection.report.dropped:
            dropped_by.setdefault(_resource_title(dr.resource.as_json()), []).append(dr)
    folded = 0
    for title in sorted(set(groups) | set(dropped_by)):
        out.write(f"\n{color.paint(title, 'meta')}\n")
        items = sorted(groups.get(title, []), key=lambda d: (_rank(str(d["decision"])), str(d["path"])))
        for d in items:
            if verbose or d["decision"] != _GROUPED:
                out.write("\n".join(_drift_lines(d, color)) + "\n")
        if not verbose:
            lines, n = _grouped_lines([d for d in items if d["decision"] == _GROUPED], color)
            folded += n
            out.write("".join(f"{line}\n" for line in lines))
        if explain and dropped_by.get(title):
            out.write("  dropped before comparing:\n")
            for dr in dropped_by[title]:
                out.write(f"    {format_path(dr.path)}  ({dr.side}: {dr.rule})\n")
    if not drifts:
        out.write("\nno drift\n")
    counts = {k: sum(1 for d in drifts if d["decision"] == k) for k in _ORDER}
    out.write("\n" + ", ".join(f"{n} {k}" for k, n in counts.items() if n) + ("\n" if drifts else ""))
    return folded


def _rank(decision: str) -> int:
    return _ORDER.index(decision) if decision in _ORDER else len(_ORDER)
