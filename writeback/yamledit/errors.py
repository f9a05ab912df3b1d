"""Errors of the YAML editor; all are :class:`~writeback.errors.PatchError` (exit code 3)."""

from __future__ import annotations

from writeback.errors import PatchError


class YamlSyntaxError(PatchError):
    """The text is not valid YAML; the message names the source, line and column (1-based)."""


class EditRefused(PatchError):
    """An edit cannot be made safely (anchor or alias, merge key, unsupported node, missing path)."""


class VerifyError(PatchError):
    """The edited text does not re-parse to the intended data (in YAML 1.2 or YAML 1.1)."""
