"""A clone of the repository alone runs its tests: nothing outside it is read (issue 19, section 1)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.support.gitrepos import git
from tests.support.testdata import CRDS, DATA

ROOT = Path(__file__).resolve().parents[1]


def test_a_fresh_clone_with_no_sibling_shared_collects_every_test(tmp_path: Path) -> None:
    clone = tmp_path / "alone" / "writeback"
    git("clone", "-q", "--no-hardlinks", str(ROOT), str(clone))
    assert not (clone.parent / "shared").exists()
    done = subprocess.run(
        # every test, the opt-in Argo CD suite included (its conftest selects it when -m names `argocd`)
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "argocd or not argocd",
        ],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "error" not in done.stdout.lower().split("\n")[-2], done.stdout[-2000:]
    collected = {line.split("::", 1)[0] for line in done.stdout.splitlines() if "::" in line}
    tracked = set(git("ls-files", "tests/**/test_*.py", "tests/test_*.py", cwd=clone).split())
    assert tracked, "no test files tracked"
    assert tracked <= collected, f"test files not collected in the clone: {sorted(tracked - collected)}"


def test_no_test_fixture_or_script_reads_outside_the_repository() -> None:
    pattern = re.compile(r"\.\./shared|[\"']shared[\"']|parents\[\d\]\.parent")
    scanned = [
        *ROOT.glob("tests/**/*.py"),
        *ROOT.glob("bench/**/*.py"),
        *ROOT.glob(".ci/*"),
        *ROOT.glob("tests/**/build"),
        ROOT / "pyproject.toml",
    ]
    offenders = [
        str(p.relative_to(ROOT))
        for p in scanned
        if p.is_file() and p != Path(__file__) and DATA not in p.parents and pattern.search(p.read_text("utf-8"))
    ]
    assert offenders == []


def test_the_crds_are_byte_for_byte_the_upstream_blobs() -> None:
    rows = [line.split("|") for line in (CRDS / "SOURCES.md").read_text().splitlines() if line.startswith("| shared/")]
    assert len(rows) == 6
    for row in rows:
        name, blob = Path(row[1].strip()).name, row[7].strip()
        assert git("hash-object", str(CRDS / name)) == blob, name
