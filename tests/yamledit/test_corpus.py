"""Every file of tests/data/yaml-corpus: no-op, scalar edits of each style, and structural edits.

Totals are printed in the terminal summary (see conftest.py).
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.testdata import YAML_CORPUS
from tests.yamledit.support import line_diff, outside_bytes, same_line_endings, set_at, spans_of
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key
from writeback.yaml.edit import Edit, EditRefused, ScalarInfo, apply_edits, iter_scalars, load_documents

CORPUS = YAML_CORPUS
FILES = sorted(p for p in CORPUS.rglob("*") if p.is_file())
TRICKY = ["yes", "0755", "1e3", "null", "on", "1:20", "~", "*star", "- dash", "a: b", "#x", "y", "1_000", "true", "@at"]


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def _category(info: ScalarInfo) -> str:
    return "flow" if info.flow else info.style


def _new_value(info: ScalarInfo, n: int) -> Any:
    value = info.value
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.5
    if value is None:
        return f"edited-{n}"
    if "\n" in value:
        return f"edited line {n}\n{value}"
    if info.style == "plain" and n % 2 == 0:
        return TRICKY[n % len(TRICKY)]
    return f"{value}-edited{n}" if value else f"edited{n}"


def _pick_scalars(infos: list[ScalarInfo], per_style: int = 2) -> list[ScalarInfo]:
    """Up to ``per_style`` editable scalars of each style, on lines no other pick uses."""
    by_style: dict[str, list[ScalarInfo]] = {}
    for info in infos:
        if info.editable:
            by_style.setdefault(_category(info), []).append(info)
    picked: list[ScalarInfo] = []
    used: set[int] = set()
    for group in by_style.values():
        count = 0
        for info in group[:: max(1, len(group) // 4)] + group:
            lines = set(range(info.line - 1, info.end_line + 2))
            if count == per_style or lines & used:
                continue
            picked.append(info)
            used.update(lines)
            count += 1
    return picked


def test_corpus_is_there() -> None:
    assert len(FILES) == 167


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_corpus_file(path: Path, corpus_stats: Counter[str]) -> None:
    text = _read(path)
    name = path.name
    corpus_stats["files"] += 1
    assert apply_edits(text, [], source=name) == text
    corpus_stats["noop_identical"] += 1
    docs = [d.data for d in load_documents(text, source=name)]
    infos = list(iter_scalars(text, source=name))

    # (b) leaf values of each style, in one batch
    picks = _pick_scalars(infos)
    edits = [Edit(document=s.document, path=s.path, value=_new_value(s, n)) for n, s in enumerate(picks)]
    if edits:
        expected = copy.deepcopy(docs)
        for edit in edits:
            expected[edit.document] = set_at(expected[edit.document], edit.path, edit.value)
        after = apply_edits(text, edits, source=name)
        assert [d.data for d in load_documents(after, source=name)] == expected
        outside = outside_bytes(text, after, spans_of(text, picks))
        corpus_stats["bytes_outside"] += outside
        assert outside == 0, f"{name}: bytes changed outside the edited values"
        assert same_line_endings(text, after)
        corpus_stats["scalar_edits"] += len(edits)
        for s in picks:
            corpus_stats["style_" + _category(s)] += 1

    # anchors and aliases are refused
    for s in [s for s in infos if not s.editable][:1]:
        with pytest.raises(EditRefused):
            apply_edits(text, [Edit(document=s.document, path=s.path, value="changed")], source=name)
        corpus_stats["refused"] += 1

    _structural(text, name, docs, infos, corpus_stats)


def _get(data: Any, path: FieldPath) -> Any:
    for seg in path:
        data = data[seg.name] if isinstance(seg, Key) else data[seg.index]  # type: ignore[union-attr]
    return data


def _own_comment_lines(lines: list[str], line: int) -> set[int]:
    indent = len(lines[line]) - len(lines[line].lstrip(" "))
    out = set()
    while line > 0 and lines[line - 1].lstrip(" ").startswith("#"):
        if len(lines[line - 1]) - len(lines[line - 1].lstrip(" ")) != indent:
            break
        line -= 1
        out.add(line)
    return out


def _structural(text: str, name: str, docs: list[Any], infos: list[ScalarInfo], stats: Counter[str]) -> None:
    lines = text.splitlines()
    block = [s for s in infos if s.editable and not s.flow and s.line == s.end_line]
    edits: list[Edit] = []
    expect_inserted: list[str] = []
    allowed_deleted: set[int] = set()
    must_delete: set[int] = set()
    used_parents: set[tuple[int, FieldPath]] = set()
    expected = copy.deepcopy(docs)

    add = next((s for s in block if s.path and isinstance(s.path[-1], Key)), None)
    if add is not None:
        parent = add.path[:-1]
        used_parents.add((add.document, parent))
        edits.append(Edit(document=add.document, path=(*parent, Key("wbAdded")), value="added"))
        expect_inserted.append("wbAdded: added")
        _get(expected[add.document], parent)["wbAdded"] = "added"
        stats["add_key"] += 1

    seq = next((s for s in block if s.path and isinstance(s.path[-1], Index)), None)
    if seq is not None:
        parent = seq.path[:-1]
        items = _get(expected[seq.document], parent)
        edits.append(Edit(document=seq.document, path=(*parent, Index(len(items))), value="wb-item"))
        expect_inserted.append("- wb-item")
        items.append("wb-item")
        stats["append_item"] += 1
    else:  # a list of mappings: append a one-key mapping
        item = next((s for s in block if len(s.path) > 1 and isinstance(s.path[-2], Index)), None)
        if item is not None:
            parent = item.path[:-2]
            items = _get(expected[item.document], parent)
            edits.append(Edit(document=item.document, path=(*parent, Index(len(items))), value={"wbName": "added"}))
            expect_inserted.append("- wbName: added")
            items.append({"wbName": "added"})
            stats["append_item"] += 1

    for s in block:
        key = s.path[-1] if s.path else None
        parent = s.path[:-1]
        if not isinstance(key, Key) or len(parent) == 0 or (s.document, parent) in used_parents:
            continue
        line = lines[s.line]
        siblings = _get(expected[s.document], parent)
        if not re.match(rf"^ *{re.escape(key.name)}:", line) or len(siblings) < 2 or key.name not in siblings:
            continue
        edits.append(Edit(document=s.document, path=s.path, value=ABSENT))
        del siblings[key.name]
        must_delete.add(s.line)
        allowed_deleted.update({s.line, *_own_comment_lines(lines, s.line)})
        stats["remove_key"] += 1
        break

    if not edits:
        return
    after = apply_edits(text, edits, source=name)
    assert [d.data for d in load_documents(after, source=name)] == expected
    deleted, inserted = line_diff(text, after)
    stripped = sorted(x.strip() for x in inserted)
    outside = sum(len(lines[i]) + 1 for i in deleted if i not in allowed_deleted)
    outside += sum(len(x) + 1 for x in inserted if x.strip() not in expect_inserted)
    stats["bytes_outside"] += outside
    stats["structural_edits"] += len(edits)
    assert outside == 0, f"{name}: structural edits changed other lines: {deleted} {inserted}"
    assert must_delete <= set(deleted)
    assert same_line_endings(text, after)
    assert stripped == sorted(expect_inserted)
