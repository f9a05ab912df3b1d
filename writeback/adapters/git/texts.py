"""Read a repository's text files as ``{repo-relative path: text}`` for the pure locating and planning steps.

Bytes are decoded as UTF-8 without newline translation (CRLF files stay CRLF). ``.git``, Python virtualenvs (a
directory with ``pyvenv.cfg``: the README's ``.venv`` sits inside the clone), binary and very large files are
left out. Nothing is read outside the repository (``adapters.confinement``): a symbolic link that resolves outside
it (or into ``.git``) is not read but named in ``RepoTexts.refused``; a link to a file inside it is read under its
own name, and ``RepoTexts.links`` gives the real path an edit of it goes to. Links to folders are not followed:
the files there are read under their real paths.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from writeback.adapters.confinement import escape
from writeback.adapters.walking import entry_name, is_link, walk

MAX_BYTES = 2_000_000
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__"})

__all__ = ["MAX_BYTES", "RepoTexts", "read_repo", "read_texts"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RepoTexts:
    """A repository's texts, its links inside it, and what was refused."""

    files: dict[str, str] = field(default_factory=dict)  # repo-relative path -> text (links inside included)
    links: dict[str, str] = field(default_factory=dict)  # a link's path -> the real path it resolves to
    refused: dict[str, str] = field(default_factory=dict)  # a path not read -> why (it leaves the repository)


def read_texts(repo: Path, *, max_bytes: int = MAX_BYTES) -> dict[str, str]:
    """Every UTF-8 text file under ``repo`` (symlinks to files inside it included), by POSIX relative path."""
    return read_repo(repo, max_bytes=max_bytes).files


def read_repo(repo: Path, *, max_bytes: int = MAX_BYTES) -> RepoTexts:
    """The texts of ``repo`` (see the module docstring), its links inside it, and the links refused."""
    root = repo.resolve()
    top = str(root)
    out = RepoTexts()
    # plain strings, not Path objects, per file: a repository of 10,000 manifests is read in every plan; whether an
    # entry is a link comes from the folder's listing (``walking.walk``)
    for dirpath, dirs, files in walk(top):
        prefix = _relative(dirpath, top)
        for d in dirs:
            why = escape(root, Path(d.path)) if is_link(d) else None
            if why is not None:
                out.refused[prefix + d.name] = why
        dirs[:] = sorted(
            (d for d in dirs if d.name not in _SKIP_DIRS and not os.path.isfile(os.path.join(d.path, "pyvenv.cfg"))),
            key=entry_name,
        )
        for entry in sorted(files, key=entry_name):
            full, rel = entry.path, prefix + entry.name
            link = is_link(entry)
            if link:
                why = escape(root, Path(full))
                if why is not None:
                    out.refused[rel] = why
                    continue
            text = _text(full, max_bytes=max_bytes)
            if text is None:
                continue
            out.files[rel] = text
            if link:
                out.links[rel] = Path(os.path.realpath(full)).relative_to(root).as_posix()
    return out


def _relative(dirpath: str, top: str) -> str:
    """The POSIX path of ``dirpath`` (``top`` or a folder under it, as ``os.walk`` gives it) relative to ``top``,
    ending in ``/`` (``""`` for ``top`` itself)."""
    if dirpath == top:
        return ""
    return dirpath[len(top) :].lstrip(os.sep).replace(os.sep, "/") + "/"


def _text(path: str, *, max_bytes: int) -> str | None:
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
