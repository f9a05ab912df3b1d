"""Render values as YAML text that reads back the same in YAML 1.2 and YAML 1.1.

A plain string is written plain only when ruamel (1.2 and 1.1) and PyYAML (1.1, plus
``y``/``n``) all resolve it as a string; otherwise it is double-quoted.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

from ruamel.yaml.error import YAMLError

from writeback.yaml.edit.spans import CLEAR, Tail
from writeback.yaml.edit.trees import compose11, construct, same
from writeback.yaml.loaders import plain_str_everywhere, ruamel_yaml

_NONPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff\ufffe\uffff]")
_FLOW_INDICATORS = ",[]{}"
_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\0": "\\0",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    "\x85": "\\N",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


def reads_as_str(text: str) -> bool:
    """Do YAML 1.2 and YAML 1.1 readers all resolve this plain scalar as a string?"""
    return plain_str_everywhere(text)


def plain_ok(text: str, *, flow: bool) -> bool:
    """Can ``text`` be written as a plain scalar (in block or flow context) and read back as this string?"""
    if not text or "\t" in text or text != text.strip(" ") or _NONPRINTABLE.search(text) or "\n" in text:
        return False
    first = text[0]
    if first in "!&*[]{}|>'\"%@`#,":
        return False
    if first in "-?:" and (len(text) == 1 or text[1] in " \t" or text[1] in _FLOW_INDICATORS):
        return False
    if ": " in text or ":\t" in text or " #" in text or "\t#" in text or text.endswith(":"):
        return False
    if text.startswith(("---", "...")):
        return False
    if flow and any(c in text for c in _FLOW_INDICATORS + ":?"):
        return False
    return reads_as_str(text)


def double_quoted(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif _NONPRINTABLE.match(ch):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def single_quoted(text: str) -> str | None:
    if "\n" in text or "\r" in text or "\t" in text or _NONPRINTABLE.search(text):
        return None
    return "'" + text.replace("'", "''") + "'"


def single_quoted_lines(text: str) -> list[str] | None:
    """A multi-line string as a single-quoted scalar over several lines, or None when it cannot be one.

    Each line break of the value is an empty source line (line folding); the continuation lines are
    returned without their indentation. Spaces next to a line break would be trimmed: no such value.
    """
    if "\r" in text or "\t" in text or _NONPRINTABLE.search(text):
        return None
    parts = text.split("\n")
    if any(p != p.rstrip(" ") for p in parts[:-1]) or any(p != p.lstrip(" ") for p in parts[1:]):
        return None
    out = ["'" + parts[0].replace("'", "''")]
    for i, part in enumerate(parts[1:], 1):
        out.append("")  # the line break of the value
        if part or i == len(parts) - 1:
            out.append(part.replace("'", "''"))
    out[-1] += "'"
    return out


def literal(value: Any) -> str:
    """A YAML literal for a non-string scalar."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        if "e" in text:
            mantissa, _, exp = text.partition("e")
            if "." not in mantissa:
                mantissa += ".0"
            if exp[0] not in "+-":
                exp = "+" + exp
            return f"{mantissa}e{exp}"
        return text
    raise TypeError(f"not a YAML scalar: {type(value).__name__}")


def inline(value: Any, *, style: str | None = None, flow: bool = False) -> str:
    """A value on one line: scalars keep ``style`` when they can; collections in flow style."""
    if isinstance(value, dict):
        inner = ", ".join(f"{key_text(k, flow=True)}: {inline(v, flow=True)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ", ".join(inline(v, flow=True) for v in value) + "]"
    if not isinstance(value, str):
        return literal(value)
    if style == "'":
        return single_quoted(value) or double_quoted(value)
    if style == '"':
        return double_quoted(value)
    return value if plain_ok(value, flow=flow) else double_quoted(value)


def key_text(key: Any, *, flow: bool = False) -> str:
    if not isinstance(key, str):
        return literal(key)
    return key if plain_ok(key, flow=flow) else double_quoted(key)


def is_collection(value: Any) -> bool:
    return isinstance(value, dict | list) and bool(value)


