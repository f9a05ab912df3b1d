"""writeback.yaml.reading reads YAML exactly as the documented rules (and the YAML editor) say, parsed once."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import writeback.cli
from tests.support.testdata import YAML_CORPUS
from tests.yamledit.generating import documents, layouts, render
from writeback.adapters.files import read_manifests
from writeback.errors import YamlError
from writeback.pipeline.planning import plan_target
from writeback.pipeline.targets import Edges, TargetSpec
from writeback.yaml import reading as yamlreading
from writeback.yaml.constructing import ComplexKey
from writeback.yaml.edit import load_documents
from writeback.yaml.reading import load_all

CORPUS = YAML_CORPUS
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hotfix"


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types (1, 1.0 and True differ), NaN equal to NaN."""
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


def _editor_reading(text: str) -> list[Any]:
    return [d.data for d in load_documents(text, source="f.yaml")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # YAML 1.2: only true/false are booleans; yes/on/y stay text (kubectl's YAML 1.1 is the editor's concern)
        ("a: true\nb: False\nc: yes\nd: on\ne: y\nf: NO\n", {"a": True, "b": False, "c": "yes", "d": "on", "e": "y",
                                                           "f": "NO"}),
        # numbers: 0755 is decimal, 0o755 octal, 0x hex, 1e3 and .inf floats, 1_000 an int, 1:20 text
        ("a: 0755\nb: 0o755\nc: 0x1F\nd: 1e3\ne: .inf\nf: 1_000\ng: 1:20\nh: -.5\n",
         {"a": 755, "b": 493, "c": 31, "d": 1000.0, "e": math.inf, "f": 1000, "g": "1:20", "h": -0.5}),
        # null, timestamps stay text (as the API server gets them), explicit tags
        ("a: ~\nb: null\nc:\nd: 2026-11-30T03:07:00Z\ne: 2026-11-30\nf: !!str 12\ng: !!int '7'\nh: !Ref x\n",
         {"a": None, "b": None, "c": None, "d": "2026-11-30T03:07:00Z", "e": "2026-11-30", "f": "12", "g": 7,
          "h": "x"}),
        # quoted scalars are strings; merge keys apply, own keys win
        ("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\nq: '0755'\n",
         {"base": {"x": 1, "y": 2}, "m": {"x": 1, "y": 3}, "q": "0755"}),
        # a %YAML 1.1 directive switches to YAML 1.1 resolution (from that document on, as ruamel.yaml does)
        ("%YAML 1.1\n---\na: yes\nb: off\nc: 0755\n", {"a": True, "b": False, "c": 755}),
        # an anchor defined again: the later one wins
        ("a: &x 1\nb: *x\nc: &x 2\nd: *x\n", {"a": 1, "b": 1, "c": 2, "d": 2}),
    ],
)  # fmt: skip
def test_reading_rules_are_the_documented_ones_and_the_editors(text: str, expected: dict[str, Any]) -> None:
    (got,) = load_all(text, source="rules.yaml")
    assert _same(got, expected)
    assert _same(got, _editor_reading(text)[0])


def test_documents_empty_ones_and_complex_keys() -> None:
    assert load_all("", source="e.yaml") == []
    assert load_all("# only a comment\n", source="e.yaml") == []
    assert load_all("---\n---\na: 1\n", source="e.yaml") == [None, {"a": 1}]
    (doc,) = load_all("{{ .Values.x }}: 1\n", source="tpl.yaml")
    (key,) = doc
    assert isinstance(key, ComplexKey) and doc[key] == 1


def test_every_corpus_file_reads_as_the_editor_reads_it() -> None:
    files = sorted(p for p in CORPUS.rglob("*") if p.is_file())
    assert len(files) >= 160
    for p in files:
        text = p.read_text(encoding="utf-8")
        assert _same(load_all(text, source=p.name), _editor_reading(text)), p.name


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_files_read_as_the_editor_reads_them(data: st.DataObject) -> None:
    rendered = render(data.draw(documents()), data.draw(layouts()), data.draw(st.lists(st.integers(0, 11), min_size=1)))
    got = load_all(rendered.text, source="gen.yaml")
    assert _same(got, rendered.data), rendered.text
    assert _same(got, _editor_reading(rendered.text)), rendered.text


