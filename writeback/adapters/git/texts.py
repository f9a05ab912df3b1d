"""Read a repository's text files as ``{repo-relative path: text}`` for the pure locating and planning steps.

Bytes are decoded as UTF-8 without newline translation (CRLF files stay CRLF). ``.git``, Python virtualenvs (a
directory with ``pyvenv.cfg``: the README's ``.venv`` sits inside the clone), binary and very large files are
left out.
"""

from __future__ import annotations

import os
from pathlib import Path

MAX_BYTES = 2_000_000
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__"})


def read_texts(repo: Path, *, max_bytes: int = MAX_BYTES) -> dict[str, str]:
    """Every UTF-8 text file under ``repo`` (symlinks to files inside it included), by POSIX relative path."""
    root = repo.resolve()
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if d not in _SKIP_DIRS and not os.path.isfile(os.path.join(dirpath, d, "pyvenv.cfg"))
        )
        for name in sorted(filenames):
            p = Path(dirpath) / name
            try:
                if not p.is_file() or p.stat().st_size > max_bytes:
                    continue
                data = p.read_bytes()
            except OSError:
                continue
            if b"\0" in data:
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            out[p.relative_to(root).as_posix()] = text
    return out
