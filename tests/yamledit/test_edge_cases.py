"""Regression tests for the editor edge cases of issue 12 (real files whose edits were refused)."""

from __future__ import annotations

import pytest
import yaml as pyyaml

from tests.yamledit.test_editing import apply, edit
from writeback.yaml.edit import EditRefused, iter_scalars, load_documents


def _data(text: str) -> object:
    return load_documents(text, source="f.yaml")[0].data


def test_setting_a_block_scalar_replaces_the_trailing_space_of_its_last_line() -> None:
    assert apply("cfg: |\n  x\n  y \n", edit("cfg", "z\n")) == "cfg: |\n  z\n"
    assert apply("cfg: |\n  x\n  y \nother: 1\n", edit("cfg", "z\n")) == "cfg: |\n  z\nother: 1\n"
    assert apply("cfg: |-\n  x\n  y  \n", edit("cfg", "z")) == "cfg: |-\n  z\n"
    assert apply("cfg: >\n  x\n  y \n", edit("cfg", "z\n")) == "cfg: >\n  z\n"
    # a tab at the end of the last line is content too
    assert apply("cfg: |\n  x\t\n", edit("cfg", "z\n")) == "cfg: |\n  z\n"


def test_a_line_of_spaces_longer_than_the_indentation_is_replaced_with_the_block() -> None:
    assert apply("cfg: |\n  x\n    \nb: 1\n", edit("cfg", "z\n")) == "cfg: |\n  z\nb: 1\n"
    # a blank line no deeper than the indentation is not content, and stays
    assert apply("cfg: |\n  x\n  \nb: 1\n", edit("cfg", "z\n")) == "cfg: |\n  z\n  \nb: 1\n"


def test_the_reported_span_of_a_block_scalar_covers_its_trailing_spaces() -> None:
    text = "a: |\n  x\n  y \nb: |2\n    lead\n     \nc: 1\n"
    spans = {str(s.path[0]): (s.end_line, s.end_column) for s in iter_scalars(text, source="f.yaml")}
    assert spans["Key(name='a')"] == (2, 4)
    assert spans["Key(name='b')"] == (5, 5)  # "  " + 3 spaces: one more than the indentation of 4


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        # a key in the same mapping
        ("a:\n  cfg: |\n    x\n      \nb: 1\n", "a.new", "a:\n  cfg: |\n    x\n      \n  new: v\nb: 1\n"),
        # a key in an outer mapping, at the end of the file
        ("a:\n  cfg: |\n    x\n      \n", "new", "a:\n  cfg: |\n    x\n      \nnew: v\n"),
        # a list item
        ("l:\n- |\n  x\n    \n", "l[1]", "l:\n- |\n  x\n    \n- v\n"),
        ("l:\n  - k: |\n      x\n        \n", "l[1]", "l:\n  - k: |\n      x\n        \n  - v\n"),
    ],
)
def test_adding_after_a_block_scalar_ending_in_a_line_of_spaces_goes_after_that_line(
    text: str, path: str, expected: str
) -> None:
    after = apply(text, edit(path, "v"))
    assert after == expected
    assert pyyaml.safe_load(after) == _data(after)


def test_removing_a_key_that_overrides_a_merge_key_is_refused_naming_the_merge_key() -> None:
    text = "base: &base\n  a: 1\n  b: 2\nd:\n  <<: *base\n  a: 5\n  c: 3\n"
    with pytest.raises(EditRefused, match=r"f\.yaml: cannot edit d\.a: the key overrides the merge key `<<: \*base`"):
        apply(text, edit("d.a"))
    two = "x: &x {q: 1}\ny: &y {r: 2}\nd:\n  <<: [*x,\n    *y]\n  r: 3\n"
    with pytest.raises(EditRefused, match=r"merge key `<<: \[\*x, \*y\]`"):
        apply(two, edit("d.r"))
    # a key the merge key does not bring in can go; an override can still be changed
    assert apply(text, edit("d.c")) == text.replace("  c: 3\n", "")
    assert apply(text, edit("d.a", 6)) == text.replace("a: 5", "a: 6")


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("one\ntwo", "'one\n\n    two'"),
        ("it's\n\nthree\n", "'it''s\n\n\n    three\n\n    '"),
        ("\nlead", "'\n\n    lead'"),
    ],
)
def test_a_single_quoted_value_that_gets_several_lines_stays_single_quoted(value: str, written: str) -> None:
    text = "data:\n  q: 'y'  # note\n  z: 1\n"
    after = apply(text, edit("data.q", value))
    assert after == f"data:\n  q: {written}  # note\n  z: 1\n"
    assert pyyaml.safe_load(after)["data"]["q"] == value


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("q: 'y'\n", "one \ntwo", 'q: "one \\ntwo"\n'),  # the space before the line break would be folded away
        ("q: 'y'\n", "one\n two", 'q: "one\\n two"\n'),  # so would the space after it
        ("q: 'y'\n", "a\tb\nc", 'q: "a\\tb\\nc"\n'),
        ("q: ['y']\n", "one\ntwo", 'q: ["one\\ntwo"]\n'),  # a flow collection stays on its line
    ],
)
def test_single_quotes_that_cannot_hold_the_value_become_double_quotes(text: str, value: str, expected: str) -> None:
    path = "q[0]" if "[" in text else "q"
    assert apply(text, edit(path, value)) == expected


