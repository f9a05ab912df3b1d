"""Properties of the diff over generated objects: no self-drift, keyed lists are order-free, and every
reported leaf is found at its path on both sides (and its path survives the path grammar)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from writeback.drift.diffing import diff
from writeback.drift.listkeys import resolver
from writeback.drift.normalizing import is_empty
from writeback.kube.paths import format_path, lookup_as_served, parse_path
from writeback.kube.pathtypes import ABSENT, Index
from writeback.model import Op

KEYS = resolver(kind="Deployment", learned={})
NAMES = st.sampled_from(["a", "b", "c", "name", "image", "value", "x.y", "*", "with space"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["", "v", "1", "true", "500m"]))
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(NAMES, inner, max_size=4)),
    max_leaves=12,
)
ENV = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(["A", "B", "C", "D"]), "value": st.sampled_from(["1", "2"])}),
    max_size=4,
    unique_by=lambda e: e["name"],
)
CONTAINERS = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["app", "side", "init"]), "image": st.sampled_from(["a:1", "a:2"]), "env": ENV}
    ),
    max_size=3,
    unique_by=lambda c: c["name"],
)


def pod(containers: list[dict[str, Any]], extra: Any = None) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": containers}}, "extra": extra}}


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_no_self_drift(value: Any) -> None:
    assert diff(live={"spec": value}, git={"spec": value}, keys=KEYS) == []


@settings(max_examples=200, deadline=None)
@given(CONTAINERS, st.randoms(use_true_random=False))
def test_keyed_lists_are_order_free(containers: list[dict[str, Any]], rnd: Any) -> None:
    shuffled = [{**c, "env": rnd.sample(c["env"], len(c["env"]))} for c in containers]
    rnd.shuffle(shuffled)
    assert diff(live=pod(containers), git=pod(shuffled), keys=KEYS) == []


@settings(max_examples=300, deadline=None)
@given(CONTAINERS, CONTAINERS, JSON, JSON)
def test_every_leaf_is_at_its_path_on_both_sides(
    lc: list[dict[str, Any]], gc: list[dict[str, Any]], lx: Any, gx: Any
) -> None:
    live, git = pod(lc, lx), pod(gc, gx)
    for leaf in diff(live=live, git=git, keys=KEYS):
        assert parse_path(format_path(leaf.path)) == leaf.path
        at_live, at_git = lookup_as_served(live, leaf.path), lookup_as_served(git, leaf.path)
        positional = isinstance(leaf.path[-1], Index)  # an atomic list item: even a null one counts
        if leaf.op is Op.ADD:
            assert leaf.live == at_live and is_empty(at_git)
            assert positional or not is_empty(at_live)
        elif leaf.op is Op.REMOVE:
            assert leaf.git == at_git and is_empty(at_live)
            assert positional or not is_empty(at_git)
        else:
            assert (leaf.live, leaf.git) == (at_live, at_git)
            assert at_live is not ABSENT and at_git is not ABSENT
