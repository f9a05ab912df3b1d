"""`writeback run` without --once: input errors before anything starts."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from writeback.cli import main


@pytest.fixture(autouse=True)
def _logging_restored(root_logging: None) -> None:
    """Every test here runs the CLI, which sets up logging: restored after each."""


def write_config(tmp_path: Path, address: str) -> Path:
    data = {
        "targets": [{"name": "a", "repo_url": str(tmp_path / "none.git"), "forge": {"kind": "github"},
                     "schedule": {"interval_seconds": 3600}}],
        "metrics": {"address": address},
    }  # fmt: skip
    path = tmp_path / "w.yaml"
    with path.open("w") as f:
        YAML(typ="safe", pure=True).dump(data, f)
    return path


def test_the_service_needs_a_config_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--repo-url", "https://x/r.git", "--forge", "github"]) == 2
    assert "run without --once is the long-running service: give --config FILE" in capsys.readouterr().err


def test_one_shot_flags_are_refused_in_service_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, "127.0.0.1:0")
    assert main(["run", "--config", str(path), "--live", str(tmp_path)]) == 2
    assert "--live, --dry-run and --exit-code work only with --once" in capsys.readouterr().err


def test_a_busy_metrics_address_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        path = write_config(tmp_path, f"127.0.0.1:{port}")
        assert main(["run", "--config", str(path)]) == 2
    assert f"metrics.address 127.0.0.1:{port}: cannot listen" in capsys.readouterr().err
