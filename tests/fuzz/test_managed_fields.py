"""Fuzzing the managedFields (FieldsV1) parser: random trees read back as the paths they encode, the latest
writer owns each leaf, and no input shape (junk keys, wrong types) makes it raise."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzzing import fuzz
from writeback.drift.ownership import generalize, parse_fields_v1, parse_managed_fields
from writeback.kube.pathtypes import FieldPath, Index, Key, Segment, Select, scalar_text

NAMES = st.sampled_from(["a", "b", "spec", "x.y", "app.kubernetes.io/name", "k:v", "f:", "é", "{}", "."])
KEY_NAMES = st.sampled_from(["name", "port", "protocol", "type"])
KEY_VALUES = st.one_of(st.integers(0, 99), st.booleans(), st.sampled_from(["a", "TCP", "80", "", "x=y", "[1]"]))


def _keyed(item: dict[str, Any]) -> tuple[str, Segment]:
    raw = "k:" + json.dumps(item, sort_keys=True, separators=(",", ":"))
    return raw, Select(tuple((k, scalar_text(item[k])) for k in sorted(item)))


SEGMENTS = st.one_of(
    NAMES.map(lambda n: ("f:" + n, Key(n))),
    st.dictionaries(KEY_NAMES, KEY_VALUES, min_size=1, max_size=2).map(_keyed),
    st.integers(0, 5).map(lambda i: (f"i:{i}", Index(i))),
)
# A tree node: {(raw key, segment): child}; {} is an owned leaf; (".", None) marks the node itself.
TREES: st.SearchStrategy[dict[Any, Any]] = st.recursive(
    st.just({}),
    lambda inner: st.dictionaries(st.one_of(SEGMENTS, st.just((".", None))), inner, min_size=1, max_size=3),
    max_leaves=12,
)


def _raw(tree: dict[Any, Any]) -> dict[str, Any]:
    return {raw: _raw(sub) for (raw, _), sub in tree.items()}


def _expected(tree: dict[Any, Any], path: FieldPath = ()) -> tuple[set[FieldPath], set[FieldPath]]:
    """(owned leaf paths, paths with a "." marker) of a generated tree: the oracle."""
    leaves: set[FieldPath] = set()
    selves: set[FieldPath] = set()
    for (raw, seg), sub in tree.items():
        if raw == ".":
            selves.add(path)
        elif not sub:
            leaves.add((*path, seg))
        else:
            sub_leaves, sub_selves = _expected(sub, (*path, seg))
            leaves |= sub_leaves
            selves |= sub_selves
    return leaves, selves


@fuzz(ci=100)
@given(TREES.filter(bool))
def test_a_tree_reads_back_as_the_paths_it_encodes(tree: dict[Any, Any]) -> None:
    keys: dict[str, tuple[str, ...]] = {}
    entries = parse_fields_v1(_raw(tree), keys=keys)
    leaves, selves = _expected(tree)
    assert {e.path for e in entries if e.leaf} == leaves
    assert {e.path for e in entries if e.self_marker} == selves
    for path in leaves | selves:
        for n, seg in enumerate(path):
            if isinstance(seg, Select):
                assert generalize(path[:n]) in keys  # every keyed list's key names are learned


TIMES = st.sampled_from([None, "2024-05-01T10:00:00Z", "2024-05-02T10:00:00Z", "2024-05-03T10:00:00Z"])


@fuzz(ci=100)
@given(st.lists(st.tuples(TREES.filter(bool), TIMES), min_size=1, max_size=4))
def test_the_latest_writer_owns_each_leaf(managers: list[tuple[dict[Any, Any], str | None]]) -> None:
    entries = [
        {"manager": f"m{i}", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": _raw(tree), "time": time}
        for i, (tree, time) in enumerate(managers)
    ]
    own = parse_managed_fields({"metadata": {"managedFields": entries}})
    assert own.present and [m.manager for m in own.managers] == [e["manager"] for e in entries]
    expected = [_expected(tree) for tree, _ in managers]
    all_leaves = set().union(*(leaves for leaves, _ in expected))
    for path in all_leaves:
        writers = [i for i, (leaves, _) in enumerate(expected) if path in leaves]
        latest = max(writers, key=lambda i: (managers[i][1] or "", i))
        owner = own.owner_of(path)
        assert owner is not None and owner.manager == f"m{latest}", (path, writers)
    for path in set().union(*(selves for _, selves in expected)) - all_leaves:
        if path:
            first = next(i for i, (_, selves) in enumerate(expected) if path in selves)
            owner = own.owner_of(path, subtree=True)
            assert owner is not None and owner.manager == f"m{first}"


JUNK_KEYS = st.one_of(
    st.sampled_from(
        [".", "f:", "k:", "k:{}", "k:[1]", 'k:{"a":{"b":1}}', "v:", "v:[1]", "i:-1", "i:1.5", "i:x", "x:y"]
    ),
    st.text(max_size=6),
    SEGMENTS.map(lambda s: s[0]),
)
JUNK: st.SearchStrategy[Any] = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=4), st.just({})),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(JUNK_KEYS, st.integers(0, 3)), inner, max_size=4),
    ),
    max_leaves=15,
)
PATHS = st.lists(st.one_of(SEGMENTS.map(lambda s: s[1]), NAMES.map(Key)), max_size=4).map(tuple)


@fuzz(ci=100)
@example(entries=[{"manager": None, "fieldsV1": {0: None}}], spec=None, path=())  # found: a key that is no string
@given(
    st.lists(
        st.one_of(
            JUNK,
            st.fixed_dictionaries(
                {"manager": JUNK, "fieldsV1": JUNK},
                optional={"time": JUNK, "operation": JUNK, "subresource": JUNK, "fieldsType": JUNK},
            ),
        ),
        max_size=3,
    ),
    JUNK,
    PATHS,
)
def test_no_managed_fields_shape_makes_the_parser_raise(entries: list[Any], spec: Any, path: FieldPath) -> None:
    own = parse_managed_fields({"metadata": {"managedFields": entries}, "spec": spec})
    own.owners_of(path)
    own.owners_of(path, subtree=True)
    own.owner_of(path)
    own.owner_of(path, subtree=True)
