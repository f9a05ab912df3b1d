"""`writeback config validate` and `writeback config schema`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

from writeback.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "writeback.example.yaml"


def _example() -> dict[str, Any]:
    example = YAML(typ="safe", pure=True).load(EXAMPLE.read_text())
    assert isinstance(example, dict)
    return example


def at(err: str, path: Path, rest: str) -> bool:
    """``err`` has the line ``PATH:LINE:COL: rest...``."""
    return re.search(re.escape(str(path)) + r":\d+:\d+: " + re.escape(rest), err) is not None


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "writeback.yaml"
    with path.open("w") as f:
        YAML(typ="safe", pure=True).dump(data, f)
    return path


def test_example_validates_with_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "validate", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "valid" in out
    assert "2 target(s)" in out
    assert "payments:" in out and "github" in out
    assert "checkout-staging:" in out and "gitlab" in out and "kustomize" in out


def test_every_error_names_its_key_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _example()
    data["targets"][0]["forge"]["token"] = "ghp_not_a_reference_0123456789"
    data["targets"][1]["schedule"]["cron"] = "99 * * * *"
    data["targets"][1]["selectors"][0]["colour"] = "blue"
    data["metrics"]["address"] = "nowhere"
    path = _write(tmp_path, data)
    assert main(["config", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert at(err, path, "targets[0].forge.token: inline secrets are rejected")
    assert "{env: VAR_NAME} or {file: /path/to/file}" in err
    assert at(err, path, "targets[1].schedule.cron: not a valid crontab line")
    assert at(err, path, "targets[1].selectors[0]: unknown key `colour` (known: apiVersion, exclude, kind,")
    assert at(err, path, "metrics.address: must be host:port")
    assert "ghp_not_a_reference_0123456789" not in err  # the secret value is never echoed


def test_cross_reference_errors_name_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _example()
    data["targets"][1]["cluster"] = "mars"
    path = _write(tmp_path, data)
    assert main(["config", "validate", str(path)]) == 2
    assert "targets[1].cluster: unknown cluster 'mars'" in capsys.readouterr().err


def test_missing_and_unparsable_files_are_input_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "validate", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml: cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("targets: [\n")
    assert main(["config", "validate", str(bad)]) == 2
    assert "bad.yaml:2:1: not valid YAML: " in capsys.readouterr().err


def test_schema_is_valid_draft_2020_12_and_accepts_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(_example())) == []
    bad = _example()
    bad["targets"][0]["forge"]["kind"] = "bitbucket"
    error = jsonschema.exceptions.best_match(validator.iter_errors(bad))
    assert error is not None
    assert list(error.absolute_path) == ["targets", 0, "forge", "kind"]


def test_docs_describe_every_key_of_the_schema() -> None:
    from writeback.cli.config_cmd import json_schema

    docs = (ROOT / "docs" / "config.md").read_text()
    schema = json_schema()
    keys = set(schema["properties"])
    for definition in schema["$defs"].values():
        keys |= set(definition.get("properties", {}))
    missing = sorted(k for k in keys if f"`{k}`" not in docs)
    assert missing == [], f"docs/config.md does not describe: {missing}"


def test_validate_json_output_and_every_inline_secret_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "validate", str(EXAMPLE), "--output", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is True
    (file,) = report["files"]
    assert file["valid"] is True and file["errors"] == []
    assert [t["name"] for t in file["targets"]] == ["payments", "checkout-staging"]

    data = _example()
    data["targets"][0]["git"]["ssh_key"] = "-----BEGIN OPENSSH PRIVATE KEY-----"
    data["targets"][0]["pull_request"]["fingerprint_key"] = "hmac-key-value"
    path = _write(tmp_path, data)
    assert main(["config", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert at(err, path, "targets[0].git.ssh_key: inline secrets are rejected")
    assert at(err, path, "targets[0].pull_request.fingerprint_key: inline secrets are rejected")
    assert "BEGIN OPENSSH" not in err and "hmac-key-value" not in err


@pytest.mark.parametrize(
    "url", ["https://ghp_SECRET0123@github.com/a/b.git", "https://x:ghp_SECRET0123@github.com/a/b.git",
            "ssh://git:ghp_SECRET0123@host/a.git"],
)  # fmt: skip
def test_credentials_in_repo_url_are_rejected(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _example()
    data["targets"][0]["repo_url"] = url
    path = _write(tmp_path, data)
    assert main(["config", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert at(err, path, "targets[0].repo_url: credentials in the URL are rejected")
    assert "ghp_SECRET0123" not in err


@pytest.mark.parametrize(
    ("template", "why"),
    [("writeback/{target}", "must contain {changeset}"), ("wb/{changeset}/{team}", "only {target} and {changeset}"),
     ("wb/{changeset}/{", "only {target} and {changeset}")],
)  # fmt: skip
def test_branch_template_is_checked(
    template: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _example()
    data["targets"][0]["pull_request"]["branch_template"] = template
    path = _write(tmp_path, data)
    assert main(["config", "validate", str(path)]) == 2
    assert at(capsys.readouterr().err, path, f"targets[0].pull_request.branch_template: {why}")
