"""Progress per target and stage: drawn with rich on a terminal, nothing at all elsewhere."""

from __future__ import annotations

import io
import os
import time

from writeback.service.progress import STAGES, stage_progress


def test_nothing_is_printed_when_not_on_a_tty() -> None:
    stream = io.StringIO()
    with stage_progress(targets=["prod", "staging"], stream=stream) as progress:
        for stage in STAGES:
            progress.stage("prod", stage)
        progress.finish("prod", "created")
    assert stream.getvalue() == ""


def test_each_target_and_stage_is_shown_on_a_tty() -> None:
    main, other = os.openpty()
    chunks: list[bytes] = []
    with os.fdopen(other, "w") as tty:
        with stage_progress(targets=["prod", "staging"], stream=tty) as progress:
            progress.stage("prod", "clone")
            time.sleep(0.2)
            progress.stage("prod", "publish")
            progress.finish("prod", "created")
            progress.stage("staging", "snapshot and plan")
            progress.stage("unknown-target", "clone")  # ignored, never raises
            time.sleep(0.2)
        tty.flush()
    os.set_blocking(main, False)
    try:
        while True:
            chunk = os.read(main, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except (BlockingIOError, OSError):
        pass
    os.close(main)
    text = b"".join(chunks).decode(errors="replace")
    assert "prod: created" in text
    assert "staging: snapshot and plan" in text
    assert "unknown-target" not in text
