"""One source of truth for what is documented (issue 19, section 4): exit codes, the configuration schema, the
versioned JSON/YAML documents and their shipped JSON Schemas, and what stderr says."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from ruamel.yaml import YAML

from tests.cli.process import DEMO, ROOT, environment, on_terminal, writeback
from tests.support.gitrepos import init_repo
from writeback.cli import exits
from writeback.cli.config_cmd import json_schema
from writeback.cli.documents import API_VERSION, Kind, schema
from writeback.config import parse_config
from writeback.errors import ExitCode
from writeback.model import Decision

# ---------------------------------------------------------------- exit codes


def _help_codes(*command: str) -> dict[int, str]:
    """The exit codes a command's --help lists, each meaning on one line."""
    text = writeback(*command, "--help").stdout
    block = text.split("exit codes:\n", 1)[1].split("\n\n", 1)[0]
    codes: dict[int, str] = {}
    for line in block.splitlines():
        m = re.match(r"  (\d+)\s+(.*)", line)
        if m:
            last = int(m.group(1))
            codes[last] = m.group(2)
        else:
            codes[last] += " " + line.strip()
    return codes


@pytest.mark.parametrize("command", [("diff",), ("plan",), ("run",), ("config", "validate"), ("break-glass", "end"),
                                     ("completion",), ()])  # fmt: skip
def test_help_lists_the_exit_codes_the_code_defines(command: tuple[str, ...]) -> None:
    expected = {int(code): text for code, text in exits.meanings(command[0] if command else "")}
    assert _help_codes(*command) == expected


def test_the_decisions_exit_code_counts_are_the_ones_diff_help_and_the_docs_name() -> None:
    assert exits.drift_decisions() == {d for d in Decision if d.actionable} and exits.drift_decisions()
    diff_help = _help_codes("diff")[ExitCode.DRIFT]
    for decision in Decision:
        code = exits.Tally.of_decisions([decision]).exit_code(exit_on_changes=True)
        named = re.search(rf"\b{decision.value}\b", diff_help) is not None
        assert (code is ExitCode.DRIFT) == named, (decision, code, diff_help)
        assert exits.Tally.of_decisions([decision]).exit_code() is ExitCode.OK  # only with --exit-code
    table = exits.markdown_table()
    for doc in ("docs/cli.md", "README.md"):
        assert table in (ROOT / doc).read_text(), f"{doc}: the exit-code table is not exits.markdown_table()"
    assert "`writeback`, `flag`, `unattributed`,\n  `new` or `deleted`" in (ROOT / "docs" / "diff.md").read_text()


def test_a_repository_that_does_not_exist_is_bad_input_as_a_missing_token(tmp_path: Path) -> None:
    args = ["run", "--once", "--live", "examples/hotfix/live.yaml", "--forge", "github", "--forge-project",
            "acme/gitops", "--token-env", "WB_TEST_TOKEN", "--path", "examples/hotfix/gitops"]  # fmt: skip
    missing = writeback(*args, "--repo-url", str(tmp_path / "nope.git"), env=environment(WB_TEST_TOKEN="ghp_x"))
    assert missing.returncode == 2, missing.stdout + missing.stderr  # was 3
    assert f"{tmp_path / 'nope.git'}: no such repository" in missing.stdout
    no_token = writeback(*args, "--repo-url", str(tmp_path / "nope.git"))
    assert no_token.returncode == 2 and "WB_TEST_TOKEN is not set" in no_token.stdout


# ---------------------------------------------------------------- the configuration schema