def literal_lines(value: Any, *, indent: int, tail: Tail = CLEAR) -> list[str] | None:
    """A multi-line string as a literal block: the header (``|``, ``|-``, ``|+``), then content lines.

    None when it cannot be one, or when the block would take some of the ``tail`` that follows it as its own.
    """
    if not isinstance(value, str) or "\n" not in value.rstrip("\n"):
        return None
    built = block_scalar(value, indicator="|", indent_digit="", indent=indent, nl="\n")
    if built is None or not tail.lets_block_end(indent, keep=built[0].endswith("+")):
        return None
    return [built[0], *built[1].split("\n")]


def block_lines(
    value: Any, *, indent: int, step: int, seq_offset: int, literal: bool = True, tail: Tail = CLEAR
) -> list[str]:
    """Lines (without line breaks) of a non-empty mapping or sequence in block style at ``indent``.

    Multi-line strings become literal blocks when ``literal`` (else double-quoted lines). ``tail`` is what follows
    the last line: only the last value can reach it (the lines of its siblings come between the others and it).
    """
    pad = " " * indent
    lines: list[str] = []
    entries = list(value.items()) if isinstance(value, dict) else [(None, item) for item in value]
    for i, (k, v) in enumerate(entries):
        after = tail if i == len(entries) - 1 else CLEAR
        head = pad + key_text(k) + ":" if isinstance(value, dict) else pad + "-"
        inner = indent + 2  # an item's content
        if isinstance(value, dict):
            inner = indent + (seq_offset if isinstance(v, list) else step)
        lit = literal_lines(v, indent=inner, tail=after) if literal else None
        if is_collection(v):
            sub = block_lines(v, indent=inner, step=step, seq_offset=seq_offset, literal=literal, tail=after)
            if isinstance(value, dict):
                lines.append(head)
            else:
                sub[0] = pad + "- " + sub[0][inner:]
            lines.extend(sub)
        elif lit is not None:
            lines.append(f"{head} {lit[0]}")
            lines.extend(lit[1:])
        else:
            lines.append(f"{head} {inline(v)}")
    return lines


# ---------------------------------------------------------------- block scalars


def _fold(lines: list[str]) -> list[str]:
    """Source lines of a folded scalar whose value is ``"\\n".join(lines)``."""
    out = [lines[0]]
    prev_text: str | None = lines[0] if lines[0] else None
    empties = 0
    for line in lines[1:]:
        if not line:
            empties += 1
            continue
        normal = prev_text is not None and prev_text[0] not in " \t" and line[0] not in " \t"
        out.extend([""] * (empties + 1 if normal else empties))
        out.append(line)
        prev_text, empties = line, 0
    out.extend([""] * empties)
    return out


def _reads_back(header: str, lines: list[str], value: str) -> bool:
    snippet = "k: " + header + "\n" + "\n".join(lines) + "\n"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with ruamel_yaml(typ="safe", pure=True) as loader:
                got = loader.load(snippet)
    except (YAMLError, ValueError):
        return False
    trees = compose11(snippet)
    if not trees or not isinstance(got, dict):
        return False
    return same(got.get("k"), value) and same(construct(trees[0], v11=True).get("k"), value)


def block_scalar(value: str, *, indicator: str, indent_digit: str, indent: int, nl: str) -> tuple[str, str] | None:
    """``(header indicators, content)`` of a block scalar for ``value``, or None when it cannot be one.

    The content is indented by ``indent`` and has no final line break (the text after the
    edited span supplies it). ``indicator`` is ``|`` or ``>``; ``indent_digit`` is kept.
    """
    if "\r" in value or _NONPRINTABLE.search(value.replace("\t", "")):
        return None
    body = value.rstrip("\n")
    trailing = len(value) - len(body)
    if not body.strip(" \t\n"):
        return None
    lines = body.split("\n")
    if any(line and not line.strip(" \t") for line in lines):
        return None  # whitespace-only lines are ambiguous
    first = next(line for line in lines if line)
    if first[0] == " " and not indent_digit:
        return None
    chomp = "-" if trailing == 0 else ("" if trailing == 1 else "+")
    src = _fold(lines) if indicator == ">" else lines
    src = src + [""] * max(trailing - 1, 0)
    header = indicator + indent_digit + chomp
    snippet_indent = int(indent_digit) if indent_digit else 2
    if not _reads_back(header, [(" " * snippet_indent + s) if s else "" for s in src], value):
        return None
    return header, nl.join((" " * indent + s) if s else "" for s in src)
