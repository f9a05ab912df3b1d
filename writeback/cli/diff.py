"""``writeback diff``: print the drift between live and Git, with a decision and a reason per field."""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from writeback.cli.common import add_output_flags, add_source_flags, inputs_from_args
from writeback.cli.exits import Tally
from writeback.core.engine import report_to_json
from writeback.model import Dropped
from writeback.paths import format_path
from writeback.pipeline.drift import Detection, detect

ACTIONABLE = ("writeback", "flag", "unattributed", "new", "deleted")  # what --exit-code counts as drift
_ORDER = ("flag", "writeback", "unattributed", "new", "deleted", "pending", "ignore")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "diff",
        help="show the live changes and what writeback would do with each",
        description="Compare live resources (a cluster, or --live dumps) with the Git manifests at the revision "
        "the GitOps controller last applied, and print each drift with its decision and reason.",
    )
    add_source_flags(parser)
    add_output_flags(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    inputs = inputs_from_args(args)
    detection = detect(spec=inputs.spec, repo=inputs.repo, edges=inputs.edges)
    out = sys.stdout
    if args.output == "json":
        doc = detection_json(detection, explain=args.explain)
        json.dump(doc, out, indent=2, sort_keys=False, ensure_ascii=False)
        out.write("\n")
    else:
        render_text(detection, explain=args.explain, out=out)
    for p in detection.problems:
        print(f"writeback: error: {p}", file=sys.stderr)
    actionable = any(d.decision.value in ACTIONABLE for d in detection.report.drifts)
    return Tally(bad_input=bool(detection.problems), changes=actionable).exit_code(exit_on_changes=args.exit_code)


def detection_json(detection: Detection, *, explain: bool = False) -> dict[str, Any]:
    """The JSON contract of issue 3, plus ``revisionSource``, ``problems`` and (with --explain) ``dropped``."""
    doc = dict(report_to_json(detection.report, explain=explain))
    doc["revisionSource"] = detection.revision_source
    doc["problems"] = [str(p) for p in detection.problems]
    return doc


def _value(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _resource_title(r: Mapping[str, Any]) -> str:
    api = str(r.get("apiVersion", ""))
    group = api.rpartition("/")[0] if "/" in api else ""
    ns = f"{r['namespace']}/" if r.get("namespace") else ""
    return f"{r.get('kind')}{'.' + group if group else ''} {ns}{r.get('name')}"


def _text_diff(git: str, live: str) -> list[str]:
    """A multi-line value (a PEM bundle, a config file) as the lines that changed."""
    lines = difflib.unified_diff(git.splitlines(), live.splitlines(), "git", "live", n=1, lineterm="")
    return [f"            | {line}" for line in lines]


def _drift_lines(d: Mapping[str, Any]) -> list[str]:
    git, live = d.get("git"), d.get("live")
    if isinstance(git, str) and isinstance(live, str) and ("\n" in git or "\n" in live):
        by = f" by {d['manager']} ({d.get('operation')}) at {d.get('time')}" if d.get("manager") else ""
        head = [f"  {d['decision']:<9} {d['op']:<6} {d['path']}", f"            multi-line value changed{by}:"]
        return [*head, *_text_diff(git, live), f"            reason: {d.get('reason', '')}"]
    sides = []
    if "git" in d:
        sides.append(f"git {_value(d['git'])}")
    if "live" in d:
        sides.append(f"live {_value(d['live'])}")
    by = ""
    if d.get("manager"):
        by = f" by {d['manager']}" + (f" ({d['operation']})" if d.get("operation") else "")
        by += f" at {d['time']}" if d.get("time") else ""
    lines = [f"  {d['decision']:<9} {d['op']:<6} {d['path']}"]
    if sides:
        lines.append(f"            {' -> '.join(sides)}{by}")
    elif by:
        lines.append(f"           {by}")
    lines.append(f"            reason: {d.get('reason', '')}")
    return lines


def render_text(detection: Detection, *, explain: bool, out: TextIO) -> None:
    doc = report_to_json(detection.report)
    mode = str(doc.get("mode"))
    rev = str(doc.get("revision") or "")
    source = f" ({detection.revision_source})" if detection.revision_source else ""
    out.write(f"mode: {mode}   revision: {rev}{source}\n")
    for warning in detection.report.warnings:  # said before the drift: it changes how to read all of it
        out.write(f"warning: {warning}\n")
    drifts: Sequence[Mapping[str, Any]] = doc.get("drifts") or []
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for d in drifts:
        groups.setdefault(_resource_title(d["resource"]), []).append(d)
    dropped_by: dict[str, list[Dropped]] = {}
    if explain:
        for dr in detection.report.dropped:
            dropped_by.setdefault(_resource_title(dr.resource.as_json()), []).append(dr)
    for title in sorted(set(groups) | set(dropped_by)):
        out.write(f"\n{title}\n")
        items = sorted(groups.get(title, []), key=lambda d: (_rank(str(d["decision"])), str(d["path"])))
        for d in items:
            out.write("\n".join(_drift_lines(d)) + "\n")
        if explain and dropped_by.get(title):
            out.write("  dropped before comparing:\n")
            for dr in dropped_by[title]:
                out.write(f"    {format_path(dr.path)}  ({dr.side}: {dr.rule})\n")
    if not drifts:
        out.write("\nno drift\n")
    counts = {k: sum(1 for d in drifts if d["decision"] == k) for k in _ORDER}
    out.write("\n" + ", ".join(f"{n} {k}" for k, n in counts.items() if n) + ("\n" if drifts else ""))
    for note in detection.report.notes:
        out.write(f"note: {note}\n")
    for p in detection.problems:
        out.write(f"problem: {p}\n")


def _rank(decision: str) -> int:
    return _ORDER.index(decision) if decision in _ORDER else len(_ORDER)
