"""Durations as people write them (``2h``, ``30m``, ``1h30m``, ``1d``, ``90s``): parse and format (no I/O).

Used by the config (``break_glass.max_ttl``) and by break-glass (``--ttl``); it sits below both layers.
"""

from __future__ import annotations

import re
from datetime import timedelta

_PART = re.compile(r"(\d+)([dhms])")
_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
LONGEST = timedelta(days=30)  # no duration here is ever longer (and huge numbers never reach timedelta())


class DurationError(ValueError):
    """Not a duration, or zero; the message names no flag or key (the caller adds it)."""


class DurationTooLong(DurationError):
    """Longer than the maximum allowed."""


def parse_duration(text: str, *, maximum: timedelta = LONGEST) -> timedelta:
    """``2h`` -> 2 hours: digits and a unit (d, h, m, s), repeated, no spaces; positive, at most ``maximum``."""
    s = text.strip().lower()
    pos, seconds = 0, 0
    for m in _PART.finditer(s):
        if m.start() != pos:
            break
        seconds += int(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not s or pos != len(s):
        raise DurationError("expected a duration such as 2h, 30m, 1h30m or 1d")
    if seconds <= 0:
        raise DurationError("the duration must be longer than zero")
    if seconds > min(maximum, LONGEST).total_seconds():  # before timedelta(), which overflows on huge numbers
        raise DurationTooLong(f"at most {format_duration(min(maximum, LONGEST))}")
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """A short human duration: ``1h59m``, ``4m10s``, ``2d3h``; negative as ``-5m``."""
    total = int(delta.total_seconds())
    sign, total = ("-", -total) if total < 0 else ("", total)
    parts: list[str] = []
    for unit, size in _UNITS.items():
        if total >= size or (unit == "s" and not parts):
            parts.append(f"{total // size}{unit}")
            total %= size
        if len(parts) == 2:
            break
    return sign + "".join(parts)
