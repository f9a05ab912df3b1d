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


class ToolMissing(InputError):
    """A required external tool (kustomize, git) is not on PATH."""
