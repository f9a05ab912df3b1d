"""Our error hierarchy and the exit codes. Third-party errors are re-raised as these (``raise X(...) from e``).

The CLI's one error boundary maps errors to messages and exit codes (``writeback.cli``); the one rule that maps
what a command found to an exit code is ``writeback.cli.exits``.
"""

from __future__ import annotations

import enum
from typing import Any


class ExitCode(enum.IntEnum):
    """Every command's exit codes."""

    OK = 0
    DRIFT = 1  # drift found (diff), files changed (plan), a PR opened or updated (run): only with --exit-code
    INPUT = 2  # a usage, config or input error; the message names the file, key or resource
    FAILED = 3  # at least one target failed at run time while the others ran
    INTERRUPTED = 130


class WritebackError(Exception):
    """Base class of every error writeback raises on purpose."""

    exit_code = ExitCode.FAILED


class InputError(WritebackError):
    """Bad user input: a file, key or resource that is wrong. Exit code 2."""

    exit_code = ExitCode.INPUT


class ConfigError(InputError):
    """Invalid configuration; the message names the key path."""


class PathSyntaxError(InputError):
    """A field path that does not follow the path grammar."""


class ClusterError(WritebackError):
    """The Kubernetes API failed or refused."""


class ClusterUnreachable(ClusterError):
    """No answer from the API server at all (connection refused, timeout, TLS): no use trying other kinds."""


class ClusterNotFound(ClusterError):
    """The object (or the kind) does not exist (HTTP 404)."""


class ClusterForbidden(ClusterError):
    """The API server denied the request (HTTP 403)."""


class ClusterConflict(ClusterError):
    """The write lost a race (HTTP 409, or 422 from a failed JSON-patch ``test``): read again, then decide."""


class KindNotServed(ClusterError):
    """Discovery says this cluster does not serve the apiVersion or kind (the CRD is not installed)."""


class AccessDenied(InputError):
    """An access review said no before writeback tried: the message names the verb, resource and namespace."""


class GitError(WritebackError):
    """A git operation failed."""


class ForgeError(WritebackError):
    """GitHub or GitLab failed or refused."""


class RateLimited(ForgeError):
    """The forge asked us to wait longer than the configured maximum."""


class PatchError(WritebackError):
    """A source file could not be edited safely."""


class YamlError(PatchError):
    """A YAML text that cannot be read: not valid YAML, or beyond the loading limits (size, depth, aliases).

    The message names the source and, for a syntax error, the line (also in ``line``, 1-based). ``limit`` is set
    when the text may be valid YAML but is beyond a loading limit (``problem`` then says which).
    """

    def __init__(
        self,
        message: str,
        *,
        source: str,
        line: int | None = None,
        column: int | None = None,
        problem: str = "",
        limit: bool = False,
    ) -> None:
        super().__init__(message)
        self.source = source
        self.line = line  # 1-based
        self.column = column  # 1-based
        self.problem = problem or message  # what is wrong, without the source and the position
        self.limit = limit


class ToolMissing(InputError):
    """A required external tool (kustomize, git) is not on PATH."""


def yaml_error_position(err: Exception, *, text: str | None = None) -> tuple[Any, str]:
    """Where a YAML parser's error is (its mark: 0-based ``line``/``column``) and what it is: the problem's mark, or,
    when the text just ended (an unclosed ``[`` or quote), the mark of what was left open, named.

    libyaml does not say that the text ended ("did not find expected ',' or ']'" at the end): with ``text``, a
    problem mark past its last non-blank character counts as the end too."""
    problem = getattr(err, "problem", None) or str(err).strip().splitlines()[0]
    mark, context = getattr(err, "problem_mark", None), getattr(err, "context_mark", None)
    ended = "<stream end>" in problem or "end of stream" in problem
    if text is not None and mark is not None and isinstance(getattr(mark, "index", None), int):
        ended = ended or mark.index >= len(text.rstrip())
    if context is not None and (mark is None or ended):
        what = getattr(err, "context", None)
        return context, f"{problem} ({what} that starts here)" if what else problem
    return mark or context, problem
