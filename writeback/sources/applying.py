"""Turn a Location into minimal text edits of the repo texts (via ``writeback.yaml.edit``). Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import replace
from typing import Any

from writeback.errors import PatchError
from writeback.kube.images import parse_image
from writeback.kube.paths import format_path, lookup
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, Select
from writeback.model import Op
from writeback.yaml.edit import Edit, EditRefused, VerifyError, apply_edits

from .documents import documents, is_yaml
from .locations import Location, Transform

__all__ = ["apply_location", "apply_locations", "set_path"]


def _data(text: str, *, file: str, document: int) -> Any:
    """A document's data (read fast, no positions: only ``apply_edits`` needs them, and composes them itself)."""
    docs = documents(text, source=file)
    if document >= len(docs):
        raise EditRefused(f"{file}: has no document {document + 1}")
    return docs[document]


def _needed(data: Any, path: FieldPath, value: Any) -> bool:
    """Does setting (or with ABSENT removing) ``path`` change ``data``?"""
    current = lookup(data, path)
    if value is ABSENT:
        return current is not ABSENT
    return current is ABSENT or current != value or type(current) is not type(value)


def set_path(text: str, *, file: str, document: int, path: FieldPath, value: Any) -> str:
    """Set (or with ABSENT remove) ``path`` in one document; missing parents are created by the editor. A text with
    no document yet (empty, or comments only) gets its first keys in block style, after its comments."""
    if document == 0 and not documents(text, source=file):
        return text if value is ABSENT else _first_keys(text, Edit(document=0, path=path, value=value), source=file)
    if not _needed(_data(text, file=file, document=document), path, value):
        return text
    return apply_edits(text, [Edit(document=document, path=path, value=value)], source=file)


_PLACEHOLDER = "writeback-placeholder"


def _first_keys(text: str, edit: Edit, *, source: str) -> str:
    """The editor adds keys to a mapping: give it one (a placeholder key), add the edit, take the placeholder out."""
    base = (text if not text or text.endswith("\n") else text + "\n") + f"{_PLACEHOLDER}: 0\n"
    return apply_edits(base, [edit, Edit(document=0, path=(Key(_PLACEHOLDER),))], source=source)


def _live_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _image_part(loc: Location) -> str:
    if not isinstance(loc.drift.live, str):
        raise EditRefused(f"{format_path(loc.drift.path)}: the live value is not an image string")
    part = parse_image(loc.drift.live).part(loc.transform.value)
    if part is None:
        raise EditRefused(f"the live image {loc.drift.live!r} has no {loc.transform.value}")
    return part


def _images_entry(text: str, loc: Location) -> str:
    entry = lookup(_data(text, file=loc.file, document=loc.document), loc.path)
    if not isinstance(entry, Mapping) or not isinstance(loc.drift.live, str):
        raise EditRefused(f"{loc.file}: {format_path(loc.path)} is not a kustomize images entry")
    live = parse_image(loc.drift.live)
    wanted: dict[str, Any] = {
        "newName": live.name
        if live.name != (entry.get("newName") or entry.get("name"))
        else entry.get("newName", ABSENT),
        "newTag": live.tag if live.tag is not None else ABSENT,
        "digest": live.digest if live.digest is not None else ABSENT,
    }
    if live.digest is not None and live.tag is None:
        wanted["newTag"] = ABSENT
    for key, value in wanted.items():
        if entry.get(key, ABSENT) != value:
            text = set_path(text, file=loc.file, document=loc.document, path=(*loc.path, Key(key)), value=value)
    return text


