"""How a manifest's text is read (``adapters.files.read_text``): what ``Path.read_text`` would give, and a problem
naming the file when it cannot be read."""

from __future__ import annotations

from pathlib import Path

import pytest

from writeback.adapters.files import read_text

CONTENTS = [
    b"",
    b"a: 1\n",
    b"a: 1\r\nb: |\r\n  x\r\n  y\r\n",  # Windows line ends
    b"a: 1\rb: 2\r",  # old Mac line ends
    b"a: 1\r\n\rb: 2\n\r\n",  # mixed, a lone CR between
    b"\xef\xbb\xbfa: 1\n",  # a byte order mark: kept, as Path.read_text keeps it
    "name: caf\u00e9 \u2603\n".encode(),
    b"x: " + b"y" * 200_000 + b"\n",  # larger than one read of a pipe or a page
]


@pytest.mark.parametrize("content", CONTENTS, ids=range(len(CONTENTS)))
def test_a_text_reads_as_path_read_text_reads_it(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(content)
    text, problem = read_text(path, file="apps/m.yaml")
    assert problem is None
    assert text == path.read_text(encoding="utf-8")


def test_what_cannot_be_read_is_a_problem_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"a: \xff\xfe\n")
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    cases = {
        bad: "not UTF-8 text: invalid start byte",
        folder: "cannot read: Is a directory",
        tmp_path / "missing.yaml": "cannot read: No such file or directory",
    }
    for path, message in cases.items():
        text, problem = read_text(path, file=f"apps/{path.name}")
        assert text is None
        assert problem is not None and problem.file == f"apps/{path.name}" and problem.message == message
