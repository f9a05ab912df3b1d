"""The argocd suite is opt-in: the default run deselects it, `-m argocd` selects it (and only it), and a collection
never builds Argo CD. Checked by collecting in a child pytest (the real conftest hooks, nothing started)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMOKE = "tests/argocd/test_smoke.py::test_self_heal_reverts_a_kubectl_patch"


def collected(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests/argocd", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "argocd: building" not in done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.parametrize("args", [(), ("-m", "not controlplane")])
def test_the_default_run_and_other_marker_expressions_leave_it_out(args: tuple[str, ...]) -> None:
    ids = collected(*args)
    assert SMOKE not in ids
    assert not [i for i in ids if i.startswith("tests/argocd/test_smoke.py")]


def test_naming_argocd_in_m_selects_it() -> None:
    ids = collected("-m", "argocd")
    assert SMOKE in ids
    assert not [i for i in ids if "test_failures.py" in i or "test_opt_in.py" in i]  # stand-ins: default suite
