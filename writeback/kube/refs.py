"""Object references: ``ObjectRef`` (apiVersion, kind, namespace, name), its version-free ``Identity``. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple


def group_of(api_version: str) -> str:
    """The API group of an apiVersion: ``apps`` of ``apps/v1``, ``""`` (core) of ``v1``."""
    return api_version.rpartition("/")[0] if "/" in api_version else ""


class Identity(NamedTuple):
    """What makes two objects the same, whatever their version: group, kind, namespace ("" if none), name."""

    group: str
    kind: str
    namespace: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectRef:
    api_version: str
    kind: str
    namespace: str | None
    name: str

    @property
    def group(self) -> str:
        return group_of(self.api_version)

    @property
    def identity(self) -> Identity:
        """Identity ignores the version: group, kind, namespace, name."""
        return Identity(self.group, self.kind, self.namespace or "", self.name)

    @property
    def is_secret(self) -> bool:
        """A core Secret (its values never leave the process)."""
        return self.kind == "Secret" and self.group == ""

    def __str__(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        grp = f".{self.group}" if self.group else ""
        return f"{self.kind}{grp} {ns}{self.name}"

    def as_json(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
        }
