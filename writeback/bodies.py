"""Bodies held in less memory than the dicts they stand for (issue 23: a one-shot run near the floor's memory).

Each is a read-only mapping over the same data: :class:`PackedBody` (a Git object's body as bytes until its live
object arrives), :class:`ReleasedBody` (a settled object's Git body, let go: reading it is a bug) and
:class:`CompactBody` (what a settled live object keeps: its names and versions). Pure.
"""

from __future__ import annotations

import marshal
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from writeback.kube.refs import ObjectRef

__all__ = ["CompactBody", "PackedBody", "ReleasedBody"]


class PackedBody(Mapping[str, Any]):
    """A Git object's body held as bytes (``marshal``) until its live object arrives: a one-shot run reads the whole
    Git side before the first list page, and 10,000 parsed manifests hold about 21 MiB as dicts, 3.4 MiB packed
    (issue 23). ``DesiredObject.unpacked`` gives the plain body back; the stage that meets the live object
    (``pipeline.settled``) unpacks before anything reads it. Reading it as a mapping works (each read unpacks), so
    a reader that meets one by mistake is slow, never wrong."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data = data

    @staticmethod
    def of(body: Mapping[str, Any]) -> Mapping[str, Any]:
        """``body`` packed; itself when marshal cannot hold it (a non-scalar key: ``yaml.constructing.ComplexKey``)."""
        try:
            return PackedBody(marshal.dumps(body))  # type: ignore[arg-type]  # YAML's data: dicts, lists, scalars
        except ValueError:
            return body

    def unpack(self) -> dict[str, Any]:
        body: dict[str, Any] = marshal.loads(self._data)
        return body

    def __getitem__(self, key: str) -> Any:
        return self.unpack()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.unpack())

    def __len__(self) -> int:
        return len(self.unpack())

    def __repr__(self) -> str:
        return f"PackedBody({self.unpack()!r})"


class ReleasedBody(Mapping[str, Any]):
    """The body of a Git object that was let go once its managers settled it (issue 23: a one-shot run keeps no Git
    body it will not read). Reading it is a bug in the caller, never an empty manifest: it raises, naming the object."""

    __slots__ = ("_ref",)

    def __init__(self, ref: ObjectRef) -> None:
        self._ref = ref

    def _gone(self) -> RuntimeError:
        return RuntimeError(f"{self._ref.named()}: its Git body was released once its managers settled it")

    def __getitem__(self, key: str) -> Any:
        raise self._gone()

    def __iter__(self) -> Iterator[str]:
        raise self._gone()

    def __len__(self) -> int:
        raise self._gone()

    def __repr__(self) -> str:
        return f"ReleasedBody({self._ref.named()})"


_MISSING: Any = object()
_META = ("name", "namespace", "uid", "resourceVersion")


class CompactBody(Mapping[str, Any]):
    """What a one-shot run keeps of the body of a live object its managers settled (``drift.settling.compacted``):
    apiVersion, kind and ``metadata``'s name, namespace, uid and resourceVersion, those present, as the listed body
    has them. One object of six slots (80 bytes) rather than two dicts (about 460): 10,000 settled objects hold
    3.6 MiB less. It reads as the dict it stands for (``metadata`` is a new dict at each read)."""

    __slots__ = ("_api_version", "_kind", "_name", "_namespace", "_uid", "_version")

    def __init__(self, body: Mapping[str, Any], *, name: str | None = None) -> None:
        """``body``'s apiVersion, kind and metadata's name, namespace, uid and resourceVersion. One copy of each text
        where it can be shared: apiVersion, kind and namespace interned, and ``name`` (the same object's name as
        held elsewhere: Git's reference) instead of the body's when it is the same text."""
        get = body.get
        api_version, kind, meta = get("apiVersion", _MISSING), get("kind", _MISSING), get("metadata")
        self._api_version = sys.intern(api_version) if type(api_version) is str else api_version
        self._kind = sys.intern(kind) if type(kind) is str else kind
        if not isinstance(meta, Mapping):
            self._name = self._namespace = self._uid = self._version = _MISSING
            return
        own, namespace = meta.get("name", _MISSING), meta.get("namespace", _MISSING)
        self._name = name if name is not None and own == name else own
        self._namespace = sys.intern(namespace) if type(namespace) is str else namespace
        self._uid, self._version = meta.get("uid", _MISSING), meta.get("resourceVersion", _MISSING)

    def _metadata(self) -> dict[str, Any]:
        values = (self._name, self._namespace, self._uid, self._version)
        return {k: v for k, v in zip(_META, values, strict=True) if v is not _MISSING}

    def __getitem__(self, key: str) -> Any:
        if key == "metadata":
            return self._metadata()
        value = self._api_version if key == "apiVersion" else self._kind if key == "kind" else _MISSING
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        if self._api_version is not _MISSING:
            yield "apiVersion"
        if self._kind is not _MISSING:
            yield "kind"
        yield "metadata"

    def __len__(self) -> int:
        return 1 + (self._api_version is not _MISSING) + (self._kind is not _MISSING)

    def __repr__(self) -> str:
        return f"CompactBody({dict(self)!r})"
