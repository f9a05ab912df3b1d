"""The types of a field path (``Key``, ``Select``, ``Index``, ``Wildcard``) and ``ABSENT``, the value of a side that
does not exist. The grammar, walks and JSON pointers are in ``writeback.kube.paths``. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final


class _Absent:
    """The value of a side that does not exist (``null`` is a real value)."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()


@dataclass(frozen=True, slots=True)
class Key:
    """A mapping key: ``spec``, ``metadata.annotations["a.b/c"]``."""

    name: str


# A list-map key field the API server defaults: an item that leaves it out is the item with this value.
KEY_DEFAULTS: Final[Mapping[str, str]] = {"protocol": "TCP"}


@dataclass(frozen=True, slots=True)
class Select:
    """A keyed list item: ``[name=app]`` or ``[port=80,protocol=TCP]``.

    Values are kept as the text of the scalar; ``matches`` compares the text form,
    so ``80`` and ``"80"`` select the same item (Kubernetes list-map keys are
    never ambiguous that way).
    """

    keys: tuple[tuple[str, str], ...]

    def matches(self, item: object) -> bool:
        if not isinstance(item, Mapping):
            return False
        return all(not (k not in item or scalar_text(item[k]) != v) for k, v in self.keys)


@dataclass(frozen=True, slots=True)
class Index:
    """An item of an atomic list, by position: ``args[3]``."""

    index: int


@dataclass(frozen=True, slots=True)
class Wildcard:
    """Only in patterns (ignore rules): ``*`` for any key, ``[*]`` for any item,
    ``**`` (``many=True``) for any number of segments, none included."""

    item: bool = False
    many: bool = False


Segment = Key | Select | Index
PatternSegment = Key | Select | Index | Wildcard
FieldPath = tuple[Segment, ...]


def scalar_text(value: object) -> str:
    """The text form of a scalar as used in path selectors."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    return str(value)
