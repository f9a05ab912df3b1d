"""Which fields an applier's server-side Apply owns, against Git's manifest: the settle stage's coverage walk. Pure.

An Apply's ``managedFields`` entry holds its fields as FieldsV1: a tree of ``f:<field>`` keys, ``k:<JSON key>`` for a
keyed list's items, ``v:<JSON value>`` for a set's values and ``i:<n>`` for an atomic list's positions (the API
server's ``structured-merge-diff`` encoding). :func:`covers_object` says whether the appliers own exactly what Git
declares; ``drift.settling`` settles an object only then.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from writeback.drift.normalizing import added_annotation, added_label

__all__ = ["covers_object", "merged", "name_key"]

_TOP_SKIPPED = frozenset({"apiVersion", "kind", "status"})
_META_SKIPPED = frozenset({"name", "namespace", "generateName"})


def merged(trees: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tree in trees:
        for key, sub in tree.items():
            prior = out.get(key)
            if prior is None:
                out[key] = sub
            elif prior == {} or sub == {}:
                out[key] = {}  # one owns it whole
            elif isinstance(prior, Mapping) and isinstance(sub, Mapping):
                out[key] = merged((prior, sub))
    return out


def covers_object(tree: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    """The appliers own exactly what Git declares: every field of it, and nothing else (an admission plugin or a
    webhook that added a field during the Apply makes the applier own it; normalizing keeps it, so the rules report
    it) but the bookkeeping labels and annotations normalizing drops (a GitOps tool's tracking)."""
    declared = 0
    for key, value in body.items():
        if key in _TOP_SKIPPED:
            continue
        node = tree.get("f:" + key)
        if key == "metadata" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if k not in _META_SKIPPED}
            if not value:  # Git's metadata is its identity alone: the appliers may own bookkeeping only
                if node is not None:
                    if not isinstance(node, Mapping) or not _only_bookkeeping(node, {}, key):
                        return False
                    declared += 1
                continue
        if node is None or not _covers(node, value, key):
            return False
        declared += 1
    return declared == len(tree) or _only_bookkeeping(tree, body, "")


_KEPT = 4096  # entries each cache here keeps at most
# Git's keys as FieldsV1 spells them ("f:name"), made once each: a repo repeats its keys in every object (a dict, not
# an lru_cache: it is read once per field of every object, where a lookup costs less than a call)
_FIELD_KEYS: dict[str, str] = {}


def _covers(node: Any, value: Any, name: str) -> bool:
    """Does the FieldsV1 ``node`` own every field of ``value`` (Git's, at the field ``name``), and no other? A null
    anywhere is left to the normal path."""
    if value is None or not (type(node) is dict or isinstance(node, Mapping)):
        return False
    if not node:  # an owned leaf: a scalar, or an atomic list or map owned as a whole
        return True
    kind = type(value)
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        get = node.get
        for key, sub in value.items():
            field_key = _FIELD_KEYS.get(key)
            if field_key is None:
                field_key = "f:" + key
                if len(_FIELD_KEYS) < _KEPT:
                    _FIELD_KEYS[key] = field_key
            child = get(field_key)
            if type(child) is dict and not child and sub is not None:
                continue  # an owned leaf (as a call would say)
            if child is None or not _covers(child, sub, key):
                return False
        owned = len(node) - (1 if "." in node else 0)
        return owned == len(value) or _only_bookkeeping(node, value, name)
    if kind is list:
        return _covers_items(node, value)
    return True  # a scalar under an inner node ("." and the like): owned


def _only_bookkeeping(node: Mapping[str, Any], value: Mapping[str, Any], name: str) -> bool:
    """The fields ``node`` owns beyond ``value``'s are bookkeeping labels or annotations (under a ``metadata``)."""
    for raw, sub in node.items():
        if raw == "." or raw[2:] in value:
            continue
        field_name = raw[2:]
        if name == "labels" and raw.startswith("f:") and added_label(field_name):
            continue
        if name == "annotations" and raw.startswith("f:") and added_annotation(field_name):
            continue
        if (
            name == "metadata"
            and raw in ("f:labels", "f:annotations")
            and isinstance(sub, Mapping)
            and sub
            and _only_bookkeeping(sub, {}, field_name)
        ):
            continue
        return False
    return True


def _covers_items(node: Mapping[str, Any], items: list[Any]) -> bool:
    keyed: list[tuple[str, dict[str, Any], Any]] | None = None  # decoded only when an item is not found by name
    values: list[Any] | None = None
    used: set[str] = set()
    for pos, item in enumerate(items):
        if type(item) is dict or isinstance(item, Mapping):
            name = item.get("name")
            if type(name) is str:  # most keyed lists are keyed by name alone: look the key up as the server spells it
                raw = name_key(name)
                child = node.get("k:" + raw)
                if child is not None and raw not in used:
                    used.add(raw)
                    if not _covers(child, item, ""):
                        return False
                    continue
            if keyed is None:
                keyed, values = _decoded(node)
                if keyed is None:
                    return False
            if keyed:
                found = _match(keyed, item, used)
                if found is None or not _covers(keyed[found][2], item, ""):
                    return False
                used.add(keyed[found][0])
                continue
        elif not isinstance(item, list):
            if values is None:
                keyed, values = _decoded(node)
                if values is None:
                    return False
            if any(v == item and type(v) is type(item) for v in values):
                continue
        child = node.get(f"i:{pos}")
        if child is None or not _covers(child, item, ""):
            return False
    return len(node) - (1 if "." in node else 0) == len(items)  # no item the applier owns that Git lacks


def name_key(name: str) -> str:
    """A list item's key by name as the server spells it in FieldsV1 (``{"name":"web"}``): JSON, no spaces; a name
    JSON writes as it is (no quote, backslash or control character) needs no encoder."""
    if name.isprintable() and '"' not in name and "\\" not in name:
        return '{"name":"' + name + '"}'
    return '{"name":' + json.dumps(name, ensure_ascii=False) + "}"


@functools.lru_cache(maxsize=_KEPT)  # the same keys recur in every object; the value is read, never changed
def _json_key(text: str) -> Any:
    """A list item's key or value as FieldsV1 spells it (``k:{...}``, ``v:...``), decoded; ValueError if not JSON."""
    return json.loads(text)


def _decoded(node: Mapping[str, Any]) -> tuple[list[tuple[str, dict[str, Any], Any]] | None, list[Any] | None]:
    """The ``k:`` entries of a list node (the JSON text, its keys decoded, the subtree) and its ``v:`` values; None
    and None when one does not decode."""
    keyed: list[tuple[str, dict[str, Any], Any]] = []
    values: list[Any] = []
    for raw, sub in node.items():
        prefix, _, rest = raw.partition(":")
        if prefix == "k" or prefix == "v":
            try:
                decoded = _json_key(rest)
            except ValueError:
                return None, None
            if prefix == "k" and isinstance(decoded, dict):
                keyed.append((rest, decoded, sub))
            elif prefix == "v":
                values.append(decoded)
    return keyed, values


def _match(keyed: list[tuple[str, dict[str, Any], Any]], item: Mapping[str, Any], used: set[str]) -> int | None:
    """The keyed entry of ``item``: every key field equal, else (a key the server defaulted, e.g. a port's
    ``protocol``) every key field Git sets equal; each entry matches one item."""
    loose: int | None = None
    for i, (raw, keys, _) in enumerate(keyed):
        if raw in used:
            continue
        present = [k for k in keys if k in item]
        if not present or any(item[k] != keys[k] for k in present):
            continue
        if len(present) == len(keys):
            return i
        if loose is None:
            loose = i
    return loose
