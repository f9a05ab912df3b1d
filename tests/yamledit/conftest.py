"""Corpus totals: collected by the corpus tests, printed in the terminal summary."""

from __future__ import annotations

from collections import Counter

import pytest

CORPUS_STATS = pytest.StashKey[Counter[str]]()
_STYLES = (
    ("plain", "plain"),
    ("'", "single-quoted"),
    ('"', "double-quoted"),
    ("|", "literal"),
    (">", "folded"),
    ("flow", "flow items"),
)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[CORPUS_STATS] = Counter()


@pytest.fixture(scope="session")
def corpus_stats(request: pytest.FixtureRequest) -> Counter[str]:
    return request.config.stash[CORPUS_STATS]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    stats = config.stash.get(CORPUS_STATS, None)
    if not stats:
        return
    terminalreporter.section("yamledit corpus totals")
    styles = ", ".join(f"{name} {stats['style_' + key]}" for key, name in _STYLES)
    terminalreporter.write_line(
        f"files: {stats['files']}  no-op byte-identical: {stats['noop_identical']}  "
        f"scalar edits: {stats['scalar_edits']} ({styles})"
    )
    terminalreporter.write_line(
        f"structural edits: {stats['structural_edits']} (add key {stats['add_key']}, append item "
        f"{stats['append_item']}, remove key {stats['remove_key']})  refused (anchor/alias/merge): {stats['refused']}"
    )
    terminalreporter.write_line(f"bytes changed outside edits: {stats['bytes_outside']}")
