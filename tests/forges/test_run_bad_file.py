"""``run --once`` with an unparsable file in the repo: the other resources are still proposed, and the exit code
is 2 (bad input), as for ``diff`` and ``plan``, not 3."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.forges.conftest import make_fake
from tests.forges.test_run_cli import MANIFEST, flags, live_dump
from tests.support.cli import run_cli
from tests.support.gitrepos import seed_bare


def test_a_bad_yaml_file_fails_only_itself_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WB_TEST_TOKEN", "ghp_test_token")
    bare = tmp_path / "repo.git"
    seed_bare(bare, tmp_path / "seed", {"apps/web.yaml": MANIFEST, "apps/broken.yaml": "kind: [\n"})
    fake = make_fake("github", bare)
    try:
        live = live_dump(tmp_path, "registry.example.com/web:1.0.4")
        code, out, err = run_cli(*flags("github", bare, fake, live))
    finally:
        fake.stop()
    assert code == 2, out + err
    assert " created " in out  # the good resource is still proposed
    assert "failed" in out and "apps/broken.yaml" in out
