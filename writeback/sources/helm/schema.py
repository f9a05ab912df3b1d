"""Just enough of a chart's ``values.schema.json`` to choose values it accepts: types, enums, bounds. Pure."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["Schema"]

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict, Mapping),
    "null": (type(None),),
}


class Schema:
    """A values schema (or none: everything is accepted)."""

    def __init__(self, text: str | None) -> None:
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = None
        self.root: Mapping[str, Any] | None = parsed if isinstance(parsed, Mapping) else None

    def _resolve(self, node: Any) -> Any:
        ref = node.get("$ref") if isinstance(node, Mapping) else None
        if isinstance(ref, str) and ref.startswith("#/") and self.root is not None:
            at: Any = self.root
            for part in ref[2:].split("/"):
                at = at.get(part) if isinstance(at, Mapping) else None
            return at if isinstance(at, Mapping) else None
        return node

    def node(self, path: Sequence[str | int]) -> Mapping[str, Any] | None:
        """The schema of the value at ``path``, if the schema says."""
        at: Any = self._resolve(self.root)
        for seg in path:
            if not isinstance(at, Mapping):
                return None
            if isinstance(seg, int):
                at = self._resolve(at.get("items"))
            else:
                props = at.get("properties")
                nxt = props.get(seg) if isinstance(props, Mapping) else None
                if nxt is None and isinstance(at.get("additionalProperties"), Mapping):
                    nxt = at["additionalProperties"]
                at = self._resolve(nxt)
        return at if isinstance(at, Mapping) else None

    def accepts(self, path: Sequence[str | int], value: Any) -> bool:
        """Would the schema accept ``value`` at ``path``? (What it does not say is accepted.)"""
        node = self.node(path)
        if node is None:
            return True
        types = node.get("type")
        names = [types] if isinstance(types, str) else list(types) if isinstance(types, list) else []
        if names:
            ok = any(
                isinstance(value, _TYPES.get(n, ())) and not (n in ("integer", "number") and isinstance(value, bool))
                for n in names
            )
            if not ok:
                return False
        if isinstance(node.get("enum"), list) and value not in node["enum"]:
            return False
        if "const" in node and value != node["const"]:
            return False
        if isinstance(value, int | float) and not isinstance(value, bool) and not _within(node, value):
            return False
        if isinstance(value, str):
            if isinstance(node.get("minLength"), int) and len(value) < node["minLength"]:
                return False
            if isinstance(node.get("maxLength"), int) and len(value) > node["maxLength"]:
                return False
            pattern = node.get("pattern")
            if isinstance(pattern, str):
                try:
                    if re.search(pattern, value) is None:
                        return False
                except re.error:
                    return False
        return True

    def enum(self, path: Sequence[str | int]) -> list[Any] | None:
        node = self.node(path)
        return list(node["enum"]) if node is not None and isinstance(node.get("enum"), list) else None


def _within(node: Mapping[str, Any], value: float) -> bool:
    def bound(name: str) -> float | None:
        b = node.get(name)
        return b if isinstance(b, int | float) and not isinstance(b, bool) else None

    low, high = bound("minimum"), bound("maximum")
    xlow, xhigh = bound("exclusiveMinimum"), bound("exclusiveMaximum")
    return (
        (low is None or value >= low)
        and (high is None or value <= high)
        and (xlow is None or value > xlow)
        and (xhigh is None or value < xhigh)
    )