def test_syntax_errors_name_the_source_and_line() -> None:
    with pytest.raises(YamlError) as err:
        load_all("apiVersion: v1\nkind: ConfigMap\ndata:\n  a: [1, 2\n", source="apps/bad.yaml")
    # the text ended inside the flow sequence: the error points at the [ left open (line 4), not past the end
    assert str(err.value).startswith("apps/bad.yaml:4:6: not valid YAML: ")
    assert err.value.source == "apps/bad.yaml" and err.value.line == 4
    with pytest.raises(YamlError, match=r"^x.yaml:1:\d+: not valid YAML: found undefined alias"):
        load_all("a: *nope\n", source="x.yaml")


@pytest.fixture
def cache_on() -> Iterator[None]:
    """The cache across runs on (the library's default; a one-shot CLI command in this process turns it off)."""
    yamlreading.set_cache(enabled=True)
    yamlreading.clear_cache()
    try:
        yield
    finally:
        yamlreading.set_cache(enabled=True)
        yamlreading.clear_cache()


def test_a_text_is_parsed_once_and_by_source(cache_on: None) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: once\n"
    first = load_all(text, source="a.yaml")
    again = load_all(text, source="a.yaml")
    assert again == first and again[0] is first[0]  # the cached data, not a new parse
    other = load_all(text, source="b.yaml")  # errors name their file: another source is another entry
    assert other == first and other[0] is not first[0]
    info = yamlreading.cache_info()
    assert (info.hits, info.misses, info.texts) == (1, 2, 2)


def test_the_cache_is_keyed_by_digest_so_a_changed_text_of_the_same_size_is_parsed_again(
    cache_on: None, tmp_path: Path
) -> None:
    before = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: '1'\n"
    after = before.replace("'1'", "'2'")
    assert len(after) == len(before)
    assert load_all(before, source="a.yaml")[0]["data"] == {"a": "1"}
    assert load_all(after, source="a.yaml")[0]["data"] == {"a": "2"}  # same source, same size: parsed again
    info = yamlreading.cache_info()
    assert (info.hits, info.misses, info.texts, info.chars) == (0, 2, 2, 2 * len(before))
    assert all(before not in repr(key) for key in yamlreading._cache)  # a digest is kept, not the text
    # the same through the Git side: a file rewritten with the same size (and maybe the same mtime) is read again
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "cm.yaml").write_text(before)
    assert read_manifests(root=tmp_path, path="apps").objects[0].body["data"] == {"a": "1"}
    (tmp_path / "apps" / "cm.yaml").write_text(after)
    assert read_manifests(root=tmp_path, path="apps").objects[0].body["data"] == {"a": "2"}


def test_a_run_parses_a_text_once_without_the_cache_and_a_one_shot_run_keeps_none() -> None:
    spec, repo = TargetSpec(name="hotfix"), EXAMPLE / "gitops"
    edges = Edges(live_path=EXAMPLE / "live.yaml")
    try:
        yamlreading.clear_cache()
        yamlreading.set_cache(enabled=False)  # as `writeback diff`, `plan` and `run --once` do
        first = plan_target(spec=spec, repo=repo, edges=edges)
        cold = yamlreading.cache_info()
        assert (cold.texts, cold.chars, cold.enabled) == (0, 0, False)  # nothing kept after the run
        # detection parsed every text once; locating parsed again only the files that declare a drifted object's
        # name (its scope kept each file's names: tests/planning/test_located_once.py), and patching the edited ones
        assert 3 <= cold.misses <= 2 * 5 + 3 and cold.hits == 0
        second = plan_target(spec=spec, repo=repo, edges=edges)
        assert yamlreading.cache_info().misses == 2 * cold.misses  # the next run parses again: nothing was kept
        assert [cs.files for cs in second.plan.changesets] == [cs.files for cs in first.plan.changesets]
        # a scope nests: the outer one's texts are seen inside, and go when it ends
        text = "a: 1\n"
        with yamlreading.parse_scope():
            load_all(text, source="x.yaml")
            with yamlreading.parse_scope():
                load_all(text, source="x.yaml")
            assert yamlreading.cache_info().misses == 2 * cold.misses + 1
        load_all(text, source="x.yaml")
        assert yamlreading.cache_info().misses == 2 * cold.misses + 2
    finally:
        yamlreading.set_cache(enabled=True)
        yamlreading.clear_cache()


