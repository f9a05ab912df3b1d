"""Regression tests of issue 22 §4: block scalars whose last line holds only spaces or ends in a space, at the end of
a file (with and without a final newline), and what a batch writes next to them.

Each test checks the bytes outside the edit exactly (``outside_bytes`` on the scalar's reported span) or the whole
output text.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml as pyyaml

from tests.yamledit.support import outside_bytes, same_line_endings, spans_of
from tests.yamledit.test_editing import apply, edit
from writeback.yaml.edit import Edit, EditRefused, ScalarInfo, apply_edits, iter_scalars, load_documents


def _data(text: str) -> Any:
    """The first document's data, as loaded."""
    return load_documents(text, source="f.yaml")[0].data


def _block(text: str) -> ScalarInfo:
    return next(s for s in iter_scalars(text, source="f.yaml") if s.style in ("|", ">"))


def _set(text: str, info: ScalarInfo, value: object) -> str:
    return apply_edits(text, [Edit(document=info.document, path=info.path, value=value)], source="f.yaml")


# ---------------------------------------------------------------- setting a block scalar at the end of a file


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\ncfg: |\n  x\n  y ",
        "a: 1\ncfg: |\n  y  ",
        "a:\n  b: 1\n  cfg: |\n    x\n    y ",
        "l:\n- a\n- |\n  x\n  y ",
        "l:\n- k: |\n    x\n    y ",
        "a: 1\r\ncfg: |\r\n  x\r\n  y ",
    ],
)
@pytest.mark.parametrize("value", ["z", "y -edited0", "two words"])
def test_a_literal_block_ending_a_file_in_a_trailing_space_set_to_one_line_changes_only_its_span(
    text: str, value: str
) -> None:
    info = _block(text)
    after = _set(text, info, value)
    assert outside_bytes(text, after, spans_of(text, [info])) == 0, after
    assert same_line_endings(text, after)
    head = text[: text.index("|")]
    assert after.startswith(head + "|-")  # the value has no final line break: strip chomping, still a block
    assert after.endswith(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # only lines of spaces: the block has no content line, and the spaces fix its indentation (3), so that
        # content written at 2 would read the line of 3 spaces as content
        ("a: 1\ncfg: |\n   ", "a: 1\ncfg: |-\n   z\n   "),
        ("a: 1\ncfg: |\n   \n", "a: 1\ncfg: |-\n   z\n   \n"),
        ("a: 1\ncfg: |\n   \nb: 2\n", "a: 1\ncfg: |-\n   z\n   \nb: 2\n"),
        # an indentation indicator counts from the list item's dash, not from the block's header
        ("l:\n- |2\n  \n", "l:\n- |2-\n  z\n  \n"),
        ("l:\n- |2\n     y \n", "l:\n- |2-\n  z\n"),
        ("--- |1\n   y ", "--- |1-\n z"),
        ("? k\n: |1\n   y\n", "? k\n: |1-\n z\n"),
    ],
)
def test_a_block_is_rewritten_at_the_indentation_its_scanner_reads(text: str, expected: str) -> None:
    info = _block(text)
    after = _set(text, info, "z")
    assert after == expected
    assert outside_bytes(text, after, spans_of(text, [info])) == 0


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        # the |+ block would take every blank line after it: with fewer line breaks than those, no literal block
        ("a: 1\ncfg: |\n  x\n  \n  \n", "a\nb\n\n", 'a: 1\ncfg: "a\\nb\\n\\n"\n  \n  \n'),
        ("a: 1\ncfg: |\n  x\n\n\nb: 1\n", "a\nb\n\n", 'a: 1\ncfg: "a\\nb\\n\\n"\n\n\nb: 1\n'),
        # as many: they stay and are the value's (was already so)
        ("a: 1\ncfg: |\n  x\n  \nb: 1\n", "a\nb\n\n", "a: 1\ncfg: |+\n  a\n  b\n  \nb: 1\n"),
    ],
)
def test_a_block_that_becomes_keep_never_rewrites_the_blank_lines_after_its_span(
    text: str, value: str, expected: str
) -> None:
    info = _block(text)
    after = _set(text, info, value)
    assert after == expected
    assert outside_bytes(text, after, spans_of(text, [info])) == 0
    assert _data(after) == {**_data(text), "cfg": value}


# ---------------------------------------------------------------- removing the last entry of a file


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # |- : no line break belongs to the value, so the one before the removed entry goes
        ("cfg: |-\n  x\n   \nb: 1", "cfg: |-\n  x\n   "),  # the line of 3 spaces is content ("x\n ")
        ("cfg: |-\n  x\n  \nb: 1", "cfg: |-\n  x\n  "),
        ("cfg: |-\n  x\nb: 1", "cfg: |-\n  x"),
        ("cfg: >-\n  x\n   \nb: 1", "cfg: >-\n  x\n   "),
        ("a:\n  cfg: |-\n    x\n     \n  b: 1", "a:\n  cfg: |-\n    x\n     "),
        ("l:\n- |-\n  x\n   \n- b", "l:\n- |-\n  x\n   "),
        # | : the line break after the content is the value's; a line of spaces after it can end the file
        ("cfg: |\n  x\n  \nb: 1", "cfg: |\n  x\n  "),
        ("cfg: |\n  x\n  y \n \nb: 1", "cfg: |\n  x\n  y \n "),
        # CRLF
        ("cfg: |-\r\n  x\r\n   \r\nb: 1", "cfg: |-\r\n  x\r\n   "),
    ],
)
def test_removing_the_last_entry_after_a_block_keeps_the_missing_final_newline_missing(
    text: str, expected: str
) -> None:
    path = "l[1]" if text.startswith("l:") else ("a.b" if text.startswith("a:") else "b")
    after = apply(text, edit(path))
    assert after == expected
    assert same_line_endings(text, after)
    assert pyyaml.safe_load(after) == _data(after)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the line breaks after the content are the value's: the file gains its final newline (docs/yamledit.md)
        ("cfg: |\n  x\nb: 1", "cfg: |\n  x\n"),
        ("cfg: |\n  x\n\nb: 1", "cfg: |\n  x\n\n"),  # an empty line cannot end the file: nothing else goes
        ("cfg: |+\n  x\n  \nb: 1", "cfg: |+\n  x\n  \n"),
        ("cfg: >+\n  x\n\nb: 1", "cfg: >+\n  x\n\n"),
    ],
)
def test_removing_the_last_entry_keeps_the_line_breaks_a_block_holds(text: str, expected: str) -> None:
    before = _data(text)
    assert isinstance(before, dict)
    after = apply(text, edit("b"))
    assert after == expected
    assert _data(after) == {"cfg": before["cfg"]}


