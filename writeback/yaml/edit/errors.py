"""Errors of the YAML editor; all are :class:`~writeback.errors.PatchError` (exit code 3)."""

from __future__ import annotations

from writeback.errors import PatchError


class YamlSyntaxError(PatchError):
    """The text is not valid YAML; the message reads ``SOURCE:LINE:COL: not valid YAML: problem`` (1-based), and
    ``problem``, ``line`` and ``column`` hold its parts (the position where known)."""

    def __init__(
        self, message: str, *, source: str = "", problem: str = "", line: int | None = None, column: int | None = None
    ) -> None:
        super().__init__(message)
        self.source = source
        self.problem = problem or message
        self.line = line
        self.column = column


class EditRefused(PatchError):
    """An edit cannot be made safely (anchor or alias, merge key, unsupported node, missing path)."""


class VerifyError(PatchError):
    """The edited text does not re-parse to the intended data (in YAML 1.2 or YAML 1.1)."""
