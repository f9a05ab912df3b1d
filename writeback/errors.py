"""Our error hierarchy. Third-party errors are re-raised as these (``raise X(...) from e``).

The CLI's one error boundary maps them to exit codes (see ``writeback.cli``).
"""

from __future__ import annotations


class WritebackError(Exception):
    """Base class of every error writeback raises on purpose."""

    exit_code = 3


class InputError(WritebackError):
    """Bad user input: a file, key or resource that is wrong. Exit code 2."""

    exit_code = 2


class ConfigError(InputError):
    """Invalid configuration; the message names the key path."""


class PathSyntaxError(InputError):
    """A field path that does not follow the path grammar."""


class ClusterError(WritebackError):
    """The Kubernetes API failed or refused."""


class ClusterUnreachable(ClusterError):
    """No answer from the API server at all (connection refused, timeout, TLS): no use trying other kinds."""


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

    The message names the source and, for a syntax error, the line (also in ``line``, 1-based).
    """

    def __init__(self, message: str, *, source: str, line: int | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.line = line


class ToolMissing(InputError):
    """A required external tool (kustomize, git) is not on PATH."""