# ---------------------------------------------------------------- a batch: set to a value with a |+ block, then remove


@pytest.mark.parametrize("value", [["x\ny\n\n"], "x\ny\n\n", {"k": "x\ny\n\n"}, ["x\ny\n\n", 1]])
def test_setting_then_removing_an_entry_in_one_batch_keeps_the_blank_line_after_it(value: object) -> None:
    # found by the long fuzz run: the |+ block written by the first edit took the blank line after the entry as its
    # own, and the removal then deleted it
    text = "a: 1\nb: 2\n\nc: 3\n"
    assert apply(text, edit("b", value), edit("b")) == "a: 1\n\nc: 3\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a literal block would read the lines after it as content: a comment deeper than its indentation, a
        # line of spaces deeper than it, the trailing spaces or comment of the replaced value's line
        ("a: 1\nb: 2\n    # c\nc: 3\n", "a: 1\n    # c\nc: 3\n"),
        ("a: 1\nb: 2\n      \nc: 3\n", "a: 1\n      \nc: 3\n"),
        ("a: 1\nb:\n  k: 2\n    # n\nc: 3\n", "a: 1\n    # n\nc: 3\n"),
    ],
)
def test_a_literal_block_never_takes_the_lines_after_it_in_a_batch(text: str, expected: str) -> None:
    for value in ("x\ny\n", ["x\ny\n"]):
        assert apply(text, edit("b", value), edit("b")) == expected
        alone = apply(text, edit("b", value))
        assert _data(alone) == {"a": 1, "b": value, "c": 3}
        assert alone.endswith(expected.split("a: 1\n", 1)[1])  # the lines after b are kept as they were


# ---------------------------------------------------------------- found by the long fuzz run with the new generator


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the removed block's own line of spaces ends the file: the block before (indentation 2) would read it
        # as content, so it goes with the entry, and then the line break before the entry
        ("a: >2\n  :\n  \nend:\n  - >2-\n    w\n\n    y \n    ", "a: >2\n  :\n  "),
        # a |+ block before would take the line of spaces as one more line break of its value
        (
            "a:\n  - >2+\n    w\n\n    x\n\nend: >2-\n  w\n\n  y \n  \n",
            "a:\n  - >2+\n    w\n\n    x\n\n",
        ),
        ("a: |+\n  x\nb: 1\n\n", "a: |+\n  x\n"),
        # nothing to take: the lines after the entry stay
        ("a: |\n  x\nb: 1\n\nc: 2\n", "a: |\n  x\n\nc: 2\n"),
        ("a: |+\n  x\nb: 1\n# c\nc: 2\n", "a: |+\n  x\n# c\nc: 2\n"),
    ],
)
def test_removing_the_entry_after_a_block_never_gives_it_the_lines_after_the_entry(text: str, expected: str) -> None:
    path = "end" if "end:" in text else "b"
    before = _data(text)
    assert isinstance(before, dict)
    after = apply(text, edit(path))
    assert after == expected
    assert _data(after) == {k: v for k, v in before.items() if k != path}


@pytest.mark.parametrize(
    "text",
    [
        "a: |+\n  x\nb: 1\n\n# c\nc: 2\n",  # a blank line between entries: the |+ block would take it
        "a: |\n  x\nb: 1\n      \nc: 2\n",  # a line of spaces deeper than the block
        "a: |\n  x\nb: 1\n    # deep\nc: 2\n",  # a comment deeper than the block
    ],
)
def test_removing_an_entry_whose_following_lines_the_block_before_would_take_is_refused(text: str) -> None:
    with pytest.raises(EditRefused, match=r"f\.yaml: cannot edit b: the block scalar before it would take the lines"):
        apply(text, edit("b"))


def test_a_batch_whose_literal_block_would_make_a_removal_refused_writes_it_quoted() -> None:
    text = "a: 1\nb: 2\n\nc: 3\n"
    assert apply(text, edit("a", "x\ny\n\n"), edit("b")) == 'a: "x\\ny\\n\\n"\n\nc: 3\n'
    assert apply(text, edit("a", "x\ny\n"), edit("b")) == "a: |\n  x\n  y\n\nc: 3\n"


def test_a_last_line_of_spaces_without_a_line_break_is_no_line_break_of_a_keep_block() -> None:
    # found by the long fuzz run: a key added after a |+ block and removed again in one batch took the file's
    # last line (one space, no line break after it) with it, as if the block would have read it as a line break
    text = "a: []\nend: >2+\n  w\n\n  y \n "
    added = apply(text, edit("n1", None))
    assert added == "a: []\nend: >2+\n  w\n\n  y \nn1: null\n "
    assert apply(added, edit("n1")) == text
    assert apply(text, edit("n1", None), edit("a", 0), edit("n1")) == text.replace("a: []", "a: 0")
    assert _data(text) == {"a": [], "end": "w\ny \n"}