# ---------------------------------------------------------------- found by the fuzz tests (test_properties.py)


def test_block_scalar_spans_count_the_carriage_return_of_crlf_files() -> None:
    text = "a: 0\r\n---\r\na: |\r\n  a\r\n"
    assert apply(text, edit("a", "b\n", document=1)) == "a: 0\r\n---\r\na: |\r\n  b\r\n"
    assert apply("a: |\r\n  :\r\n", edit("b", "v")) == "a: |\r\n  :\r\nb: v\r\n"


def test_the_end_of_a_keep_block_scalar_is_the_start_of_its_last_blank_line() -> None:
    text = "a: 0\naa: |+\n  w\n  x\n  x\n\n"
    info = next(s for s in iter_scalars(text, source="f.yaml") if s.style == "|")
    assert (info.end_line, info.end_column) == (5, 0)  # past "  x\n": the blank line is the final line break
    assert apply(text, edit("aa", 0)) == "a: 0\naa: 0\n"


# ---------------------------------------------------------------- verification: libyaml first, ruamel when unsure


def test_a_file_libyaml_refuses_is_verified_by_ruamel() -> None:
    text = "a: &p 1\nb: *p\nc: &p 2\nd: *p\ne: x\n"  # an anchor defined twice: libyaml refuses the file
    after = apply(text, edit("e", "z"))
    assert after == text.replace("e: x", "e: z")
    assert _data(after) == {"a": 1, "b": 1, "c": 2, "d": 2, "e": "z"}


def test_a_yaml_11_directive_is_verified_with_its_own_rules() -> None:
    text = "%YAML 1.1\n---\na: yes\nb: x\n"
    after = apply(text, edit("b", "on"))
    assert after == '%YAML 1.1\n---\na: yes\nb: "on"\n'
    assert _data(after) == {"a": True, "b": "on"}


def test_a_block_that_gets_kept_blank_lines_keeps_the_blank_lines_after_it() -> None:
    # found by the long fuzz run: the line of two spaces after the block was rewritten as an empty line
    text = "a: 0\n---\na: |\n  :\n  \n"
    assert apply(text, edit("a", "w\nx\n\n", document=1)) == "a: 0\n---\na: |+\n  w\n  x\n  \n"
    assert apply("a: |+\n  x\n\n\nb: 1\n", edit("a", "y\n\n\n\n")) == "a: |+\n  y\n\n\n\nb: 1\n"
    assert apply("a: |+\n  x\n\n\nb: 1\n", edit("a", "y\n")) == "a: |\n  y\n\n\nb: 1\n"
    assert apply("a: |+\n  x\n  y \n\nb: 1\n", edit("a", "z\n\n")) == "a: |+\n  z\n\nb: 1\n"


def test_removing_the_last_entry_after_a_keep_block_keeps_the_blank_lines_of_the_block() -> None:
    # found by the fuzz tests: the block's kept blank line was deleted with the entry (a file without final newline)
    text = "a: |+\n  w\n  x\n\ncadc: []"
    assert apply(text, edit("cadc")) == "a: |+\n  w\n  x\n\n"


@pytest.mark.parametrize(
    ("text", "inside"),
    [("a:\n  - a: 0\n", "a[0].n1"), ("a:\n  - - 0\n", "a[0][1]"), ("a:\n  - a: 0\nb: 1\n", "a[0].n1")],
    ids=["key-added-in-an-item", "item-appended-to-an-inner-list", "value-followed-by-a-key"],
)
def test_replacing_a_value_after_an_edit_inside_it_in_one_batch_gives_the_replacement(text: str, inside: str) -> None:
    # found by the long fuzz run: the addition went in after the new scalar (`a: 0\n    n1: 0`), which does not parse
    after = apply(text, edit(inside, 0), edit("a", 0))
    assert after == text.replace(text.split("b:")[0], "a: 0\n")
    assert pyyaml.safe_load(after)["a"] == 0
