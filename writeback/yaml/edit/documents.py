"""Reading a YAML file: its documents as plain data, and every scalar leaf with its position."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from writeback.kube.pathtypes import FieldPath, Index, Key
from writeback.yaml.edit.slots import key_name
from writeback.yaml.edit.spans import Text, has_tag, is_empty_null, kind, scalar_span
from writeback.yaml.edit.trees import MERGE_TAG, AliasRef, compose, construct, tag_of


@dataclass(frozen=True, kw_only=True)
class Document:
    """One YAML document of a file: its 0-based index, its data (YAML 1.2) and its character span."""

    index: int
    data: Any
    start: int
    end: int


@dataclass(frozen=True, kw_only=True)
class ScalarInfo:
    """A scalar leaf: its path, value, 0-based line/column where its text starts, and same-line comment."""

    document: int
    path: FieldPath
    value: Any
    line: int
    column: int
    comment: str | None
    end_line: int
    end_column: int
    style: str  # "plain", "'", '"', "|" or ">"
    flow: bool  # inside a flow collection ([a, b] or {a: b})
    editable: bool  # False under an &anchor or with an explicit !tag: apply_edits refuses such values


def load_documents(text: str, *, source: str) -> list[Document]:
    """All documents of ``text``; raises YamlSyntaxError naming ``source``, line and column."""
    return [
        Document(index=d.index, data=construct(d.root), start=d.start, end=d.end) for d in compose(text, source=source)
    ]


def _trailing_comment(t: Text, end: int) -> str | None:
    rest = t.text[end : t.line_end(end)]
    stripped = rest.lstrip(" \t")
    if stripped.startswith("#") and stripped != rest:
        return stripped[1:].strip()
    return None


def _scalars(
    t: Text, node: Any, path: FieldPath, document: int, flow: bool = False, anchored: bool = False
) -> Iterator[ScalarInfo]:
    if isinstance(node, AliasRef):
        return
    anchored = anchored or node.anchor is not None
    k = kind(node)
    if k != "scalar":
        flow = flow or bool(node.flow_style)
    if k == "mapping":
        for key_node, value_node in node.value:
            name = key_name(key_node)
            if name is None or tag_of(key_node) == MERGE_TAG:
                continue
            yield from _scalars(t, value_node, (*path, Key(name)), document, flow, anchored)
        return
    if k == "sequence":
        for i, item in enumerate(node.value):
            yield from _scalars(t, item, (*path, Index(i)), document, flow, anchored)
        return
    if is_empty_null(node):
        return
    start, end = scalar_span(t, node)
    comment_at = t.line_end(start) if node.style in ("|", ">") else end
    line, end_line = t.line_of(start), t.line_of(end)  # (end_line, end_column) is where the text ends
    yield ScalarInfo(
        document=document,
        path=path,
        value=construct(node),
        line=line,
        column=start - t.starts[line],
        comment=_trailing_comment(t, comment_at) if node.style not in ("|", ">") else _block_comment(t, start),
        end_line=end_line,
        end_column=end - t.starts[end_line],
        style=node.style or "plain",
        flow=flow,
        editable=not anchored and not has_tag(t, node),
    )


def _block_comment(t: Text, start: int) -> str | None:
    header = t.text[start : t.line_end(start)]
    _, sep, comment = header.partition("#")
    return comment.strip() if sep else None


def iter_scalars(text: str, *, source: str) -> Iterator[ScalarInfo]:
    """Every scalar leaf (not keys, aliases, merge keys or empty values), in document order."""
    t = Text(text)
    for doc in compose(text, source=source):
        yield from _scalars(t, doc.root, (), doc.index)
