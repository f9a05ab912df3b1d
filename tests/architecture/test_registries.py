"""Extension by registry (issue 20): each GitOps controller, forge and source kind is one module behind a Protocol
plus one registry line, and nothing else in the package tests its kind string."""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import pytest

from writeback.adapters.forges import registry as forges
from writeback.adapters.forges.base import ForgeKind, ForgeSettings
from writeback.cli import build_parser
from writeback.cli.config_cmd import json_schema
from writeback.gitops import registry as controllers
from writeback.gitops.base import GitOpsController
from writeback.sources import registry as sources
from writeback.sources.base import Source

PACKAGE = Path(__file__).resolve().parents[2] / "writeback"


def _protocol_members(protocol: type) -> set[str]:
    return {n for n in dir(protocol) if not n.startswith("_")} - {"register"}


@pytest.mark.parametrize(
    ("entries", "protocol"),
    [(controllers.CONTROLLERS, GitOpsController), (forges.FORGES, ForgeKind), (sources.SOURCES, Source)],
    ids=["controllers", "forges", "sources"],
)
def test_every_registered_entry_implements_the_whole_protocol(entries: tuple[object, ...], protocol: type) -> None:
    members = _protocol_members(protocol)
    assert members, protocol
    for entry in entries:
        assert isinstance(entry, protocol), entry
        for name in members:
            wanted = getattr(protocol, name)
            if inspect.isfunction(wanted):  # a method: same keyword parameters, callable
                got = getattr(entry, name)
                assert callable(got), (entry, name)
                want = [p for p in inspect.signature(wanted).parameters if p != "self"]
                have = list(inspect.signature(got).parameters)
                assert have == want, (entry, name, have, want)
            else:  # a property of the Protocol: a value of the annotated type
                assert getattr(entry, name) is not None, (entry, name)
    names = [getattr(e, "name") for e in entries]  # noqa: B009
    assert len(names) == len(set(names)), names


def test_each_forge_fixes_its_settings_kind() -> None:
    for forge in forges.FORGES:
        assert issubclass(forge.settings, ForgeSettings)
        assert typing.get_args(forge.settings.model_fields["kind"].annotation) == (forge.name,)
        assert forge.settings.model_validate({}).kind == forge.name  # no kind given: the model's own


def test_the_command_line_and_the_config_schema_offer_every_registered_kind() -> None:
    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "run")[1]  # type: ignore[union-attr]
    options = {o: a for a in run._actions for o in a.option_strings}
    assert tuple(options["--forge"].choices) == forges.names()
    assert tuple(options["--source"].choices) == sources.names()
    for c in controllers.SUSPENDABLE:
        assert c.flag in options, c.flag
    schema = json_schema()
    target = schema["$defs"]["Target"]["properties"]
    for c in controllers.SUSPENDABLE:
        assert c.config_key in target, c.config_key
    assert set(target["source"]["enum"]) == {*sources.names(), None}
    forge_kinds = next(o for o in target["forge"]["anyOf"] if "oneOf" in o)["properties"]["kind"]["enum"]
    assert forge_kinds == list(forges.names())


# Literals that spell a kind name but select nothing: each with its reason.
NOT_KIND_SELECTORS = {
    ("yaml/edit/documents.py", "plain"),  # a YAML scalar style
    ("drift/normalizing.py", "plain"),  # the function exported as `plain`
    ("pr/text.py", "argocd"),  # a sample field manager in the template check's sample change set
    ("adapters/kustomize.py", "kustomize"),  # the kustomize program's name on PATH
    ("sources/helm/flux.py", "kustomize"),  # the HelmRelease field postRenderers[].kustomize
    ("sources/helm/source.py", "kustomize"),  # the kustomize program's name in Tools (Flux's post-renderers)
    ("sources/helm/argocd.py", "helm"),  # the Application source's field `helm`
    ("sources/helm/claiming.py", "helm"),  # the same field, read to claim an Application with a Helm source
    ("adapters/helm.py", "helm"),  # the helm program's name on PATH
}


def _kind_names() -> dict[str, str]:
    """Each registered kind name -> the module that defines it (relative to writeback/)."""
    out: dict[str, str] = {}
    entries: tuple[GitOpsController | ForgeKind | Source, ...] = (
        *controllers.CONTROLLERS,
        *forges.FORGES,
        *sources.SOURCES,
    )
    for entry in entries:
        module = inspect.getmodule(type(entry))
        assert module is not None and module.__file__ is not None
        out[entry.name] = Path(module.__file__).relative_to(PACKAGE).as_posix()
    return out


def _offenders(root: Path, kinds: dict[str, str]) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in kinds):
                continue
            if rel != kinds[node.value] and (rel, node.value) not in NOT_KIND_SELECTORS:
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    return found


def test_no_kind_string_appears_outside_its_module() -> None:
    assert _offenders(PACKAGE, _kind_names()) == []


def test_the_scan_finds_a_kind_string_tested_outside_its_module(tmp_path: Path) -> None:
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "cycling.py").write_text('if forge.kind == "gitlab":\n    user = "oauth2"\n')
    (tmp_path / "adapters" / "forges").mkdir(parents=True)
    (tmp_path / "adapters" / "forges" / "gitlab.py").write_text('name = "gitlab"\n')
    assert _offenders(tmp_path, _kind_names()) == ["pipeline/cycling.py:1: 'gitlab'"]
