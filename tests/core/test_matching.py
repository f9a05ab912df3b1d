"""paths.match against a plain definition of the grammar, over generated patterns and paths."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzzing import fuzz
from writeback.kube.paths import match
from writeback.kube.pathtypes import Index, Key, PatternSegment, Select, Wildcard

PATH_SEGS = st.one_of(
    st.sampled_from(["a", "b", "spec"]).map(Key),
    st.integers(0, 2).map(Index),
    st.sampled_from([(("name", "x"),), (("name", "y"),), (("name", "x"), ("port", "80"))]).map(Select),
)
PATTERN_SEGS: st.SearchStrategy[PatternSegment] = st.one_of(
    PATH_SEGS,
    st.just(Wildcard()),
    st.just(Wildcard(item=True)),
    st.just(Wildcard(many=True)),
    st.just(Select((("name", "x"),))),
)


def reference(pattern: list[PatternSegment], path: list[Key | Select | Index], prefix: bool) -> bool:
    """The grammar's meaning, spelled out: ``**`` is any number of segments, a selector matches a superset."""
    if not pattern:
        return prefix or not path
    head, rest = pattern[0], pattern[1:]
    if isinstance(head, Wildcard) and head.many:
        return any(reference(rest, path[k:], prefix) for k in range(len(path) + 1))
    if not path:
        return False
    seg = path[0]
    if isinstance(head, Wildcard):
        ok = isinstance(seg, Key) != head.item
    elif isinstance(head, Select) and isinstance(seg, Select):
        ok = set(head.keys) <= set(seg.keys)
    else:
        ok = head == seg
    return ok and reference(rest, path[1:], prefix)


@fuzz(ci=400)
@given(st.lists(PATTERN_SEGS, max_size=5), st.lists(PATH_SEGS, max_size=5), st.booleans())
def test_match_agrees_with_the_grammar(
    pattern: list[PatternSegment], path: list[Key | Select | Index], prefix: bool
) -> None:
    assert match(tuple(pattern), tuple(path), prefix=prefix) == reference(pattern, path, prefix)


def test_match_examples() -> None:
    path = (Key("spec"), Key("a"), Select((("name", "x"), ("port", "80"))), Key("b"))
    assert match((Wildcard(many=True), Key("b")), path, prefix=False)
    assert match((Key("spec"), Wildcard(many=True)), path, prefix=False)
    assert match((Key("spec"), Wildcard(), Wildcard(item=True)), path)
    assert not match((Key("spec"), Wildcard(), Wildcard(item=True)), path, prefix=False)
    assert not match((Key("spec"), Wildcard(item=True)), path)
    assert match((Key("spec"), Key("a"), Select((("port", "80"),))), path)
