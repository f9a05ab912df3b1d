"""``writeback config validate FILE`` and ``writeback config schema``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from writeback.cli.common import load_checked_config
from writeback.config import Config

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("config", help="validate the configuration file or print its JSON Schema")
    sub = parser.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    validate = sub.add_parser("validate", help="check a configuration file; every error names its key path")
    validate.add_argument("file", metavar="FILE", help="the YAML configuration file")
    validate.add_argument("--output", "-o", choices=("text", "json"), default="text", help="output format")
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


def _validate(args: argparse.Namespace) -> int:
    config = load_checked_config(args.file)  # raises ConfigError (exit 2) naming every bad key path
    if args.output == "json":
        targets = [{"name": t.name, "repo_url": t.repo_url, "base": t.base, "path": t.path} for t in config.targets]
        json.dump({"file": args.file, "valid": True, "targets": targets}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(f"{args.file}: valid")
    for line in summary(config):
        print(line)
    return 0


def _schema(args: argparse.Namespace) -> int:
    json.dump(json_schema(), sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
    return 0
