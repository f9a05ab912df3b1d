"""A process that saves hotfix captures with the real ``DirectoryStore`` forever (each about 2 MB, each save over
the last one of its key), to be SIGKILLed from outside in the middle of a write.

    python state_writer.py STATE_DIR
"""

from __future__ import annotations

import itertools
import sys

from writeback.adapters.hotfix_store import DirectoryStore
from writeback.kube.refs import ObjectRef
from writeback.model import Capture, ManagerOperation


def main(state_dir: str) -> None:
    store = DirectoryStore(state_dir=state_dir)
    blob = "x" * 2_000_000
    for n in itertools.count():
        ref = ObjectRef(api_version="v1", kind="ConfigMap", namespace="shop", name=f"cm-{n % 3}")
        body = {"data": {"n": str(n), "blob": blob}}
        at = f"2026-12-01T00:00:{n % 60:02d}Z"
        store.save(Capture(target="prod", ref=ref, manager="kubectl-edit", operation=ManagerOperation.UPDATE, time=None,
                           captured_at=at, body=body))  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1])
