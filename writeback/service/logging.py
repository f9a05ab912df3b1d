"""Structured logs: JSON lines when stderr is not a terminal, readable (rich) on a terminal.

A filter on the handler replaces every known secret value (the tokens the configuration references)
with ``[REDACTED]`` in the message, its arguments, the exception text and any extra field.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel

from writeback.settings import SecretRef

REDACTED = "[REDACTED]"
_MIN_SECRET = 4  # shorter values would redact ordinary words
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


def secret_refs(model: BaseModel) -> Iterator[SecretRef]:
    """Every SecretRef anywhere in a configuration model."""
    for name in type(model).model_fields:
        yield from _refs_in(getattr(model, name))


def _refs_in(value: Any) -> Iterator[SecretRef]:
    if isinstance(value, SecretRef):
        yield value
    elif isinstance(value, BaseModel):
        yield from secret_refs(value)
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _refs_in(item)


def secret_values(model: BaseModel, *, environ: dict[str, str] | None = None) -> set[str]:
    """The values the configuration's SecretRefs point at (missing ones are skipped here)."""
    env = dict(os.environ) if environ is None else environ
    out: set[str] = set()
    for ref in secret_refs(model):
        value: str | None = None
        if ref.env:
            value = env.get(ref.env)
        elif ref.file:
            try:
                value = Path(ref.file).read_text(encoding="utf-8")
            except OSError:
                value = None
        if value:
            out.update(v for v in (value, value.strip()) if len(v) >= _MIN_SECRET)
            out.update(line.strip() for line in value.splitlines() if len(line.strip()) >= 16)  # PEM lines
    return out


class RedactingFilter(logging.Filter):
    """Replaces known secret values in every record that passes through."""

    def __init__(self, secrets: Iterable[str] = (), *, inline_tracebacks: bool = False) -> None:
        super().__init__()
        self._secrets: list[str] = []
        self._inline = inline_tracebacks  # for handlers that ignore exc_text (rich): append it to the message
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        values = set(self._secrets) | {s for s in secrets if len(s) >= _MIN_SECRET}
        self._secrets = sorted(values, key=len, reverse=True)  # longest first: no partial leftovers

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        record.msg = self.redact(record.getMessage())
        record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = self.redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
            if self._inline:
                record.msg, record.exc_text = f"{record.msg}\n{record.exc_text}", None
        for key, value in list(vars(record).items()):
            if key not in _STANDARD and isinstance(value, str):
                setattr(record, key, self.redact(value))
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, the extra fields, and exc."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                doc[key] = value if isinstance(value, str | int | float | bool | type(None)) else str(value)
        if record.exc_info and record.exc_info[1] is not None:
            doc["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            doc["exc"] = record.exc_text
        return json.dumps(doc, ensure_ascii=False)


def setup_logging(
    *, level: int = logging.INFO, secrets: Iterable[str] = (), stream: TextIO | None = None
) -> RedactingFilter:
    """Route the root logger to one handler on ``stream`` (stderr); returns its redacting filter."""
    out = stream if stream is not None else sys.stderr
    handler: logging.Handler
    if out.isatty():
        from rich.console import Console
        from rich.logging import RichHandler

        handler = RichHandler(console=Console(file=out), show_path=False, rich_tracebacks=False, markup=False)
    else:
        handler = logging.StreamHandler(out)
        handler.setFormatter(JsonFormatter())
    redactor = RedactingFilter(secrets, inline_tracebacks=not isinstance(handler, logging.StreamHandler))
    handler.addFilter(redactor)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("apscheduler", "urllib3", "kubernetes", "git"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
    return redactor
