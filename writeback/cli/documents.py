"""The machine-readable output of ``diff``, ``plan``, ``run`` and ``config validate``: a versioned contract.

Every document is an object with ``apiVersion: writeback/v1`` and a ``kind`` (``DriftReport``, ``Plan``,
``RunReport``, ``ConfigValidation``), as Kubernetes objects are; a change that breaks a reader gets a new version.
Each kind has a JSON Schema shipped in the package (``writeback/schemas/``, :func:`schema`), and the tests validate
real outputs against it. ``-o json`` prints the document as JSON, ``-o yaml`` as YAML (as kubectl does).

``problems`` are objects, each with ``message`` and, where known, ``file``, ``line``, ``column`` (1-based), ``key``
(a configuration key path) and ``resource``.
"""

from __future__ import annotations

import enum
import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any, TextIO

__all__ = ["API_VERSION", "FORMATS", "Kind", "document", "problem", "schema", "write"]

API_VERSION = "writeback/v1"
FORMATS = ("text", "json", "yaml")  # the choices of --output


class Kind(enum.StrEnum):
    DRIFT_REPORT = "DriftReport"  # diff
    PLAN = "Plan"  # plan
    RUN_REPORT = "RunReport"  # run --once
    CONFIG_VALIDATION = "ConfigValidation"  # config validate

    @property
    def schema_file(self) -> str:
        return {"DriftReport": "diff", "Plan": "plan", "RunReport": "run", "ConfigValidation": "config-validation"}[
            self.value
        ] + ".schema.json"


def document(kind: Kind, body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` as a versioned document: ``apiVersion`` and ``kind`` first."""
    return {"apiVersion": API_VERSION, "kind": kind.value, **body}


@functools.cache
def schema(kind: Kind) -> Mapping[str, Any]:
    """The JSON Schema (Draft 2020-12) of a kind's documents, as shipped in the package."""
    text = resources.files("writeback").joinpath("schemas", kind.schema_file).read_text("utf-8")
    loaded: Mapping[str, Any] = json.loads(text)
    return loaded


def problem(p: Any) -> dict[str, Any]:
    """A problem as an object: ``message`` and, where the problem knows them, ``file``, ``line``, ``column``,
    ``key`` and ``resource`` (``adapters.files.Problem``, ``config_errors.KeyProblem``, ``model.PlanProblem``,
    or any error: its text)."""
    resource = getattr(p, "resource", None)
    out: dict[str, Any] = {
        "message": str(getattr(p, "message", None) or p),
        "file": getattr(p, "file", None),
        "line": getattr(p, "line", None),
        "column": getattr(p, "column", None),
        "key": getattr(p, "key", None),
        "resource": resource.as_json() if resource is not None else None,
    }
    kind = getattr(p, "kind", None)
    if kind is not None:  # a plan problem: aborted | unusable-source, and its change set
        out["kind"] = str(kind)
        out["changeset"] = getattr(p, "changeset", None)
    flag = getattr(p, "flag", None)
    if flag is not None:
        out["flag"] = flag
    return out


def _yaml(doc: Any, out: _Joined) -> None:
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        style = "|" if "\n" in value else None  # a PR body, a diff: as a literal block
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, text)
    yaml.dump(doc, out, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=120)


def write(doc: Mapping[str, Any], *, out: TextIO, output: str) -> None:
    """``doc`` on ``out`` as JSON (``-o json``) or YAML (``-o yaml``: the same data, read back from its JSON, so
    that both say exactly the same and enum members are plain strings)."""
    joined = _Joined(out)
    if output == "yaml":
        _yaml(json.loads(json.dumps(doc, ensure_ascii=False)), joined)
    else:
        json.dump(doc, joined, indent=2, sort_keys=False, ensure_ascii=False)
        joined.write("\n")
    joined.flush()


class _Joined:
    """A serializer's writes, handed to ``out`` joined: ``json.dump`` and ``yaml.dump`` write every token on its own
    (a 10k-object report: about 38,000 writes), and each write to a text stream costs a call through its layers, and
    a system call when Python's output is unbuffered (``PYTHONUNBUFFERED``, as the container image sets). Holds at
    most ``_PARTS`` pieces, so a large report is never held twice."""

    __slots__ = ("_out", "_parts")
    _PARTS = 4096

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._parts: list[str] = []

    def write(self, text: str) -> int:
        parts = self._parts
        parts.append(text)
        if len(parts) >= self._PARTS:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self._parts:
            self._out.write("".join(self._parts))
            self._parts.clear()
