"""Nothing is read or written outside the repository: the one check every reader and writer of a repo uses.

A repository is untrusted input: anyone who can open a pull request against it can add a symbolic link to a file
of the bot's host (``apps/web.yaml -> /etc/...``), or a Kustomize reference that climbs out of it
(``resources: [../../../../srv]``). The rule (issue 22):

- no file is read or written through a path that resolves outside the repository's top level (a ``..`` chain, an
  absolute path, or a symbolic link anywhere on the way), nor into its ``.git`` directory;
- a link that stays inside may be followed for reading; an edit goes to the real path (:func:`real_relative`),
  never through the link.

:func:`escape` says why a path leaves the repository (or None); :func:`real_relative` gives an edit's real path or
raises :class:`OutsideRepository`. Every adapter that reads the repo's working tree or a checkout of it (plain
manifests, the texts for locating and markers, Kustomize inputs, Helm value files) asks these first.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from writeback.errors import InputError

__all__ = ["OutsideRepository", "escape", "inside", "real_relative", "shown"]

_GIT_DIR = ".git"


class OutsideRepository(InputError):
    """A path that resolves outside the repository (or into its ``.git``): refused, never read or written."""


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))  # follows every link on the way; a missing tail stays as written


def inside(top: Path, path: Path) -> bool:
    """Whether ``path`` (absolute, or relative to the current directory) resolves inside ``top`` and not into its
    ``.git``; ``top`` itself counts as inside."""
    return escape(top, path) is None


def shown(top: Path, path: Path) -> str:
    """How messages name ``path``: relative to ``top`` (``../x`` when it climbs out), never the host's own path."""
    lexical = os.path.normpath(Path(top).absolute() / path)
    return Path(os.path.relpath(lexical, os.path.normpath(Path(top).absolute()))).as_posix()


def escape(top: Path, path: Path) -> str | None:
    """Why reading or writing ``path`` would leave the repository whose top level is ``top``; None when it stays
    inside. ``path`` is absolute or relative to the current directory (build it as ``top / relative``).

    Checked after following every symbolic link on the way (each component, not only the last), so a link to a
    file or a directory outside, a link to a link, and a ``..`` chain are all caught."""
    real_top = _real(top)
    base = Path(os.path.normpath(Path(top).absolute()))
    lexical = Path(os.path.normpath(Path(top).absolute() / path))
    name = shown(top, path)
    if lexical != base and base not in lexical.parents:
        return f"{name} is outside the repository"
    real = _real(lexical)
    if real != real_top and real_top not in real.parents:
        link = _first_link(base, lexical)
        what = f"{link} is a symbolic link that resolves" if link else f"{name} resolves"
        return f"{what} outside the repository"
    if real != real_top and real.relative_to(real_top).parts[0] == _GIT_DIR:
        return f"{name} resolves into the repository's .git directory"
    return None


def _first_link(base: Path, lexical: Path) -> str | None:
    """The first component of ``lexical`` below ``base`` that is a symbolic link, named relative to ``base``."""
    at = base
    for part in lexical.relative_to(base).parts:
        at = at / part
        if at.is_symlink():
            return at.relative_to(base).as_posix()
    return None


def real_relative(top: Path, relative: str) -> str:
    """The repo-relative POSIX path an edit of ``relative`` must go to: the same path, or, when it (or a folder on
    the way) is a link that stays inside the repository, the real path the link resolves to. Raises
    :class:`OutsideRepository` (naming ``relative`` and why) when it leaves the repository."""
    pure = PurePosixPath(relative)
    if pure.is_absolute() or not pure.parts:
        raise OutsideRepository(f"{relative or '(empty)'} is outside the repository")
    path = Path(top) / Path(*pure.parts)
    why = escape(top, path)
    if why is not None:
        raise OutsideRepository(why)
    return _real(path).relative_to(_real(top)).as_posix()
