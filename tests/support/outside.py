"""A repository that reaches outside itself (issue 22 §6), and a watched directory of the bot's host to hash.

``host_dir(tmp_path)`` makes the files a hostile repository points to: ``web.yaml`` (the Deployment ``web`` of
namespace ``prod``, its image tag ``0.0.0-hostonly``: any output that shows it read the host), a folder ``dir/``
with the same manifest, and a Kustomize base ``base/``. ``Watched(root).digest()`` hashes every name, byte, link
target and mode under a folder, so a test proves that nothing there changed. ``repo_links`` writes the files and
symbolic links of one case into a working tree.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.support.objects import web_manifest

HOST_TAG = "0.0.0-hostonly"  # the image tag of the host's files: seen in an output only if the host was read

HOST_MANIFEST = web_manifest(
    comment="the bot host's own file: never read, never written by writeback",
    namespace="prod",
    replicas=2,
    image=f"registry.example.com/web:{HOST_TAG}",
)


@dataclass(frozen=True)
class Watched:
    """A folder whose every name, byte, symbolic link target and mode is hashed."""

    root: Path

    def digest(self) -> str:
        h = hashlib.sha256()
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames.sort()
            for name in sorted([*dirnames, *filenames]):
                p = Path(dirpath) / name
                st = p.lstat()
                h.update(f"{p.relative_to(self.root)}\0{st.st_mode}\0".encode())
                if p.is_symlink():
                    h.update(os.readlink(p).encode())
                elif p.is_file():
                    h.update(p.read_bytes())
                h.update(b"\0")
        return h.hexdigest()


def host_dir(tmp_path: Path) -> Path:
    """The bot host's files a hostile repository points to (see the module docstring)."""
    host = tmp_path / "host"
    (host / "dir").mkdir(parents=True)
    (host / "base").mkdir()
    (host / "web.yaml").write_text(HOST_MANIFEST)
    (host / "dir" / "web.yaml").write_text(HOST_MANIFEST)
    (host / "base" / "deployment.yaml").write_text(HOST_MANIFEST)
    (host / "base" / "kustomization.yaml").write_text("resources:\n  - deployment.yaml\n")
    (host / "secret.txt").write_text("the host's secret\n")
    return host


def repo_links(root: Path, *, files: Mapping[str, str], links: Mapping[str, str]) -> None:
    """Write ``files`` (relative path -> text) and ``links`` (relative path -> link target, as ``ln -s`` takes it)
    under ``root``."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for rel, target in links.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / rel)