def test_the_one_shot_commands_turn_the_cache_off(tmp_path: Path) -> None:
    try:
        yamlreading.set_cache(enabled=True)
        load_all("a: 1\n", source="kept.yaml")
        code = writeback.cli.main(["diff", "--repo", str(EXAMPLE / "gitops"), "--live", str(EXAMPLE / "live.yaml"),
                                   "--output", "json"])  # fmt: skip
        assert code in (0, 1)
        info = yamlreading.cache_info()
        assert (info.enabled, info.texts) == (False, 0)  # off, and what it held is forgotten
    finally:
        yamlreading.set_cache(enabled=True)
        yamlreading.clear_cache()


def test_plan_parses_each_file_once_and_a_second_cycle_parses_nothing(cache_on: None) -> None:
    spec, repo = TargetSpec(name="hotfix"), EXAMPLE / "gitops"
    edges = Edges(live_path=EXAMPLE / "live.yaml")
    first = plan_target(spec=spec, repo=repo, edges=edges)
    assert first.plan.changesets and first.plan.changesets[0].files
    cold = yamlreading.cache_info()
    held = yamlreading.cached()
    assert cold.misses == len(held) >= 3  # the manifests and the live dump, each parsed once ...
    assert cold.hits >= len(held) - 1  # ... and plan's locating read the manifests from the cache
    second = plan_target(spec=spec, repo=repo, edges=edges)
    warm = yamlreading.cache_info()
    assert warm.misses == cold.misses  # the next cycle (same commit, same files) parses nothing
    assert [cs.files for cs in second.plan.changesets] == [cs.files for cs in first.plan.changesets]
    # nobody modified the shared data: every cached document still equals a fresh parse of its text
    # (the cache keeps digests, not texts: the texts are the files and the patched files of the change sets)
    texts: dict[str, list[str]] = {str(p.relative_to(repo)): [p.read_text()] for p in repo.rglob("*.yaml")}
    texts[str(EXAMPLE / "live.yaml")] = [(EXAMPLE / "live.yaml").read_text()]
    for f in (f for cs in first.plan.changesets for f in cs.files):
        texts.setdefault(f.path, []).append(f.after or "")
    kept = [(source, copy.deepcopy(docs)) for source, docs in held]
    yamlreading.clear_cache()
    for source, docs in kept:
        assert any(list(docs) == load_all(text, source=source) for text in texts[source]), source


def test_keys_and_short_texts_are_one_object_across_documents_and_long_texts_are_left_as_read() -> None:
    long = "x" * 200
    first = load_all(f"metadata:\n  name: web\n  note: {long}\nkind: Service\n", source="a.yaml")[0]
    second = load_all(f"kind: Service\nmetadata:\n  note: {long}\n  name: web\n", source="b.yaml")[0]
    assert first == second
    (k1,), (k2,) = [k for k in first if k == "metadata"], [k for k in second if k == "metadata"]
    assert k1 is k2  # a repo's repeated keys are held once
    assert first["kind"] is second["kind"] and first["metadata"]["name"] is second["metadata"]["name"]
    assert first["metadata"]["note"] is not second["metadata"]["note"]  # not hashed into the shared table


