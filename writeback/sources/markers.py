"""``$writeback`` comment markers: bind a YAML value in any repo file to a live field. Pure.

Syntax (see docs/markers.md)::

    tag: 1.2.3 # {"$writeback": "Deployment.apps/prod/web:spec.template.spec.containers[name=app].image", "part": "tag"}

The reference is ``<Kind>[.<group>]/<namespace>/<name>:<path>`` (``<Kind>[.<group>]/<name>:<path>`` for
cluster-scoped kinds); ``part`` (``tag``, ``name`` or ``digest``) takes one part of an image string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from writeback.errors import PatchError, PathSyntaxError
from writeback.kube.paths import parse_path
from writeback.kube.pathtypes import FieldPath
from writeback.kube.refs import Identity
from writeback.sources.documents import is_yaml
from writeback.yaml.edit import iter_scalars

MARKER_KEY = "$writeback"
PARTS = ("tag", "name", "digest")
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Marker:
    file: str
    line: int
    document: int
    path: FieldPath  # of the marked value in its file
    identity: Identity  # group, kind, namespace ("" if cluster-scoped), name
    field: FieldPath  # of the live resource
    part: str | None = None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True, kw_only=True)
class MarkerError:
    """A marker that cannot be used; names the file and line."""

    file: str
    line: int
    message: str
    identity: Identity | None = None
    field: FieldPath | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(frozen=True, slots=True, kw_only=True)
class MarkerScan:
    markers: tuple[Marker, ...] = ()
    errors: tuple[MarkerError, ...] = ()


def parse_reference(text: str) -> tuple[Identity, FieldPath]:
    """``Kind[.group]/ns/name:path`` -> (identity, path); raises ValueError or PathSyntaxError."""
    ref, sep, path_text = text.partition(":")
    if not sep or not path_text:
        raise ValueError(f"{text!r}: expected <Kind>[.<group>]/<namespace>/<name>:<path>")
    parts = ref.split("/")
    if len(parts) == 3:
        kind_group, namespace, name = parts
    elif len(parts) == 2:
        kind_group, name = parts
        namespace = ""
    else:
        raise ValueError(f"{ref!r}: expected <Kind>[.<group>]/<namespace>/<name>")
    kind, _, group = kind_group.partition(".")
    if not _KIND.match(kind) or not name:
        raise ValueError(f"{ref!r}: expected <Kind>[.<group>]/<namespace>/<name>")
    return Identity(group, kind, namespace, name), parse_path(path_text)


def _marker_json(comment: str) -> object | None:
    start = comment.find("{")
    if start < 0 or MARKER_KEY not in comment:
        return None
    try:
        value: object = json.JSONDecoder().raw_decode(comment[start:])[0]
    except json.JSONDecodeError as e:
        raise ValueError(f"a $writeback marker that is not valid JSON: {e.msg}") from e
    return value


def _one(file: str, line: int, document: int, path: FieldPath, comment: str) -> Marker | MarkerError | None:
    try:
        obj = _marker_json(comment)
    except ValueError as e:
        return MarkerError(file=file, line=line, message=str(e))
    if not isinstance(obj, Mapping) or MARKER_KEY not in obj:
        return None
    ref_text = obj[MARKER_KEY]
    part = obj.get("part")
    if not isinstance(ref_text, str):
        return MarkerError(file=file, line=line, message=f'"{MARKER_KEY}" must be a string')
    try:
        identity, field = parse_reference(ref_text)
    except PathSyntaxError as e:
        return MarkerError(file=file, line=line, message=f"malformed path in $writeback marker: {e}")
    except ValueError as e:
        return MarkerError(file=file, line=line, message=f"malformed $writeback marker: {e}")
    if part is not None and part not in PARTS:
        return MarkerError(
            file=file,
            line=line,
            message=f'"part" must be one of {", ".join(PARTS)}, not {part!r}',
            identity=identity,
            field=field,
        )
    return Marker(file=file, line=line, document=document, path=path, identity=identity, field=field, part=part)


def scan_markers(files: Mapping[str, str]) -> MarkerScan:
    """Every ``$writeback`` marker in the YAML files; unparseable files hold no markers we can trust."""
    markers: list[Marker] = []
    errors: list[MarkerError] = []
    for file in sorted(files):
        text = files[file]
        if not is_yaml(file) or MARKER_KEY not in text:
            continue
        try:
            scalars = list(iter_scalars(text, source=file))
        except PatchError as e:
            errors.append(MarkerError(file=file, line=0, message=f"cannot read markers: {e}"))
            continue
        for info in scalars:
            if not info.comment or MARKER_KEY not in info.comment:
                continue
            found = _one(file, info.line + 1, info.document, tuple(info.path), info.comment)
            if isinstance(found, Marker):
                markers.append(found)
            elif isinstance(found, MarkerError):
                errors.append(found)
    return MarkerScan(markers=tuple(markers), errors=tuple(errors))
