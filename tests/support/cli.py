"""The one in-process runner of the writeback CLI in tests: ``code, out, err = run_cli("diff", "--repo", ...)``.

It captures stdout and stderr itself, so it works in module-scoped fixtures (no ``capsys`` there) as in tests, and
the output of one call never leaks into the next. Tests of the installed entry point and of a terminal use
``tests.cli.process`` (a real child process) instead.
"""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import writeback.cli


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run ``writeback ARGS`` in this process: its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = writeback.cli.main(list(args))
    return code, out.getvalue(), err.getvalue()
