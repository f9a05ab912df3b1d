"""Reading live dumps for offline mode: ``kubectl get -o yaml|json`` output, a file, a directory of them or standard
input. A bad file or document never stops the others: each problem names its file (and document or resource)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from writeback.adapters.files import (
    DUMP_SUFFIXES,
    LoadResult,
    NamespacedFn,
    Problem,
    is_object,
    named_items,
    parse_documents,
    read_text,
    ref_of,
    yaml_files,
)
from writeback.errors import InputError
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import LiveObject, Source

__all__ = ["STDIN", "parse_dump", "read_live", "with_default_namespace"]


STDIN = "<stdin>"  # how problems name a dump read from standard input (``--live -``)


def parse_dump(*, text: str, file: str) -> tuple[list[Any], Problem | None]:
    """The documents of a dump: YAML (``kubectl get -o yaml``), or JSON, one object or several one after the other
    (``kubectl get -o json`` run more than once into one file), as kubectl reads them. JSON is told by its first
    character (``{`` or ``[``); a top-level JSON array holds documents; ``---`` lines between JSON documents are
    document markers, as in YAML."""
    start = len(text) - len(text.lstrip())
    if text[start : start + 1] not in ("{", "["):
        return parse_documents(text=text, file=file)
    decoder = json.JSONDecoder()
    docs: list[Any] = []
    at = start
    try:
        while at < len(text):
            doc, at = decoder.raw_decode(text, at)
            docs.extend(doc if isinstance(doc, list) else [doc])
            at = _next_document(text, at)
    except json.JSONDecodeError as e:
        return [], Problem(file=file, line=e.lineno, column=e.colno, message=f"not valid JSON: {e.msg}")
    except RecursionError:
        return [], Problem(file=file, message="not valid JSON: nested too deeply")
    return docs, None


def _next_document(text: str, at: int) -> int:
    """Where the next JSON document starts: past blank space and YAML document markers (``---``, ``...``) on
    their own lines, which JSON documents written into a YAML stream have between them."""
    while True:
        at = len(text) - len(text[at:].lstrip())
        for marker in ("---", "..."):
            end = at + len(marker)
            if text.startswith(marker, at) and (end == len(text) or text[end] in " \t\r\n"):
                at = end
                break
        else:
            return at


def read_live(*, path: Path | None = None, text: str | None = None) -> LoadResult[LiveObject]:
    """Objects dumped with ``kubectl get -o yaml|json [--show-managed-fields]``: a file or a directory of them
    (``path``: its ``*.yaml``, ``*.yml`` and ``*.json`` files), or one dump given as ``text`` (standard input,
    named ``<stdin>`` in problems)."""
    objects: list[LiveObject] = []
    problems: list[Problem] = []
    seen: dict[Identity, str] = {}
    if text is not None:
        docs, problem = parse_dump(text=text, file=STDIN)
        problems.extend([problem] if problem is not None else [])
        _live_objects(docs, file=STDIN, seen=seen, objects=objects, problems=problems)
        return LoadResult(objects=tuple(objects), problems=tuple(problems))
    if path is None or not path.exists():
        raise InputError(f"--live {path}: no such file or directory")
    for p in yaml_files(path, suffixes=DUMP_SUFFIXES):
        file = str(p)
        content, unread = read_text(p, file=file)
        if unread is not None or content is None:
            problems.append(unread or Problem(file=file, message="cannot read"))
            continue
        docs, problem = parse_dump(text=content, file=file)
        problems.extend([problem] if problem is not None else [])
        _live_objects(docs, file=file, seen=seen, objects=objects, problems=problems)
    return LoadResult(objects=tuple(objects), problems=tuple(problems))


def _live_objects(
    docs: list[Any],
    *,
    file: str,
    seen: dict[Identity, str],
    objects: list[LiveObject],
    problems: list[Problem],
) -> None:
    for d, doc in enumerate(docs):
        if not is_object(doc):
            if doc is not None:  # a dump holds only objects: anything else is a wrong file, not silence
                problems.append(
                    Problem(file=file, message=f"document {d + 1}: not a Kubernetes object (no apiVersion and kind)")
                )
            continue
        for _, body in named_items(doc, file=file, document=d, problems=problems):
            ns = (body.get("metadata") or {}).get("namespace")
            ref = ref_of(body, namespace=str(ns) if ns else None)
            if ref.identity in seen:
                problems.append(
                    Problem(file=file, resource=ref, message=f"dumped twice (also in {seen[ref.identity]})")
                )
                continue
            seen[ref.identity] = file
            objects.append(LiveObject(ref=ref, body=dict(body), source=Source.FILE))


def with_default_namespace(
    objects: Iterable[LiveObject], *, namespaced: NamespacedFn, fallback: str
) -> tuple[LiveObject, ...]:
    """Dumped objects of a namespaced kind (or an unknown one) without ``metadata.namespace`` get ``fallback``:
    the namespace the Git side gives a manifest without one, so both sides name the same object alike."""
    out: list[LiveObject] = []
    for obj in objects:
        if obj.ref.namespace is None and namespaced(obj.ref.api_version, obj.ref.kind) is not False:
            ref = ObjectRef(api_version=obj.ref.api_version, kind=obj.ref.kind, namespace=fallback, name=obj.ref.name)
            obj = LiveObject(ref=ref, body=obj.body, source=obj.source)
        out.append(obj)
    return tuple(out)
