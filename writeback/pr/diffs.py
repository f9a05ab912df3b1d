"""Git-style unified diffs of file patches (``a/`` and ``b/`` prefixes, repo-relative paths). Pure."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from writeback.model import FilePatch

__all__ = ["render_file_patch", "render_patches"]

_NO_NEWLINE = "\\ No newline at end of file\n"


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def render_file_patch(patch: FilePatch, *, context: int = 3) -> str:
    """The ``diff --git`` text of one file; a new file is diffed against /dev/null."""
    before = patch.before or ""
    old = "/dev/null" if patch.before is None else f"a/{patch.path}"
    head = [f"diff --git a/{patch.path} b/{patch.path}\n"]
    if patch.before is None:
        head.append("new file mode 100644\n")
    body: list[str] = []
    lines = difflib.unified_diff(_lines(before), _lines(patch.after), old, f"b/{patch.path}", n=context, lineterm="\n")
    for line in lines:
        if line.endswith("\n"):
            body.append(line)
        else:
            body += [line + "\n", _NO_NEWLINE]
    if not body:
        return ""
    return "".join(head + body)


def render_patches(patches: Iterable[FilePatch]) -> str:
    return "".join(render_file_patch(p) for p in patches)