def test_a_scope_keeps_documents_packed_and_gives_each_reader_its_own_copy() -> None:
    # issue 23: a one-shot plan keeps the repository's parsed documents as marshal bytes, not as objects, so Git's
    # bodies can be packed too; a text whose data marshal cannot hold (a mapping as a key) is kept as it is
    text = "a: &x {b: [1, 2.5, true, null]}\nc: *x\n---\nd: 'two'\n"
    complex_key = "? [1, 2]\n: pair\n"
    try:
        yamlreading.clear_cache()
        yamlreading.set_cache(enabled=False)
        assert not yamlreading.keeps_documents()
        with yamlreading.parse_scope():
            assert not yamlreading.keeps_documents()  # readers get copies: nothing shares what they hold
            first, again = load_all(text, source="x.yaml"), load_all(text, source="x.yaml")
            odd, odd_again = load_all(complex_key, source="k.yaml"), load_all(complex_key, source="k.yaml")
            info = yamlreading.cache_info()
        assert (info.misses, info.hits) == (2, 2)  # each text parsed once
        assert first == again == [{"a": {"b": [1, 2.5, True, None]}, "c": {"b": [1, 2.5, True, None]}}, {"d": "two"}]
        assert first[0] is not again[0] and type(first[0]["a"]["b"][2]) is bool
        assert odd == odd_again and len(odd) == 1
        yamlreading.set_cache(enabled=True)
        assert yamlreading.keeps_documents()  # the cache across runs shares its objects: a scope keeps them as they are
        with yamlreading.parse_scope():
            shared, shared_again = load_all(text, source="y.yaml"), load_all(text, source="y.yaml")
        assert shared[0] is shared_again[0]
    finally:
        yamlreading.set_cache(enabled=True)
        yamlreading.clear_cache()


def test_a_summary_scope_keeps_only_each_texts_summary_with_the_cache_off() -> None:
    # issue 23: a one-shot plan keeps the names each file declares, not the file's documents
    text, other = "a: 1\n---\nb: [x]\n", "c: 2\n"

    def count(docs: tuple[Any, ...]) -> object:
        return len(docs)

    def misses() -> int:
        return yamlreading.cache_info().misses

    try:
        yamlreading.clear_cache()
        yamlreading.set_cache(enabled=False)
        with yamlreading.parse_scope(summary=count):
            assert yamlreading.scoped_summary(text, source="s.yaml") is None  # not read yet
            assert load_all(text, source="s.yaml") == [{"a": 1}, {"b": ["x"]}]
            assert yamlreading.scoped_summary(text, source="s.yaml") == 2
            assert yamlreading.scoped_summary(text, source="elsewhere.yaml") is None  # kept by text and source
            assert yamlreading.scoped_summary(text + "c: 3\n", source="s.yaml") is None  # another text
            assert load_all(text, source="s.yaml") == [{"a": 1}, {"b": ["x"]}]
            assert misses() == 2  # no documents kept: read again, parsed again
            with yamlreading.parse_scope():  # an inner scope without a summary keeps documents while it lasts
                load_all(other, source="t.yaml")
                load_all(other, source="t.yaml")
                assert misses() == 3
            assert yamlreading.scoped_summary(other, source="t.yaml") == 1
            load_all(other, source="t.yaml")
            assert misses() == 4  # ... and lets them go when it ends
            with pytest.raises(YamlError):
                load_all("a: [\n", source="bad.yaml")
            assert yamlreading.scoped_summary("a: [\n", source="bad.yaml") is None  # nothing kept of a bad text
        assert yamlreading.scoped_summary(text, source="s.yaml") is None  # the scope is gone
        yamlreading.set_cache(enabled=True)
        yamlreading.clear_cache()
        with yamlreading.parse_scope(summary=count):  # the cache on (a service): documents kept as they are
            first, again = load_all(text, source="u.yaml"), load_all(text, source="u.yaml")
            assert first[0] is again[0] and misses() == 1
            assert yamlreading.scoped_summary(text, source="u.yaml") == 2  # the summary of the kept documents
    finally:
        yamlreading.set_cache(enabled=True)
        yamlreading.clear_cache()
