"""The Helm engine's own error; the renderer's (``ChartUnavailable``, ``RenderFailed``) are in ``writeback.charts``.
Callers turn them into ``unresolved`` with the reason."""

from __future__ import annotations

from writeback.charts import ChartUnavailable, HelmError, RenderFailed
from writeback.errors import InputError

__all__ = ["ChartUnavailable", "HelmError", "ReleaseError", "RenderFailed"]


class ReleaseError(InputError):
    """An Application or HelmRelease that does not describe a Helm release writeback can render."""
