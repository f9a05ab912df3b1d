"""The drift report and its JSON form (``writeback diff --output json``). Pure.

Sensitive values (Secrets, configured sensitive paths) never appear: they read
"changed (value redacted)".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from writeback.kube.paths import format_path
from writeback.kube.pathtypes import ABSENT
from writeback.model import REDACTED, Drift, Dropped

__all__ = ["REDACTED", "DriftReport", "drift_to_json", "report_to_json", "shown"]


@dataclass(frozen=True, kw_only=True)
class DriftReport:
    mode: str  # "cluster" | "offline"
    revision: str | None
    drifts: tuple[Drift, ...]
    dropped: tuple[Dropped, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # notes that change how to read the whole report: said first

    @property
    def all_notes(self) -> tuple[str, ...]:
        return (*self.warnings, *self.notes)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def shown(d: Drift, value: Any) -> Any:
    """One side's value of ``d`` as every report shows it: as JSON, ``REDACTED`` when sensitive, ABSENT as is."""
    if value is ABSENT:
        return ABSENT
    return REDACTED if d.sensitive else _jsonable(value)


def drift_to_json(d: Drift, *, explain: bool = False) -> dict[str, Any]:
    """The JSON object of one drift; ``live``/``git`` are left out when that side is absent. With ``explain``: the
    rule that decided it too."""
    out: dict[str, Any] = {"resource": d.resource.as_json(), "path": format_path(d.path), "op": d.op.value}
    if d.live is not ABSENT:
        out["live"] = shown(d, d.live)
    if d.git is not ABSENT:
        out["git"] = shown(d, d.git)
    out.update(
        manager=d.manager,
        operation=d.operation,
        time=d.time,
        decision=d.decision.value,
        reason=d.reason,
    )
    if explain:
        out["rule"] = d.rule.value if d.rule is not None else None
    if d.sensitive:
        out["sensitive"] = True
    return out


def report_to_json(r: DriftReport, *, explain: bool = False) -> dict[str, Any]:
    """The JSON document of ``writeback diff --output json``."""
    out: dict[str, Any] = {
        "mode": r.mode,
        "revision": r.revision,
        "drifts": [drift_to_json(d, explain=explain) for d in r.drifts],
        "notes": list(r.all_notes),
    }
    if explain:
        out["dropped"] = [
            {"resource": x.resource.as_json(), "path": format_path(x.path), "rule": x.rule, "side": x.side}
            for x in r.dropped
        ]
    return out
