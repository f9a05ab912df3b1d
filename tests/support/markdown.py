"""A pull request body as GitHub renders it: cmark-gfm (GitHub's own Markdown library, PyPI ``cmarkgfm``), then the
checks a reviewer's screen needs. ``problems(body)`` lists what is wrong:

- a table that is not well formed: a row with more or fewer cells than its header (GFM drops the extra cells and
  pads the missing ones silently), or a row the renderer did not keep;
- raw HTML beyond the few tags writeback's templates use (``<img>``, ``<script>``, an ``on...`` attribute, a
  ``javascript:`` link): such a tag can only come from a value that was not escaped;
- an ``@mention`` outside code: GitHub and GitLab would notify that user or team (``@all``) from a live value.

The fake forges run it on every pull/merge request body and comment the bot sends (``tests/fakes/forge_server``),
so every PR body the tests produce is checked; ``tests/forges/test_markdown.py`` checks the checker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options

# The tags writeback's templates write, and the ones cmark-gfm makes of Markdown (task lists: input).
ALLOWED = frozenset({
    "h1", "h2", "h3", "h4", "p", "table", "thead", "tbody", "tr", "th", "td", "code", "pre", "br", "wbr", "details",
    "summary", "ul", "ol", "li", "input", "strong", "em", "blockquote", "a", "hr", "del",
})  # fmt: skip
_NOT_MENTIONED_IN = frozenset({"code", "pre", "a"})  # where the forges do not look for mentions
_MENTION = re.compile(r"(?<![\w@/.`])@[A-Za-z0-9][A-Za-z0-9_-]*")
_DELIMITER = re.compile(r"^\|(?: *:?-+:? *\|)+ *$")


def render(markdown: str) -> str:
    """The HTML GitHub's Markdown library makes of ``markdown`` (raw HTML kept, as GitHub keeps it before its
    sanitizer: what the sanitizer would have to remove is what the checks look for)."""
    return str(cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE))


def cells(row: str) -> int:
    """How many cells a GFM table row has: its unescaped pipes, the outer ones not counted."""
    text = row.strip()
    pipes = len(re.findall(r"(?<!\\)\|", text))
    return pipes - (text.startswith("|")) - (text.endswith("|") and not text.endswith("\\|")) + 1


@dataclass
class _Walk(HTMLParser):
    tags: list[tuple[str, list[tuple[str, str | None]]]] = field(default_factory=list)
    mentions: list[str] = field(default_factory=list)
    rows: list[list[int]] = field(default_factory=list)  # per table: cells per row
    _stack: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        if tag == "table":
            self.rows.append([])
        elif tag == "tr" and self.rows:
            self.rows[-1].append(0)
        elif tag in ("td", "th") and self.rows and self.rows[-1]:
            self.rows[-1][-1] += 1
        if tag not in ("br", "wbr", "input", "hr", "img"):
            self._stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self._stack:
            while self._stack and self._stack.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if not _NOT_MENTIONED_IN & set(self._stack):
            self.mentions += _MENTION.findall(data)


def problems(markdown: str) -> list[str]:
    """What is wrong with ``markdown`` as a pull request body (see the module docstring); [] when nothing is."""
    found: list[str] = []
    walk = _Walk()
    walk.feed(render(markdown))
    walk.close()
    for tag, attrs in walk.tags:
        if tag not in ALLOWED:
            found.append(f"raw HTML <{tag}> in the rendered body")
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                found.append(f"raw HTML: <{tag} {name}={value!r}>")
        if tag == "input" and dict(attrs).get("type") != "checkbox":
            found.append(f"raw HTML <input {attrs}> that is no task list checkbox")
    found += [f"an @mention outside code: {m!r}" for m in walk.mentions]
    found += _tables(markdown, walk.rows)
    return found


def _tables(markdown: str, rendered: list[list[int]]) -> list[str]:
    """Every table of the source: each row has its header's cells, and the rendered table has every row."""
    lines = markdown.splitlines()
    found: list[str] = []
    tables: list[list[int]] = []
    i = 0
    while i + 1 < len(lines):
        if lines[i].lstrip().startswith("|") and _DELIMITER.match(lines[i + 1].strip()):
            header = cells(lines[i])
            if cells(lines[i + 1]) != header:
                found.append(f"line {i + 2}: the delimiter row has {cells(lines[i + 1])} cells, the header {header}")
            rows = [header]
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                if cells(lines[j]) != header:
                    found.append(f"line {j + 1}: {cells(lines[j])} cells in a table of {header}: {lines[j][:80]!r}")
                rows.append(cells(lines[j]))
                j += 1
            tables.append(rows)
            i = j
        else:
            i += 1
    if len(tables) != len(rendered):
        found.append(f"{len(tables)} tables in the source, {len(rendered)} rendered")
    for n, (source, html) in enumerate(zip(tables, rendered, strict=False)):
        if len(source) != len(html):
            found.append(f"table {n + 1}: {len(source)} rows in the source, {len(html)} rendered")
        elif any(count != source[0] for count in html):
            found.append(f"table {n + 1}: rendered rows of {sorted(set(html))} cells, the header has {source[0]}")
    return found
