"""How every command prints: the requested output on stdout, what is said about it on stderr, colour on a terminal.

- stdout carries only what was asked for (the report, the plan, the JSON), so that ``writeback plan > pr.md`` and
  ``| jq`` stay clean. Notes, warnings and problems go to stderr, each said once (:func:`say`).
- Colour (``--color auto|always|never``, ``NO_COLOR``): ``auto`` colours a stream only when it is a terminal, and
  ``NO_COLOR`` (set and not empty, https://no-color.org) or ``TERM=dumb`` turn ``auto`` off. Off a terminal
  nothing changes, byte for byte. The escape sequences come from rich's ``Style``.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

__all__ = ["PLAIN", "ColorMode", "Palette", "Printer"]


class ColorMode(enum.StrEnum):
    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


def use_color(mode: ColorMode, stream: TextIO, environ: Mapping[str, str]) -> bool:
    if mode is ColorMode.ALWAYS:
        return True
    if mode is ColorMode.NEVER or environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


# What each thing looks like in colour: git diff's colours for patches, one colour per decision.
_STYLES: dict[str, str] = {
    "meta": "bold",  # diff --git, ---, +++ and section titles
    "hunk": "cyan",
    "add": "green",
    "remove": "red",
    "writeback": "green",
    "flag": "bold red",
    "unattributed": "magenta",
    "new": "yellow",
    "deleted": "yellow",
    "pending": "cyan",
    "ignore": "dim",
    "note": "cyan",
    "warning": "yellow",
    "error": "bold red",
    "created": "green",
    "updated": "green",
    "closed": "yellow",
    "failed": "bold red",
    "skipped": "yellow",
}


@dataclass(frozen=True, slots=True)
class Palette:
    """Paints text for one stream; a disabled palette returns the text unchanged."""

    enabled: bool = False

    def paint(self, text: str, what: str) -> str:
        style = _STYLES.get(what)
        if not self.enabled or not text or style is None:
            return text
        from rich.color import ColorSystem  # only when colouring: `writeback --version` does not import rich
        from rich.style import Style

        return Style.parse(style).render(text, color_system=ColorSystem.STANDARD)

    def diff_line(self, line: str, *, indent: str = "") -> str:
        """One line of a unified diff, coloured as ``git diff`` colours it (``indent`` is left plain)."""
        if line.startswith(("diff --git", "--- ", "+++ ", "new file mode", "deleted file mode")):
            return indent + self.paint(line, "meta")
        if line.startswith("@@"):
            return indent + self.paint(line, "hunk")
        if line.startswith("+"):
            return indent + self.paint(line, "add")
        if line.startswith("-"):
            return indent + self.paint(line, "remove")
        return indent + line

    def diff_text(self, text: str) -> str:
        """Every line of a unified diff text."""
        if not self.enabled:
            return text
        return "".join(self.diff_line(line.rstrip("\n")) + ("\n" if line.endswith("\n") else "")
                       for line in text.splitlines(keepends=True))  # fmt: skip


PLAIN = Palette()  # no colour


@dataclass(frozen=True, slots=True, kw_only=True)
class Printer:
    """A command's two streams and their palettes: ``out`` for the requested output, ``say`` for the rest."""

    out: TextIO
    err: TextIO
    color: Palette  # for ``out``
    err_color: Palette

    @classmethod
    def for_mode(
        cls, mode: ColorMode | str = ColorMode.AUTO, *, out: TextIO | None = None, err: TextIO | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Printer:  # fmt: skip
        out, err = out or sys.stdout, err or sys.stderr
        env = os.environ if environ is None else environ
        mode = ColorMode(mode)
        return cls(
            out=out, err=err, color=Palette(use_color(mode, out, env)), err_color=Palette(use_color(mode, err, env))
        )

    @classmethod
    def from_args(cls, args: object) -> Printer:
        """From the global ``--color`` option (``auto`` when a command was called without the parser)."""
        return cls.for_mode(getattr(args, "color", ColorMode.AUTO))

    def write(self, text: str) -> None:
        self.out.write(text)

    def say(self, kind: str, text: str) -> None:
        """A note, warning or error about the output, on stderr, once: ``writeback: warning: ...``."""
        label = self.err_color.paint(f"{kind}:", kind)
        print(f"writeback: {label} {text}", file=self.err)
