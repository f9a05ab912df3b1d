"""Helm values as data: --set keys and typing (helm's strvals), MergeMaps (Helm -f files, Flux's values), Helm's
coalescing (a user null deletes), and which layer decides a key."""

from __future__ import annotations

import pytest

from writeback.kube.pathtypes import ABSENT
from writeback.sources.helm.values import (
    coalesce,
    format_key,
    get_value,
    merge_maps,
    parse_key,
    setter_layer,
    typed_value,
    with_value,
)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("image.tag", ("image", "tag")),
        ("extraEnvs[0].value", ("extraEnvs", 0, "value")),
        ("a[1][2]", ("a", 1, 2)),
        (r"podAnnotations.prometheus\.io/scrape", ("podAnnotations", "prometheus.io/scrape")),
        ("replicaCount", ("replicaCount",)),
    ],
)
def test_set_keys_parse_and_format_both_ways(text: str, path: tuple[str | int, ...]) -> None:
    assert parse_key(text) == path
    assert format_key(path) == text


@pytest.mark.parametrize("bad", ["", ".a", "a..b", "[0]", "a[x]"])
def test_a_malformed_set_key_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match=r"key|index|segment"):
        parse_key(bad)


@pytest.mark.parametrize(
    ("text", "string", "value"),
    [
        ("3", False, 3),
        ("0", False, 0),
        ("007", False, "007"),  # a leading zero keeps it text (strvals)
        ("true", False, True),
        ("False", False, False),
        ("null", False, None),
        ("1.5", False, "1.5"),  # only integers are typed
        ("{a,b}", False, ["a", "b"]),
        ("true", True, "true"),  # --set-string
        ("3", True, "3"),
    ],
)
def test_set_values_are_typed_as_helm_types_them(text: str, string: bool, value: object) -> None:
    assert typed_value(text, string=string) == value
    assert type(typed_value(text, string=string)) is type(value)


def test_merge_maps_merges_maps_and_replaces_lists_and_scalars() -> None:
    a = {"image": {"repository": "r", "tag": "1"}, "env": [{"name": "A"}], "n": 1}
    b = {"image": {"tag": "2"}, "env": [{"name": "B"}], "n": None}
    out = merge_maps(a, b)
    assert out == {"image": {"repository": "r", "tag": "2"}, "env": [{"name": "B"}], "n": None}
    assert a["image"] == {"repository": "r", "tag": "1"}  # inputs untouched


def test_coalesce_lets_a_user_null_delete_a_chart_default() -> None:
    defaults = {"resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1m"}}, "host": "x"}
    user = {"resources": {"limits": None}, "host": None, "extra": {"a": None, "b": 1}}
    assert coalesce(defaults, user) == {"resources": {"requests": {"cpu": "1m"}}, "extra": {"b": 1}}


def test_setter_layer_is_the_key_or_the_list_that_replaces_it() -> None:
    layer = {"image": {"tag": "1"}, "extraEnvs": [{"name": "A", "value": "a"}], "flat": "x"}
    assert setter_layer(layer, ("image", "tag")) == ("image", "tag")
    assert setter_layer(layer, ("image", "repository")) is None
    assert setter_layer(layer, ("extraEnvs", 0, "value")) == ("extraEnvs",)
    assert setter_layer(layer, ("flat", "below")) is None
    assert setter_layer({}, ("image",)) is None


def test_with_value_sets_and_removes_without_touching_the_input() -> None:
    values = {"a": {"b": [1, 2]}}
    assert with_value(values, ("a", "b", 1), 9) == {"a": {"b": [1, 9]}}
    assert with_value(values, ("a", "b", 2), 3) == {"a": {"b": [1, 2, 3]}}
    assert with_value(values, ("a", "b", 0), ABSENT) == {"a": {"b": [2]}}
    assert with_value(values, ("a", "c", "d"), 1) == {"a": {"b": [1, 2], "c": {"d": 1}}}
    assert values == {"a": {"b": [1, 2]}}
    assert get_value(values, ("a", "b", 5)) is ABSENT
