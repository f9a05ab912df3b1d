"""The path grammar: examples, round trips (fuzzed) and parse errors that name the column."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzzing import fuzz
from writeback.errors import PathSyntaxError
from writeback.kube.jsonpatch import json_pointer, parse_pointer, pointer_index, pointer_to
from writeback.kube.paths import format_path, match, parse_path, parse_pattern, without
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, Select, Wildcard

BARE = st.from_regex(r"[A-Za-z0-9_$/:@+\-]{1,12}", fullmatch=True)
ANY_TEXT = st.text(min_size=0, max_size=12)
ODD = st.sampled_from(["*", "**", "a.b", "x[y]", 'q"uote', "", " lead", "app.kubernetes.io/name"])
KEY = st.one_of(BARE, ANY_TEXT, ODD)
SELECT = st.lists(st.tuples(BARE, st.one_of(BARE, ANY_TEXT)), min_size=1, max_size=3, unique_by=lambda kv: kv[0]).map(
    lambda pairs: Select(tuple(pairs))
)
SEGMENT = st.one_of(KEY.map(Key), SELECT, st.integers(min_value=0, max_value=10**9).map(Index))
CONCRETE = st.tuples(KEY.map(Key), st.lists(SEGMENT, max_size=6)).map(lambda t: (t[0], *t[1]))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "spec.template.spec.containers[name=app].env[name=LOG_LEVEL].value",
            (
                Key("spec"),
                Key("template"),
                Key("spec"),
                Key("containers"),
                Select((("name", "app"),)),
                Key("env"),
                Select((("name", "LOG_LEVEL"),)),
                Key("value"),
            ),
        ),
        (
            "spec.ports[port=80,protocol=TCP].targetPort",
            (Key("spec"), Key("ports"), Select((("port", "80"), ("protocol", "TCP"))), Key("targetPort")),
        ),
        (
            'metadata.annotations["app.kubernetes.io/name"]',
            (Key("metadata"), Key("annotations"), Key("app.kubernetes.io/name")),
        ),
        (
            "spec.containers[name=app].args[3]",
            (Key("spec"), Key("containers"), Select((("name", "app"),)), Key("args"), Index(3)),
        ),
        ('data["*"]', (Key("data"), Key("*"))),
    ],
)
def test_examples_parse_and_format_back(text: str, expected: FieldPath) -> None:
    assert parse_path(text) == expected
    assert format_path(expected) == text


def test_concrete_star_keys_are_quoted_and_never_wildcards() -> None:
    path = (Key("data"), Key("*"), Key("**"))
    text = format_path(path)
    assert text == 'data["*"]["**"]'
    assert parse_pattern(text) == path
    assert not match(parse_pattern(text), (Key("data"), Key("x"), Key("y")))


def test_pattern_wildcards() -> None:
    assert parse_pattern("a.*[*].**") == (Key("a"), Wildcard(), Wildcard(item=True), Wildcard(many=True))
    assert format_path(parse_pattern("a.*[*].**")) == "a.*[*].**"
    image = parse_path("spec.template.spec.containers[name=app].image")
    assert match(parse_pattern("**.image"), image, prefix=False)
    assert match(parse_pattern("spec.**"), image)
    assert match(parse_pattern("spec.template.spec.containers[*].image"), image, prefix=False)
    assert not match(parse_pattern("spec.*.containers"), image)
    assert match(parse_pattern("spec.template.spec.containers[name=app]"), image)  # prefix
    assert not match(parse_pattern("spec.template.spec.containers[name=app]"), image, prefix=False)


def test_wildcards_are_rejected_in_concrete_paths() -> None:
    for text in ("a.*", "a[*]", "a.**"):
        with pytest.raises(PathSyntaxError, match="column"):
            parse_path(text)


@fuzz(ci=400)
@given(CONCRETE)
def test_round_trip(path: tuple[Key | Select | Index, ...]) -> None:
    text = format_path(path)
    assert parse_path(text) == path
    assert parse_pattern(text) == path


WILD = st.sampled_from([Wildcard(), Wildcard(item=True), Wildcard(many=True)])
PATTERN = st.tuples(
    st.one_of(KEY.map(Key), st.sampled_from([Wildcard(), Wildcard(many=True)])),
    st.lists(st.one_of(SEGMENT, WILD), max_size=6),
).map(lambda t: (t[0], *t[1]))


def test_keys_with_unprintable_characters_are_escaped() -> None:
    path = (Key("a"), Key("x\x85y\u2028z\U000e0001\n"), Select((("name", "a\u2029b"),)))
    text = format_path(path)
    assert text == 'a["x\\u0085y\\u2028z\\udb40\\udc01\\n"][name="a\\u2029b"]' and text.isprintable()
    assert parse_path(text) == path


@fuzz(ci=400)
@given(PATTERN)
def test_pattern_round_trip(pattern: tuple[Key | Select | Index | Wildcard, ...]) -> None:
    assert parse_pattern(format_path(pattern)) == pattern


@fuzz(ci=400)
@given(st.text(alphabet=st.sampled_from(list('ab.[]"=,*\\0123 -_/é')), max_size=24) | st.text(max_size=24))
def test_parse_errors_name_the_column(text: str) -> None:
    for parse in (parse_path, parse_pattern):
        try:
            parsed = parse(text)
        except PathSyntaxError as e:
            m = re.search(r"at column (\d+)", str(e))
            assert m, str(e)
            assert 1 <= int(m.group(1)) <= len(text) + 1
        else:
            assert parsed  # a successful parse is never empty, and formats back to an equivalent path
            assert parse(format_path(parsed)) == parsed


@pytest.mark.parametrize(
    ("text", "column"),
    [("", 1), ("spec..x", 6), ("spec[", 6), ('spec["x', 6), ("spec[name]", 10), ("spec[-1]", 6), ("[0]", 4)],
)
def test_error_columns(text: str, column: int) -> None:
    with pytest.raises(PathSyntaxError, match=f"at column {column}:"):
        parse_path(text)


def test_without_removes_one_field_and_what_it_empties() -> None:
    value = {"a": {"b": 1, "c": [{"d": 2}, {"e": 3}]}, "f": {"g": 4}}
    assert without(value, parse_path("a.b")) == {"a": {"c": [{"d": 2}, {"e": 3}]}, "f": {"g": 4}}
    assert without(value, parse_path("a.c[0].d")) == {"a": {"b": 1, "c": [{}, {"e": 3}]}, "f": {"g": 4}}
    assert without(value, parse_path("a.c[1]")) == {"a": {"b": 1, "c": [{"d": 2}]}, "f": {"g": 4}}
    assert without(value, parse_path("f.g")) == {"a": value["a"]}  # the emptied map goes too (not an emptied item)
    assert without(value, parse_path("a.x")) == value and without(value, parse_path("a.c[5]")) == value
    assert without(value, parse_path("a.c[name=x]")) == value  # keyed items are removed by position only
    assert without(value, ()) is ABSENT
    assert value == {"a": {"b": 1, "c": [{"d": 2}, {"e": 3}]}, "f": {"g": 4}}  # a copy: the input is untouched


def test_json_pointers_of_field_paths_and_back() -> None:
    data = {"spec": {"containers": [{"name": "a"}, {"name": "b", "env": [{"name": "X"}]}]}, "a/b~c": 1}
    assert pointer_to(data, parse_path("spec.containers[name=b].env[name=X].value")) == (
        "/spec/containers/1/env/0/value"
    )
    assert pointer_to(data, parse_path('["a/b~c"]')) == "/a~1b~0c"
    assert pointer_to(data, parse_path("spec.containers[name=z].image")) is None
    assert parse_pointer("/a~1b~0c/0") == ("a/b~c", "0")
    with pytest.raises(PathSyntaxError):
        parse_pointer("/a~2")
    assert json_pointer(["a/b~c", 0]) == "/a~1b~0c/0"
    items = ["x", "y"]
    assert [pointer_index(items, t) for t in ("0", "1", "2", "01", "-", "a")] == [0, 1, None, None, None, None]