def _resolve(node: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(node)
    while "$ref" in out:
        ref = out.pop("$ref")
        out = {**defs[ref.rsplit("/", 1)[1]], **out}
    return out


def _locations(data: Any, node: Mapping[str, Any], defs: Mapping[str, Any], path: tuple[Any, ...] = ()
               ) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:  # fmt: skip
    """Every object in ``data`` with the schema node that governs it (of a union, the variants it validates)."""
    resolved = _resolve(node, defs)
    alternatives = resolved.get("anyOf") or resolved.get("oneOf")
    if alternatives:
        for alt in alternatives:
            if jsonschema.Draft202012Validator({**alt, "$defs": defs}).is_valid(data):
                yield from _locations(data, alt, defs, path)
        return
    if isinstance(data, dict) and "properties" in resolved:
        yield path, resolved
        for key, value in data.items():
            if key in resolved["properties"]:
                yield from _locations(value, resolved["properties"][key], defs, (*path, key))
    elif isinstance(data, list) and "items" in resolved:
        for i, value in enumerate(data):
            yield from _locations(value, resolved["items"], defs, (*path, i))


def _shown_values(prop: Mapping[str, Any], defs: Mapping[str, Any]) -> list[Any]:
    """The default and the examples the schema shows for a property (on the property or its definition)."""
    shown = [prop["default"]] if "default" in prop else []
    shown += list(prop.get("examples") or [])
    if "$ref" in prop:
        target = _resolve({"$ref": prop["$ref"]}, defs)
        shown += [target["default"]] if "default" in target and "default" not in prop else []
        shown += list(target.get("examples") or [])
    return shown


def test_every_default_and_example_the_schema_shows_validates() -> None:
    """Each default and example of the schema, put in place in the documented example configuration (and in the
    objects those defaults create), passes the validator: the schema never shows a value the validator refuses."""
    config_schema = json_schema()
    defs = config_schema["$defs"]
    example = YAML(typ="safe").load((ROOT / "config" / "writeback.example.yaml").read_text())
    checked: set[tuple[str, str, str]] = set()
    refused: list[str] = []

    def check(doc: dict[str, Any], under: tuple[Any, ...] = ()) -> None:
        for path, node in list(_locations(doc, config_schema, defs)):
            if path[: len(under)] != under:
                continue
            for prop, p in node["properties"].items():
                for value in _shown_values(p, defs):
                    key = (str(node.get("title")), prop, json.dumps(value, sort_keys=True))
                    if key in checked:
                        continue
                    checked.add(key)
                    candidate = copy.deepcopy(doc)
                    parent: Any = candidate
                    for part in path:
                        parent = parent[part]
                    parent[prop] = value
                    if prop == "clusters" and value == []:  # the example's targets name its clusters
                        for target in candidate["targets"]:
                            target.pop("cluster", None)
                    if prop == "env" and value is None:  # a SecretRef gives env or file: the default of one
                        parent["file"] = "/run/secrets/token"
                    try:
                        parse_config(candidate, source="schema")
                    except Exception as e:  # every refusal is collected and reported
                        refused.append(f"{'.'.join(map(str, (*path, prop)))} = {value!r}: {e}")
                        continue
                    if isinstance(value, dict) and value:  # the object this default creates: its own defaults
                        check(candidate, (*path, prop))

    check(example)
    assert refused == []
    models = {str(d.get("title")) for d in defs.values() if any("default" in p or "examples" in p
                                                               for p in d.get("properties", {}).values())}  # fmt: skip
    assert models <= {title for title, _, _ in checked}, models - {title for title, _, _ in checked}
    assert ("BreakGlass", "max_ttl", '"1d"') in checked and ("BreakGlass", "max_ttl", '"1h30m"') in checked
    max_ttl = defs["BreakGlass"]["properties"]["max_ttl"]
    assert "format" not in max_ttl and max_ttl["default"] == "1d"  # no ISO 8601 "P1D" the validator refuses


# ---------------------------------------------------------------- the versioned documents


def _validate(kind: Kind, doc: Any) -> None:
    validator = jsonschema.Draft202012Validator(dict(schema(kind)))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert errors == [], [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    assert doc["apiVersion"] == API_VERSION and doc["kind"] == kind.value


def test_the_schemas_ship_in_the_package_and_are_valid() -> None:
    for kind in Kind:
        jsonschema.Draft202012Validator.check_schema(dict(schema(kind)))
        assert (ROOT / "writeback" / "schemas" / kind.schema_file).is_file()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"schemas/*.json"' in pyproject  # package data: installed with the wheel


def _both(*args: str, stdin: str | None = None) -> tuple[int, Any]:
    """The document of ``writeback ARGS`` as -o json and as -o yaml: the same."""
    as_json = writeback(*args, "-o", "json", stdin=stdin)
    as_yaml = writeback(*args, "-o", "yaml", stdin=stdin)
    assert as_json.returncode == as_yaml.returncode, (as_json.stderr, as_yaml.stderr)
    doc = json.loads(as_json.stdout)
    assert yaml.safe_load(as_yaml.stdout) == doc
    assert as_yaml.stdout.startswith(f"apiVersion: {API_VERSION}\nkind: ")
    return as_json.returncode, doc


def test_diff_and_plan_print_versioned_documents(tmp_path: Path) -> None:
    code, diff = _both("diff", *DEMO, "--explain")
    assert code == 0
    _validate(Kind.DRIFT_REPORT, diff)
    assert diff["drifts"] and diff["dropped"]
    code, plan = _both("plan", *DEMO)
    assert code == 0
    _validate(Kind.PLAN, plan)
    assert plan["changesets"][0]["pullRequest"]["body"].startswith("<!-- writeback:fingerprint=")
    # problems are objects: the file, line and column where known
    repo = tmp_path / "repo"
    init_repo(repo)
    (repo / "apps").mkdir()
    (repo / "apps" / "broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [x\n")
    (repo / "apps" / "half.yaml").write_text("kind: ConfigMap\nmetadata: {name: x}\n")
    args = ["--live", str(ROOT / "examples/hotfix/live.yaml"), "--repo", str(repo), "--path", "apps",
            "--allow-empty-live"]  # fmt: skip
    for command, kind in (("diff", Kind.DRIFT_REPORT), ("plan", Kind.PLAN)):
        code, doc = _both(command, *args)
        assert code == 2
        _validate(kind, doc)
        by_file = {p["file"]: p for p in doc["problems"]}
        assert by_file["apps/broken.yaml"]["line"] == 3 and by_file["apps/broken.yaml"]["column"] >= 1
        assert by_file["apps/broken.yaml"]["message"].startswith("not valid YAML: ")
        assert by_file["apps/half.yaml"]["message"] == "document 1: a manifest without apiVersion (it has kind)"


BAD_CONFIG = "targets:\n  - name: prod\n    repo_url: /srv/git/gitops.git\n    bsae: main\n"


def test_config_validate_prints_a_versioned_document_with_located_problems(tmp_path: Path) -> None:
    bad, broken = tmp_path / "prod.yaml", tmp_path / "broken.yaml"
    bad.write_text(BAD_CONFIG)
    broken.write_text("targets:\n  - name: a\n    repo_url: [x\n")
    good = str(ROOT / "config" / "writeback.example.yaml")
    code, doc = _both("config", "validate", good, str(bad), str(broken))
    assert code == 2
    _validate(Kind.CONFIG_VALIDATION, doc)
    assert [f["valid"] for f in doc["files"]] == [True, False, False]
    [unknown] = doc["files"][1]["errors"]
    assert (unknown["file"], unknown["line"], unknown["column"], unknown["key"]) == (str(bad), 4, 5, "targets[0]")
    assert unknown["message"] == "unknown key `bsae`; did you mean `base`?"
    [syntax] = doc["files"][2]["errors"]
    assert syntax["file"] == str(broken) and syntax["line"] == 3 and syntax["message"].startswith("not valid YAML")


def test_run_prints_a_versioned_document_not_a_bare_list(tmp_path: Path) -> None:
    from tests.forges.conftest import make_fake
    from tests.forges.test_run_cli import PROJECTS, TOKENS, flags, live_dump, make_bare

    bare = make_bare(tmp_path, "repo")
    fake = make_fake("github", bare)
    try:
        env = environment(WB_TEST_TOKEN=TOKENS["github"])
        args = flags("github", bare, fake, live_dump(tmp_path, "registry.example.com/web:1.0.4"))
        created = writeback(*args, "--dry-run", "-o", "json", env=env)
        assert created.returncode == 0, created.stderr
        doc = json.loads(created.stdout)
        _validate(Kind.RUN_REPORT, doc)
        [result] = doc["results"]
        assert result["outcome"] == "created" and result["target"] == "apps"
        failed = writeback(*args[:-2], "--live", str(tmp_path / "missing.yaml"), "-o", "yaml", env=env)
        assert failed.returncode == 2
        as_yaml = yaml.safe_load(failed.stdout)
        _validate(Kind.RUN_REPORT, as_yaml)
        assert as_yaml["results"][0]["outcome"] == "failed" and as_yaml["results"][0]["input_error"] is True
        assert PROJECTS["github"] == "octo-org/gitops"
    finally:
        fake.stop()


# ---------------------------------------------------------------- stderr


def test_every_failure_of_run_starts_writeback_error(tmp_path: Path) -> None:
    args = ["run", "--once", "--dry-run", "--live", "examples/hotfix/live.yaml", "--forge", "github",
            "--repo-url", str(tmp_path / "gitops.git"), "--token-env", "WB_NO_SUCH_TOKEN"]  # fmt: skip
    piped = writeback(*args)
    assert piped.returncode == 2
    lines = piped.stderr.splitlines()
    assert lines and all(line.startswith("writeback: error: ") for line in lines), piped.stderr
    assert "ERROR " not in piped.stderr and "writeback.pipeline" not in piped.stderr
    tty = on_terminal(*args, stream="stderr")
    assert tty.code == 2
    plain = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line) for line in tty.tty.splitlines()]
    said = [line for line in plain if "error" in line]
    assert said and all(line.startswith("writeback: error: ") for line in said), said
    assert "\x1b[1;31merror:" in tty.tty or "\x1b[31;1merror:" in tty.tty  # the level in colour on a terminal


