"""Python's cyclic garbage collector paused while a cycle builds its objects.

A cycle allocates millions of small dicts, lists and tuples that live until it ends (the live objects, their
normalized copies, the paths of their differences). Each of them counts towards the collector's thresholds, and
every full collection walks all of them: at 10,000 objects that was a third of a ``writeback diff``'s CPU time,
for nothing, since the engine's data holds no reference cycles (reference counting frees it). Paused for the
cycle, resumed after it: cyclic garbage made meanwhile is collected then. Cycles in several threads (the service
runs targets in parallel) share the pause: the collector resumes when the last one ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the ``with`` block (nested and concurrent blocks share one pause)."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
