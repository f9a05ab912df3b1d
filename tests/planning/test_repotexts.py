"""The repository texts the planner reads: a virtualenv inside the clone (the README's ``.venv``) is not read."""

from __future__ import annotations

from pathlib import Path

from writeback.adapters.git.texts import read_texts


def test_a_virtualenv_in_the_clone_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "cm.yaml").write_text("kind: ConfigMap\n")
    venv = tmp_path / ".venv"
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "x.yaml").write_text("kind: NotGitOps\n")
    (tmp_path / "venvlike").mkdir()
    (tmp_path / "venvlike" / "y.yaml").write_text("kind: Kept\n")  # a name alone is no virtualenv
    assert sorted(read_texts(tmp_path)) == ["apps/cm.yaml", "venvlike/y.yaml"]