def _literal(text: str, loc: Location) -> str:
    key = loc.key or ""
    entry = lookup(_data(text, file=loc.file, document=loc.document), loc.path)
    if loc.drift.op is not Op.REMOVE and "\n" in _live_text(loc.drift.live):
        raise EditRefused(f"{key}: a multi-line value cannot be written as a kustomize literal")
    literal = f"{key}={_live_text(loc.drift.live)}"
    if entry is ABSENT:
        if loc.drift.op is Op.REMOVE:
            return text
        name = dict(loc.path[-1].keys)["name"] if isinstance(loc.path[-1], Select) else key
        item = {"name": name, "behavior": "merge", "literals": [literal]}
        return set_path(text, file=loc.file, document=loc.document, path=loc.path, value=item)
    literals = entry.get("literals") if isinstance(entry, Mapping) else None
    index = next(
        (i for i, lit in enumerate(literals or []) if isinstance(lit, str) and lit.partition("=")[0] == key), None
    )
    base = (*loc.path, Key("literals"))
    if index is not None:
        value: Any = ABSENT if loc.drift.op is Op.REMOVE else literal
        return set_path(text, file=loc.file, document=loc.document, path=(*base, Index(index)), value=value)
    if loc.drift.op is Op.REMOVE:
        return text
    return set_path(text, file=loc.file, document=loc.document, path=(*base, Index(len(literals or []))), value=literal)


def _env_line(text: str, loc: Location) -> str:
    key = loc.key or ""
    lines = text.splitlines(keepends=True)
    nl = "\r\n" if text.endswith("\r\n") else "\n"
    value = None if loc.drift.op is Op.REMOVE else _live_text(loc.drift.live)
    if value is not None and "\n" in value:
        raise EditRefused(f"{loc.file}: {key}: a multi-line value cannot be written into an env file")
    for i, line in enumerate(lines):
        if line.partition("=")[0].strip() == key and not line.lstrip().startswith("#"):
            ending = line[len(line.rstrip("\r\n")) :]
            lines[i] = "" if value is None else f"{key}={value}{ending}"
            return "".join(lines)
    if value is None:
        return text
    if text and not text.endswith("\n"):
        text += nl
    return f"{text}{key}={value}{nl}"


def _delete_directive(text: str, loc: Location) -> str:
    last = loc.path[-1]
    if isinstance(last, Select):
        item: dict[str, Any] = {k: v for k, v in last.keys}
        item["$patch"] = "delete"
        return set_path(text, file=loc.file, document=loc.document, path=loc.path, value=item)
    return set_path(text, file=loc.file, document=loc.document, path=loc.path, value=None)


def _value(text: str, loc: Location) -> str:
    t = loc.transform
    if t is Transform.IMAGE_ENTRY:
        return _images_entry(text, loc)
    if t is Transform.LITERAL:
        return _literal(text, loc)
    if t is Transform.DELETE_DIRECTIVE:
        return _delete_directive(text, loc)
    if t in (Transform.IMAGE_TAG, Transform.IMAGE_NAME, Transform.IMAGE_DIGEST):
        value: Any = _image_part(loc)
    else:
        value = loc.written
    return set_path(text, file=loc.file, document=loc.document, path=loc.path, value=value)


def _ensure_patch_file(texts: MutableMapping[str, str], loc: Location) -> None:
    new = loc.new_patch
    if new is None or new.file in texts:
        return
    texts[new.file] = new.text
    ktext = texts[new.kustomization]
    kdata = _data(ktext, file=new.kustomization, document=0)
    patches = kdata.get("patches") if isinstance(kdata, Mapping) else None
    if isinstance(patches, list) and any(isinstance(p, Mapping) and p.get("path") == new.reference for p in patches):
        return
    index = len(patches) if isinstance(patches, list) else 0
    path: FieldPath = (Key("patches"), Index(index))
    texts[new.kustomization] = set_path(
        ktext, file=new.kustomization, document=0, path=path, value={"path": new.reference}
    )


