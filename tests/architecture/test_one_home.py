"""One home per concept (issue 20 §3): the well-known names on objects are spelled in ``kube/wellknown`` only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from writeback.kube import wellknown

PACKAGE = Path(__file__).resolve().parents[2] / "writeback"
HOME = PACKAGE / "kube" / "wellknown.py"

NAMES = [
    wellknown.LAST_APPLIED,
    wellknown.MANAGED_BY,
    wellknown.LEASE_ROLE_LABEL,
    wellknown.LEASE_TARGET_ANNOTATION,
    wellknown.BREAK_GLASS_ANNOTATION,
    wellknown.DRY_RUN_MANAGER,
    wellknown.BREAK_GLASS_MANAGER,
]


def _strings(path: Path) -> set[str]:
    """The string constants of a module, f-string parts included (docstrings and comments are prose: left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    constants = (n for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in docs)
    return {n.value for n in constants if isinstance(n.value, str)}


@pytest.mark.parametrize("name", NAMES)
def test_a_well_known_name_is_spelled_in_kube_wellknown_only(name: str) -> None:
    spelled = [p.relative_to(PACKAGE) for p in sorted(PACKAGE.rglob("*.py")) if p != HOME
               and any(name in s for s in _strings(p))]  # fmt: skip
    assert not spelled, f"{name!r} is spelled outside kube/wellknown.py: {spelled}"


def test_last_applied_reads_the_annotation_as_a_json_object() -> None:
    def body(text: object) -> dict[str, object]:
        return {"metadata": {"annotations": {wellknown.LAST_APPLIED: text}}}

    got = wellknown.last_applied(body('{"kind": "ConfigMap", "data": {"a": "1"}}\n'))
    assert got == {"kind": "ConfigMap", "data": {"a": "1"}}
    for unusable in ("[1, 2]", "{not json", 42, None):
        assert wellknown.last_applied(body(unusable)) is None, unusable
    assert wellknown.last_applied({"metadata": {}}) is None and wellknown.last_applied({}) is None
    first = body('{"data": {}}')
    wellknown.last_applied(first)["data"]["x"] = "changed"  # type: ignore[index]
    assert wellknown.last_applied(first) == {"data": {}}  # a fresh copy each time


LOADER_NAMES = {"CSafeLoader", "SafeLoader", "CParser", "Resolver", "VersionedResolver", "implicit_resolvers",
                "add_implicit_resolver", "BaseResolver"}  # fmt: skip


def test_yaml_loaders_and_resolvers_are_built_in_yaml_loaders_only() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "yaml" / "loaders.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        if names & LOADER_NAMES:
            found[str(path.relative_to(PACKAGE))] = sorted(names & LOADER_NAMES)
    assert not found, found


def test_commands_return_exit_codes_only_through_the_tally() -> None:
    """Only the error boundary (``cli/__init__``) and the rule (``cli/exits``) spell an exit code."""
    found = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        if path.name in ("__init__.py", "exits.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Return) or node.value is None:
                continue
            literal = isinstance(node.value, ast.Constant) and type(node.value.value) is int  # not a bool
            if literal or "ExitCode" in {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}:
                found.append(f"{path.name}:{node.lineno}")
    assert not found, found
