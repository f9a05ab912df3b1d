"""Startup: ``writeback --version`` and ``--help`` import no command's work, and a command imports only its own.

Measured, not timed: the figures are in bench/RESULTS.md (bench/bench_startup.py); here the imports are checked:
the real process lists ``sys.modules`` as it exits (``-X importtime`` misses what ``importlib.import_module``
imports).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.process import ROOT, environment

HEAVY = ("kubernetes", "git", "github", "gitlab", "jinja2")
MARK = "--- modules ---"
LAUNCH = (
    "import atexit, sys\n"
    f"atexit.register(lambda: print({MARK!r}, *sorted(sys.modules), sep='\\n', file=sys.stderr))\n"
    "from writeback.cli import entrypoint\n"
    "sys.argv[0] = 'writeback'\n"
    "entrypoint()\n"
)


def imported(*args: str) -> set[str]:
    """Every module the real process imports for ``writeback ARGS``."""
    proc = subprocess.run([sys.executable, "-c", LAUNCH, *args], cwd=ROOT, env=environment(),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert MARK in proc.stderr, proc.stderr[-2000:]
    names = set(proc.stderr.split(MARK + "\n", 1)[1].split())
    assert "writeback.cli" in names
    return names


def of(names: set[str], package: str) -> list[str]:
    return sorted(n for n in names if n == package or n.startswith(package + "."))


@pytest.mark.parametrize("args", [("--version",), ("--help",)])
def test_version_and_help_import_no_client_library_and_no_command(args: tuple[str, ...]) -> None:
    names = imported(*args)
    for package in HEAVY:
        assert not of(names, package), (args, package, of(names, package)[:5])
    ours = {"writeback.cli", "writeback.errors"}
    work = [n for n in names if n.startswith("writeback.") and n.split(".")[0] + "." + n.split(".")[1] not in ours]
    assert work == [], work  # not even the model or the config
    assert of(names, "writeback.cli") == ["writeback.cli", "writeback.cli.exits", "writeback.cli.helptext",
                                         "writeback.cli.output"]  # fmt: skip
    assert not of(names, "pydantic") and not of(names, "rich")


def test_a_command_imports_its_own_module_only() -> None:
    names = imported("config", "schema")
    assert "writeback.cli.config_cmd" in names
    for other in ("writeback.cli.diff", "writeback.cli.plan", "writeback.cli.run", "writeback.cli.breakglass"):
        assert other not in names
    assert not of(names, "kubernetes") and not of(names, "github") and not of(names, "gitlab")


def test_offline_diff_imports_no_cluster_forge_or_template_library(tmp_path: object) -> None:
    names = imported("diff", "--live", "examples/hotfix/live.yaml", "--repo", ".", "--path", "examples/hotfix/gitops")
    for package in ("kubernetes", "github", "gitlab", "jinja2"):
        assert not of(names, package), (package, of(names, package)[:5])
    # nor writeback's own config file model or forge adapters: a diff reads no config file and opens no forge
    assert not of(names, "writeback.config") and not of(names, "writeback.adapters.forges")


def test_offline_plan_imports_no_git_or_forge_library(tmp_path: Path) -> None:
    # issue 23: a plan previews each change set's pull request (templates, settings) without GitPython or the forges,
    # which only `run` uses to push and open it
    example = tmp_path / "hotfix"
    shutil.copytree(ROOT / "examples" / "hotfix", example)
    names = imported("plan", "--live", str(example / "live.yaml"), "--repo", str(example / "gitops"), "-o", "json")
    assert "writeback.pipeline.pull_requests" in names and of(names, "jinja2")  # the preview was built
    for package in ("git", "gitdb", "github", "gitlab", "writeback.pipeline.publishing"):
        assert not of(names, package), (package, of(names, package)[:5])


def test_the_plan_command_loads_the_pull_request_templates_once_the_plan_is_made() -> None:
    # issue 23: Jinja2 and the templates (2 MiB) are imported after detection, into memory detection freed; a
    # plan's peak RSS is at its end
    code = "import sys, writeback.cli.plan; print(sorted(n for n in sys.modules if n.split('.')[0] == 'jinja2'))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment(), capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