def apply_location(texts: MutableMapping[str, str], loc: Location) -> None:
    """Write one location into ``texts`` (repo-relative path -> text). Raises PatchError subclasses."""
    if loc.new_patch is not None:
        _ensure_patch_file(texts, loc)
    if loc.file not in texts:
        raise EditRefused(f"{loc.file}: the file does not exist")
    text = texts[loc.file]
    if loc.transform is Transform.FILE_CONTENT:
        if loc.value is not None:
            texts[loc.file] = _live_text(loc.value.value)
            return
        if loc.drift.op is Op.REMOVE:
            raise EditRefused(f"{loc.file}: removing a generator file source is left to a person")
        texts[loc.file] = _live_text(loc.drift.live)
        return
    if loc.transform is Transform.ENV_LINE:
        texts[loc.file] = _env_line(text, loc)
        return
    if loc.inline is not None:
        inner = lookup(_data(text, file=loc.file, document=loc.document), loc.inline)
        if inner is ABSENT or inner is None:
            inner = ""  # a values text that does not exist yet: created with the edit
        if not isinstance(inner, str):
            raise VerifyError(f"{loc.file}: {format_path(loc.inline)} is not an embedded YAML text")
        source = f"{loc.file} {format_path(loc.inline)}"
        new_inner = _value(inner, replace(loc, file=source, document=0, inline=None))
        texts[loc.file] = set_path(text, file=loc.file, document=loc.document, path=loc.inline, value=new_inner)
        return
    texts[loc.file] = _value(text, loc)


_BATCHED = (Transform.VALUE, Transform.IMAGE_TAG, Transform.IMAGE_NAME, Transform.IMAGE_DIGEST)


def _batchable(loc: Location) -> bool:
    return loc.transform in _BATCHED and loc.inline is None and loc.new_patch is None and is_yaml(loc.file)


def _one_by_one(texts: MutableMapping[str, str], locs: Sequence[Location]) -> list[PatchError | None]:
    outcomes: list[PatchError | None] = []
    for loc in locs:
        trial = dict(texts)
        try:
            apply_location(trial, loc)
        except PatchError as e:
            outcomes.append(e)
            continue
        texts.update(trial)
        outcomes.append(None)
    return outcomes


def _batch(texts: MutableMapping[str, str], file: str, locs: Sequence[Location]) -> list[PatchError | None]:
    """All of one file's value edits in one ``apply_edits`` call; any refusal: one by one, to tell which."""
    if file not in texts:
        return _one_by_one(texts, locs)
    text = texts[file]
    try:
        docs = documents(text, source=file)
        edits = []
        for loc in locs:
            if loc.document >= len(docs):
                raise EditRefused(f"{file}: has no document {loc.document + 1}")
            if loc.transform is Transform.VALUE:
                value: Any = loc.written
            else:
                value = _image_part(loc)
            if _needed(docs[loc.document], loc.path, value):
                edits.append(Edit(document=loc.document, path=loc.path, value=value))
        texts[file] = apply_edits(text, edits, source=file)
    except PatchError:
        return _one_by_one(texts, locs)
    return [None] * len(locs)


def apply_locations(texts: MutableMapping[str, str], locs: Sequence[Location]) -> list[PatchError | None]:
    """Write every location into ``texts``; the outcome of each: None (written) or why it was not.

    A file's value edits go to the editor in one call (one parse, one verification). Locations that
    create or touch other files (patch files, generators, inline patches) are written one by one, in order.
    """
    touched_by_others: set[str] = set()
    for loc in locs:
        if not _batchable(loc):
            touched_by_others.add(loc.file)
            if loc.new_patch is not None:
                touched_by_others |= {loc.new_patch.file, loc.new_patch.kustomization}
    outcomes: dict[int, PatchError | None] = {}
    groups: dict[str, list[int]] = {}
    for i, loc in enumerate(locs):
        if _batchable(loc) and loc.file not in touched_by_others:
            groups.setdefault(loc.file, []).append(i)
    for file, members in groups.items():
        outcomes.update(zip(members, _batch(texts, file, [locs[i] for i in members]), strict=True))
    rest = [i for i in range(len(locs)) if i not in outcomes]
    outcomes.update(zip(rest, _one_by_one(texts, [locs[i] for i in rest]), strict=True))
    return [outcomes[i] for i in range(len(locs))]
