"""Values edits as file patches: spliced into the original text by the YAML editor, never re-serialized. Pure.

A values file or an inline mapping is edited at the key; values held as a YAML text inside a string (Argo CD
``helm.values``, a ConfigMap's ``values.yaml`` key) are edited inside that text, which is then written back as the
string; a parameter's value is replaced; a ``--set-file`` file gets its new content.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.errors import PatchError
from writeback.kube.paths import lookup
from writeback.kube.pathtypes import ABSENT, FieldPath, Key
from writeback.model import FilePatch
from writeback.sources.helm.candidates import scalar_text
from writeback.sources.helm.choosing import ValuesEdit
from writeback.sources.helm.model import Form
from writeback.sources.helm.values import field_path, format_key
from writeback.yaml.edit import Edit, apply_edits, load_documents

__all__ = ["Conflict", "conflicts", "patch_files", "scalar_value"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Conflict:
    edits: tuple[ValuesEdit, ...]
    reason: str


def _slot(e: ValuesEdit) -> tuple[str, int | None, FieldPath, tuple[Any, ...]]:
    return (e.where.file, e.where.document, e.where.path, e.key)


def conflicts(edits: Sequence[ValuesEdit]) -> tuple[list[ValuesEdit], list[Conflict]]:
    """Edits that agree with every other edit of their place, and the places where edits want different values."""
    by: dict[Any, list[ValuesEdit]] = {}
    for e in edits:
        by.setdefault(_slot(e), []).append(e)
    keep: list[ValuesEdit] = []
    bad: list[Conflict] = []
    for group in by.values():
        values = {json.dumps(e.value, sort_keys=True, default=repr) for e in group}
        if len(values) == 1:
            keep.extend(group)
        else:
            shown = ", ".join(sorted(values))
            bad.append(
                Conflict(
                    edits=tuple(group),
                    reason=f"the drifted fields need different values for "
                    f"{format_key(group[0].key)} in {group[0].where.file}: {shown}",
                )
            )
    return keep, bad


def scalar_value(value: Any) -> str:
    """A value as a parameter's string (``--set`` reads it back typed)."""
    text = scalar_text(value)
    return "null" if value is None else text if text is not None else json.dumps(value)


def _text_edit(inner: Any, edits: Sequence[ValuesEdit], *, source: str) -> str:
    text = inner if isinstance(inner, str) else ""
    outer = [Edit(document=0, path=field_path(e.key), value=e.value) for e in edits]
    return (
        _first_keys(text, outer, source=source)
        if _empty(text, source=source)
        else apply_edits(text, outer, source=source)
    )


def patch_files(edits: Sequence[ValuesEdit], files: Mapping[str, str]) -> tuple[FilePatch, ...]:
    """The files ``edits`` change, with their texts before and after. Raises PatchError (the YAML editor's
    refusal, naming the file and key) when an edit cannot be made safely."""
    by_file: dict[str, list[ValuesEdit]] = {}
    seen: set[Any] = set()
    for e in edits:
        if _slot(e) not in seen:
            seen.add(_slot(e))
            by_file.setdefault(e.where.file, []).append(e)
    out: list[FilePatch] = []
    for file, group in sorted(by_file.items()):
        before = files.get(file)
        if before is None:
            raise PatchError(f"{file}: not in the repo")
        if any(e.where.form is Form.FILE for e in group):
            whole = [e for e in group if e.where.form is Form.FILE]
            out.append(FilePatch(path=file, before=before, after=scalar_value(whole[-1].value)))
            continue
        outer: list[Edit] = []
        texts: dict[tuple[int | None, FieldPath], list[ValuesEdit]] = {}
        for e in group:
            where = e.where
            if where.form is Form.TEXT:
                texts.setdefault((where.document, where.path), []).append(e)
            elif where.form is Form.SCALAR:
                outer.append(Edit(document=where.document or 0, path=where.path, value=scalar_value(e.value)))
            else:
                path = (*where.path, *field_path(e.key))
                outer.append(Edit(document=where.document or 0, path=path, value=e.value))
        if texts:
            docs = load_documents(before, source=file)
            for (document, path), inner_edits in texts.items():
                doc = docs[document or 0].data if docs else None
                inner = lookup(doc, path) if doc is not None else ABSENT
                new = _text_edit(inner if inner is not ABSENT else "", inner_edits, source=f"{file} ({_name(path)})")
                outer.append(Edit(document=document or 0, path=path, value=new))
        if all(e.where.document is None for e in group) and _empty(before, source=file):
            after = _first_keys(before, outer, source=file)
        else:
            after = apply_edits(before, outer, source=file)
        out.append(FilePatch(path=file, before=before, after=after))
    return tuple(out)


_PLACEHOLDER = "writeback-placeholder"


def _empty(text: str, *, source: str) -> bool:
    docs = load_documents(text, source=source) if text.strip() else []
    return not docs or docs[0].data is None


def _first_keys(text: str, edits: Sequence[Edit], *, source: str) -> str:
    """The first keys of a values file that has none (empty, or comments only), in block style after its text."""
    base = (text if not text or text.endswith("\n") else text + "\n") + f"{_PLACEHOLDER}: 0\n"
    done = apply_edits(base, [*edits, Edit(document=0, path=(Key(_PLACEHOLDER),))], source=source)
    return done


def _name(path: FieldPath) -> str:
    from writeback.kube.paths import format_path

    return format_path(path)