def test_an_empty_standard_input_is_called_that() -> None:
    result = writeback("diff", "--live", "-", "--repo", ".", "--path", "examples/hotfix/gitops", stdin="")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("writeback: error: --live -: standard input is empty")
    assert "None" not in result.stderr


class _CountingStream:
    """A text stream that counts the writes it is handed (each one a system call when output is unbuffered)."""

    def __init__(self) -> None:
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_a_large_document_reaches_the_stream_in_a_few_writes_and_unchanged(output: str) -> None:
    """json.dump and yaml.dump write every token on its own: a 2,000-drift report was about 40,000 writes to stdout,
    each a system call under PYTHONUNBUFFERED (the container image sets it). The document is written joined, and
    says exactly what the serializer says."""
    from writeback.cli.documents import document, write

    drifts = [{"resource": {"kind": "Deployment", "name": f"web-{n}"}, "path": "spec.replicas", "live": n, "git": 3,
               "note": "ünïcode kept as is"} for n in range(2000)]  # fmt: skip
    doc = document(Kind.DRIFT_REPORT, {"drifts": drifts})
    stream = _CountingStream()
    write(doc, out=stream, output=output)  # type: ignore[arg-type]
    text = "".join(stream.writes)
    if output == "json":
        assert text == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    else:
        assert yaml.safe_load(text) == doc
        assert "ünïcode" in text
    assert 1 <= len(stream.writes) <= 40, len(stream.writes)
