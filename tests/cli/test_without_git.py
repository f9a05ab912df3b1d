"""Without git on PATH, writeback still starts, and a command that needs git says so in one line (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _writeback(*args: str, cwd: Path, empty: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(empty), "PYTHONPATH": str(ROOT), "HOME": str(cwd)}
    return subprocess.run(
        [sys.executable, "-m", "writeback.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_help_and_a_clear_error_without_git(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    (tmp_path / "live.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n")

    assert _writeback("--help", cwd=tmp_path, empty=empty).returncode == 0
    diff = _writeback("diff", "--live", "live.yaml", "--repo", ".", cwd=tmp_path, empty=empty)
    assert diff.returncode == 2
    assert diff.stderr == "writeback: error: git is not on PATH\n"
