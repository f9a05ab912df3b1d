"""The Helm engine's errors. The adapter raises them too; callers turn them into ``unresolved`` with the reason."""

from __future__ import annotations

from writeback.errors import InputError, WritebackError


class HelmError(WritebackError):
    """Base of the Helm engine's errors."""


class ChartUnavailable(HelmError):
    """The chart cannot be had (not in the repo, not in the chart cache, no artifact, refused): the message says
    which chart and why."""


class RenderFailed(HelmError):
    """``helm template`` (or a post-renderer) failed; the message is its error, paths inside the repo relative."""


class ReleaseError(InputError):
    """An Application or HelmRelease that does not describe a Helm release writeback can render."""
