"""The external programs writeback runs (kustomize, helm): the one lookup, ``$WRITEBACK_<NAME>`` else ``PATH``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from writeback.errors import ToolMissing

__all__ = ["find_tool"]


def find_tool(*, env_var: str, names: Sequence[str], missing: str) -> Path:
    """The program ``$env_var`` names (an executable file, else ToolMissing), else the first of ``names`` on PATH,
    else ToolMissing with ``missing`` (what to install)."""
    configured = os.environ.get(env_var)
    if configured:
        p = Path(configured)
        if p.is_file() and os.access(p, os.X_OK):
            return p
        raise ToolMissing(f"${env_var}={configured}: not an executable file")
    for name in names:
        found = shutil.which(name)
        if found is not None:
            return Path(found)
    raise ToolMissing(missing)
