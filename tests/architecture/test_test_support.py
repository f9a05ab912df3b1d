"""One home per test helper (issue 20 §5, docs/test-support.md): one poller, one Deployment builder, and no test
directory importing the break-glass tests' own helpers."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
POLLER = TESTS / "support" / "polling.py"
BUILDER = TESTS / "support" / "objects.py"
# The Go-built harness's start-up and tear-down waits: they raise its typed errors (a port race is retried, a failed
# start names its log) and return what they waited for (docs/test-support.md).
HARNESS = {
    "controlplane/cp.py", "controlplane/processes.py", "flux/controllers.py", "flux/sync.py", "argocd/apps.py",
    "argocd/install.py", "argocd/server.py",
    "ha/lease_worker.py",  # a replica's work: one stage of the pipeline lasts so long, unless it loses its lease
}  # fmt: skip


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(TESTS).as_posix()
        if not rel.startswith("controlplane/go/"):
            yield rel, ast.parse(path.read_text(encoding="utf-8"))


def _calls(node: ast.AST, owner: str, name: str) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == name
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == owner
        for n in ast.walk(node)
    )


def test_every_wait_polls_through_tests_support_polling() -> None:
    """A loop that reads the monotonic clock and sleeps is a poller: only tests/support/polling.py has one."""
    pollers = [
        f"{rel}:{loop.lineno}"
        for rel, tree in _modules()
        if TESTS / rel != POLLER and rel not in HARNESS
        for loop in ast.walk(tree)
        if isinstance(loop, ast.While) and _calls(loop, "time", "sleep") and _calls(loop, "time", "monotonic")
    ]
    assert not pollers, f"poll with tests.support.polling.wait_until (or stays), not a loop of your own: {pollers}"


def _is_deployment(node: ast.Dict) -> bool:
    """A dict literal of a whole Deployment: kind Deployment and a spec with a selector."""
    fields = {k.value: v for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)}
    kind, spec = fields.get("kind"), fields.get("spec")
    return (
        isinstance(kind, ast.Constant)
        and kind.value == "Deployment"
        and isinstance(spec, ast.Dict)
        and any(isinstance(k, ast.Constant) and k.value == "selector" for k in spec.keys)
    )


def test_every_deployment_dict_is_built_by_tests_support_objects() -> None:
    spelled = [
        f"{rel}:{node.lineno}"
        for rel, tree in _modules()
        if TESTS / rel != BUILDER
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict) and _is_deployment(node)
    ]
    assert not spelled, f"build Deployments with tests.support.objects.deployment: {spelled}"


def test_only_the_break_glass_tests_import_their_helpers() -> None:
    importers = [
        rel
        for rel, tree in _modules()
        if not rel.startswith("breakglass/")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests.breakglass")
    ]
    assert not importers, f"what several test directories share belongs in tests/support: {importers}"
