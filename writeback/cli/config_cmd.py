"""``writeback config validate FILE...`` and ``writeback config schema``."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Any

from writeback.cli import helptext
from writeback.cli.common import load_checked_config
from writeback.cli.documents import Kind, document, problem, write
from writeback.cli.exits import Tally
from writeback.cli.flags import add_format_flag
from writeback.cli.output import Printer
from writeback.config import Config, InvalidConfig
from writeback.config_errors import KeyProblem
from writeback.errors import ConfigError, YamlError

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("config", help=helptext.summary("config"))
    sub = parser.add_subparsers(dest="config_command", metavar="SUBCOMMAND")
    validate = sub.add_parser(
        "validate",
        help="check configuration files; every error names its file, line and key path",
        description="Check each configuration file and print a summary of its targets, or every error of it "
        "(FILE:LINE:COL: key.path: problem). Every file is checked, whatever the others hold.",
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="YAML configuration files")
    add_format_flag(validate)
    validate.set_defaults(func=_validate)
    schema = sub.add_parser("schema", help="print the JSON Schema of the configuration file (for editors)")
    schema.set_defaults(func=_schema)


def json_schema() -> dict[str, Any]:
    """The configuration's JSON Schema (Draft 2020-12), generated from the pydantic models."""
    schema = Config.model_json_schema(by_alias=True)
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "https://writeback.dev/schemas/config.json",
        "title": "writeback configuration",
        **{k: v for k, v in schema.items() if k != "title"},
    }


def summary(config: Config) -> list[str]:
    """One line per target: what it watches, where it writes and when."""
    lines = [f"{len(config.targets)} target(s), {len(config.clusters)} cluster(s)"]
    for t in config.targets:
        forge = f"{t.forge.kind} {t.forge.project or ''}".rstrip() if t.forge else "no forge"
        when = f"cron '{t.schedule.cron}'" if t.schedule.cron else f"every {t.schedule.interval_seconds:g}s"
        kinds = ", ".join(s.kind for s in t.selectors) or "all selected kinds"
        source = t.source or "auto"
        lines.append(f"  {t.name}: {kinds} -> {t.repo_url} ({t.base}:{t.path}, {source}) via {forge}, {when}")
    return lines


def _check(file: str) -> tuple[Config | None, tuple[Any, ...]]:
    """The configuration, or its problems: ``KeyProblem``s (file, line, column, key), or one error for the file."""
    try:
        return load_checked_config(file), ()
    except InvalidConfig as e:
        return None, e.details or e.problems
    except ConfigError as e:  # unreadable, not YAML, not a mapping: one error for the file
        cause = e.__cause__
        if isinstance(cause, YamlError):
            at = KeyProblem(file=file, line=cause.line, column=cause.column, message=f"not valid YAML: {cause.problem}")
            return None, (_Located(text=str(e), where=at),)
        return None, (_Located(text=str(e), where=KeyProblem(file=file, message=str(e))),)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Located:
    """An error about a whole file: its text as printed, and where it is for the document."""

    text: str
    where: KeyProblem

    def __str__(self) -> str:
        return self.text


def validation_json(checked: list[tuple[str, Config | None, tuple[Any, ...]]]) -> dict[str, Any]:
    """The ``ConfigValidation`` document (``cli.documents``)."""
    files = [
        {"file": file, "valid": config is not None,
         "errors": [problem(e.where if isinstance(e, _Located) else e) for e in errors],
         "targets": [{"name": t.name, "repo_url": t.repo_url, "base": t.base, "path": t.path}
                     for t in (config.targets if config else ())]}
        for file, config, errors in checked
    ]  # fmt: skip
    return document(Kind.CONFIG_VALIDATION, {"valid": all(c is not None for _, c, _ in checked), "files": files})


def _validate(args: argparse.Namespace) -> int:
    printer = Printer.from_args(args)
    checked = [(file, *_check(file)) for file in args.files]
    if args.output != "text":
        write(validation_json(checked), out=printer.out, output=args.output)
    for file, config, errors in checked:
        if config is not None and args.output == "text":
            printer.write(f"{file}: valid\n" + "".join(f"{line}\n" for line in summary(config)))
        for error in errors:
            printer.say("error", error)
    return Tally(bad_input=any(c is None for _, c, _ in checked)).exit_code()


def _schema(args: argparse.Namespace) -> int:
    printer = Printer.from_args(args)
    json.dump(json_schema(), printer.out, indent=2, sort_keys=False)
    printer.write("\n")
    return Tally().exit_code()
