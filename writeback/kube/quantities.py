"""Resource quantities (``500m``, ``1Gi``, ``1e3``) and the scalar equality the API server applies: a quantity field
holds one value however it is spelled, and ``true`` is not ``1``. Pure."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from writeback.kube.pathtypes import Key, Segment

__all__ = ["is_quantity_path", "quantity", "values_equal"]

_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(?:[eE]([+-]?[0-9]+))?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$"
)
_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_QUANTITY_PARENTS = frozenset({"limits", "requests", "hard", "capacity", "sizeLimit", "overhead"})


def quantity(value: Any) -> Decimal | None:
    """A resource quantity's value (``500m`` -> 0.5, ``1Gi`` -> 1073741824, ``1e3`` -> 1000), None if ``value`` is
    not one."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    m = _QUANTITY.match(str(value).strip())
    if not m:
        return None
    try:
        number = Decimal(m.group(1))
        if m.group(2):
            number = number.scaleb(int(m.group(2)))
        return number * _SUFFIX[m.group(3) or ""]
    except (InvalidOperation, ValueError):
        return None


def is_quantity_path(path: tuple[Segment, ...]) -> bool:
    """Does ``path`` hold a quantity (a field under ``limits``, ``requests``, ``hard``, ``capacity``, ...)?"""
    names = {s.name for s in path[-2:] if isinstance(s, Key)}
    return bool(names & _QUANTITY_PARENTS)


def values_equal(a: Any, b: Any, *, path: tuple[Segment, ...] = ()) -> bool:
    """Scalar equality as the API server sees it: ``true`` is not ``1``; ``500m`` is ``0.5`` for quantities."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if type(a) is not type(b) and not is_quantity_path(path):
        return False
    if a == b:
        return True
    if is_quantity_path(path):
        qa, qb = quantity(a), quantity(b)
        return qa is not None and qa == qb
    return False
