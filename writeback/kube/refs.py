"""Object references: ``ObjectRef`` (apiVersion, kind, namespace, name), its version-free ``Identity``, and the
facts every module asks of one: its API group, whether it is a Secret, its ``NAMESPACE/NAME`` text (parsed by
:func:`split_ns_name`) and how a message names it (:meth:`ObjectRef.named`). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from writeback.errors import InputError

__all__ = ["REPORT_ONLY_KINDS", "Identity", "ObjectRef", "group_of", "is_secret", "split_ns_name"]

# Kinds whose values are never written to Git, whatever their group: Secrets and (Bitnami) SealedSecrets.
REPORT_ONLY_KINDS = frozenset({"Secret", "SealedSecret"})


def group_of(api_version: str) -> str:
    """The API group of an apiVersion: ``apps`` of ``apps/v1``, ``""`` (core) of ``v1``."""
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def is_secret(api_version: str, kind: str) -> bool:
    """A core Secret (its values never leave the process)."""
    return kind == "Secret" and group_of(api_version) == ""


def split_ns_name(text: str, *, what: str) -> tuple[str, str]:
    """``NAMESPACE/NAME`` -> (namespace, name); an InputError naming ``what`` (a flag or a config key) otherwise."""
    ns, sep, name = text.partition("/")
    if not sep or not ns or not name or "/" in name:
        raise InputError(f"{what} {text!r}: expected NAMESPACE/NAME")
    return ns, name


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
    # ``identity``, worked out once: a cycle asks it of each object many times (not compared, hashed or shown)
    _identity: Identity | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def group(self) -> str:
        return group_of(self.api_version)

    @property
    def identity(self) -> Identity:
        """Identity ignores the version: group, kind, namespace, name."""
        known = getattr(self, "_identity", None)  # unset in a ref unpickled from before the field existed
        if known is None:
            known = Identity(self.group, self.kind, self.namespace or "", self.name)
            object.__setattr__(self, "_identity", known)
        return known

    @property
    def is_secret(self) -> bool:
        """A core Secret (its values never leave the process)."""
        return self.kind == "Secret" and is_secret(self.api_version, self.kind)

    @property
    def ns_name(self) -> str:
        """``NAMESPACE/NAME`` (the text :func:`split_ns_name` reads), or ``NAME`` of a cluster-scoped object."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def named(self, what: str | None = None) -> str:
        """How a message names the object: ``Deployment shop/web``, or ``<what> shop/web`` (``Argo CD Application
        argocd/web``). ``str(ref)`` adds the group: ``Deployment.apps shop/web``."""
        return f"{what or self.kind} {self.ns_name}"

    def __str__(self) -> str:
        grp = f".{self.group}" if self.group else ""
        return f"{self.kind}{grp} {self.ns_name}"

    def as_json(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ObjectRef:
        """The ref :meth:`as_json` wrote."""
        return cls(api_version=str(doc["apiVersion"]), kind=str(doc["kind"]), namespace=doc.get("namespace"),
                   name=str(doc["name"]))  # fmt: skip
