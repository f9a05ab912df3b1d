"""Configuration errors a person can act on: ``FILE:LINE:COL: key.path: problem``, one line per error.

- An unknown key names the closest known one: "unknown key `bsae`; did you mean `base`?".
- A value of the wrong type is shown (``(got "five")``), except anywhere under a secret reference or a URL.
- Built from flags (``run --repo-url ... --forge ...``), an error names the flag (``--forge-project``), not the key.
"""

from __future__ import annotations

import difflib
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

__all__ = ["KeyProblem", "Positions", "describe", "format_key_path", "key_problems", "yaml_positions"]

Loc = tuple[int | str, ...]
Positions = Callable[[Loc], tuple[int, int] | None]  # (line, column), 1-based, of the key or item at a path

# Errors whose message already says all there is (a validator's reason, a missing key): no value is shown.
_NO_VALUE = {"value_error", "assertion_error", "missing", "extra_forbidden", "literal_error", "enum"}
_SHOWN = 60  # characters of a bad value shown at most


def format_key_path(loc: Loc) -> str:
    """The key path in the path grammar: an unusual key is quoted (``token["x\\ny"]``), never spliced raw."""
    from writeback.kube.paths import format_path
    from writeback.kube.pathtypes import Index, Key

    return format_path([Index(p) if isinstance(p, int) else Key(str(p)) for p in loc])


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The model classes an annotation holds (``X``, ``X | None``, ``tuple[X, ...]``, ``Annotated[X, ...]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is None and not isinstance(annotation, types.UnionType):
        return []
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """Each field's key as the file spells it (its alias, if any) -> the field."""
    return {(f.alias or name): f for name, f in model.model_fields.items()}


def _model_path(root: type[BaseModel], loc: Loc) -> list[type[BaseModel]]:
    """The models a key path passes through, from the root (shorter when it leaves the models)."""
    path = [root]
    model: type[BaseModel] | None = root
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = _fields(model).get(str(part))
        found = _models_in(field.annotation) if field is not None else []
        model = found[0] if found else None
        if model is not None:
            path.append(model)
    return path


def _key_shown(key: str) -> str:
    """A key as the error shows it: JSON-quoted when it holds a character that is not printable (a line break of
    any kind would split the one-line error)."""
    return key if key.isprintable() else json.dumps(key)


def _unknown_key(root: type[BaseModel], loc: Loc) -> str:
    key, parent = _key_shown(str(loc[-1])), loc[:-1]
    models = _model_path(root, parent)
    known = sorted(_fields(models[-1])) if models else []
    best = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if best:
        return f"unknown key `{key}`; did you mean `{best[0]}`?"
    return f"unknown key `{key}` (known: {', '.join(known)})" if known else f"unknown key `{key}`"


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
        if not text.isprintable():  # a line break of any kind (NEL, U+2028) would split the one-line error
            text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyProblem:
    """One configuration error, where it is: the file (or the flag that set the key), its line and column (1-based)
    and the key path, where known; ``str()`` is the one line ``config validate`` prints."""

    file: str
    message: str
    line: int | None = None
    column: int | None = None
    key: str | None = None
    flag: str | None = None

    def __str__(self) -> str:
        if self.flag is not None:
            return f"{self.flag}: {self.message}"
        where = f"{self.file}:{self.line}:{self.column}" if self.line else self.file
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


def describe(
    errors: Sequence[Mapping[str, Any]],
    *,
    root: type[BaseModel],
    source: str,
    positions: Positions | None = None,
    flags: Mapping[Loc, str] | None = None,
    hidden: Callable[[Sequence[type[BaseModel]], Loc], bool] = lambda models, loc: False,
) -> list[str]:
    """One line per pydantic error (``key_problems``, as text)."""
    items = key_problems(errors, root=root, source=source, positions=positions, flags=flags, hidden=hidden)
    return [str(p) for p in items]


def key_problems(
    errors: Sequence[Mapping[str, Any]],
    *,
    root: type[BaseModel],
    source: str,
    positions: Positions | None = None,
    flags: Mapping[Loc, str] | None = None,
    hidden: Callable[[Sequence[type[BaseModel]], Loc], bool] = lambda models, loc: False,
) -> list[KeyProblem]:
    """One problem per pydantic error, in the order of the file. ``hidden(models, loc)``: never show the value
    there (secrets, URLs)."""
    lines: list[tuple[tuple[int, int], KeyProblem]] = []
    for err in errors:
        loc: Loc = tuple(err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden" and loc:
            key_loc, msg = loc[:-1], _unknown_key(root, loc)
        else:
            key_loc = loc
            if err["type"] not in _NO_VALUE and "input" in err and not hidden(_model_path(root, loc), loc):
                msg += f" (got {_shown(err['input'])})"
        flag = (flags or {}).get(loc) or (flags or {}).get(key_loc)
        key = format_key_path(key_loc) or None
        if flag is not None:
            lines.append(((0, 0), KeyProblem(file=source, message=msg, key=key, flag=flag)))
            continue
        pos = positions(loc) if positions is not None else None
        line, column = pos if pos else (None, None)
        lines.append((pos or (0, 0), KeyProblem(file=source, line=line, column=column, key=key, message=msg)))
    return [problem for _, problem in sorted(lines, key=lambda item: item[0])]  # in the order of the file


def yaml_positions(text: str) -> Positions:
    """Where each key path sits in a YAML text (ruamel's round-trip positions); the closest existing parent's
    position for a key that is missing."""
    from writeback.yaml.loaders import ruamel_yaml

    try:
        with ruamel_yaml(typ="rt") as loader:
            data = loader.load(text)
    except Exception:  # the text parsed once already; any trouble here only loses the positions
        return lambda loc: None

    def find(loc: Loc) -> tuple[int, int] | None:
        node, pos = data, None
        for part in loc:
            lc = getattr(node, "lc", None)
            if lc is None:
                break
            if isinstance(node, dict) and part in node:
                pos, node = lc.key(part), node[part]
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                pos, node = lc.item(part), node[part]
            else:
                break
        if pos is None:
            return None
        return pos[0] + 1, pos[1] + 1

    return find
