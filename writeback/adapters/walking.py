"""The walk of a repository's folders: ``os.walk`` with each entry as its ``os.DirEntry`` (issue 23)."""

from __future__ import annotations

import os
from collections.abc import Iterator


def entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def is_link(entry: os.DirEntry[str]) -> bool:
    """Whether the entry is a symbolic link; False when the file system cannot say (as ``os.path.islink``): where a
    listing gives no file type (some network or FUSE file systems), asking may fail, e.g. in a folder that can be
    listed but not entered."""
    try:
        return entry.is_symlink()
    except OSError:
        return False


def walk(top: str) -> Iterator[tuple[str, list[os.DirEntry[str]], list[os.DirEntry[str]]]]:
    """``os.walk(top)`` (top-down, links to folders listed but not entered, unreadable folders skipped) with each
    entry as its ``os.DirEntry``: whether it is a link is known from the listing, not asked of the file system once
    per file (issue 23: a repository of 10,000 manifests is walked in every run). The caller may prune the folders
    list in place, as with ``os.walk``."""
    stack = [top]
    while stack:
        dirpath = stack.pop()
        try:
            with os.scandir(dirpath) as listing:
                entries = list(listing)
        except OSError:
            continue
        dirs: list[os.DirEntry[str]] = []
        files: list[os.DirEntry[str]] = []
        for e in entries:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(e)
        yield dirpath, dirs, files
        stack.extend(reversed([d.path for d in dirs if not is_link(d)]))
