"""Argo CD ignoreDifferences on their own: jq path expressions (libjq, held to the simple forms), RFC 6901 pointers."""

from __future__ import annotations

from typing import Any

import pytest

from writeback.drift.ignores.rules import build_ignores
from writeback.drift.listkeys import resolver
from writeback.kube.paths import parse_path
from writeback.kube.pathtypes import Index, Key, Select
from writeback.kube.refs import ObjectRef
from writeback.model import Rule

REF = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="shop", name="web")
KEYS = resolver(kind="Deployment", learned={})
C = "spec.template.spec.containers"  # the drift path of the container list
JQ_C = ".spec.template.spec.containers"  # ... in jq


def body() -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "annotations": {"team/owner": "shop", "a.b": "x"}},
        "spec": {
            "replicas": 2,
            "template": {
                "spec": {
                    "containers": [
                        {"name": "web", "image": "web:1", "args": ["--a", "--b"]},
                        {"name": "sidecar", "image": "side:1"},
                    ]
                }
            },
        },
    }


def reason(entry: dict[str, Any], path: str, *, live: Any = None, git: Any = None) -> str | None:
    """The text of the entry's explanation, or None (every explanation names the ignoreDifferences rule)."""
    ignores = build_ignores(rules=(), presets=(), argocd=({"group": "apps", "kind": "Deployment", **entry},))
    assert not ignores.notes, ignores.notes
    why = ignores.argocd(
        ref=REF, path=parse_path(path), owner=None, live=body() if live is None else live, git=git or {}, keys=KEYS
    )
    assert why is None or why.rule is Rule.ARGOCD_IGNORE_DIFFERENCES, why
    return None if why is None else why.text


def notes_for(**entry: Any) -> tuple[str, ...]:
    return build_ignores(rules=(), presets=(), argocd=({"group": "*", "kind": "*", **entry},)).notes


@pytest.mark.parametrize(
    ("expression", "ignored", "kept"),
    [
        (f'{JQ_C}[] | select(.name == "sidecar")', f"{C}[name=sidecar].image", f"{C}[name=web].image"),
        (f'{JQ_C}[] | select(.name != "web" and (.image | startswith("s")))', f"{C}[name=sidecar]", f"{C}[name=web]"),
        ('.metadata.annotations["team/owner"]', 'metadata.annotations["team/owner"]', 'metadata.annotations["a.b"]'),
        ('.metadata.annotations."a.b"', 'metadata.annotations["a.b"]', 'metadata.annotations["team/owner"]'),
        (f"{JQ_C}[0].args[1]", f"{C}[name=web].args[1]", f"{C}[name=web].args[0]"),
        ('.spec | select(has("replicas"))', "spec.replicas", "metadata.name"),
        (f'{JQ_C}[] | select(.image | test("^web:")) | .image', f"{C}[name=web].image", f"{C}[name=sidecar].image"),
    ],
)  # fmt: skip
def test_jq_path_expressions_select_what_jq_selects(expression: str, ignored: str, kept: str) -> None:
    assert reason({"jqPathExpressions": [expression]}, ignored) == "Argo CD ignoreDifferences: jqPathExpressions"
    assert reason({"jqPathExpressions": [expression]}, kept) is None


def test_an_item_only_git_has_is_selected_through_the_git_side() -> None:
    git = body()
    git["spec"]["template"]["spec"]["containers"].append({"name": "gone", "image": "x"})
    expression = f'{JQ_C}[] | select(.name == "gone")'
    assert reason({"jqPathExpressions": [expression]}, f"{C}[name=gone]", git=git)
    assert reason({"jqPathExpressions": [expression]}, f"{C}[name=gone]") is None


def test_a_runtime_error_selects_nothing_and_its_message_never_reaches_a_note() -> None:
    live = body()
    live["spec"]["template"]["spec"]["containers"] = "s3cr3t"  # jq: Cannot iterate over string ("s3cr3t")
    entry = {"group": "*", "kind": "*", "jqPathExpressions": [f"{JQ_C}[]"]}
    ignores = build_ignores(rules=(), presets=(), argocd=(entry,))
    assert ignores.notes == ()
    assert ignores.argocd(ref=REF, path=parse_path(C), owner=None, live=live, git={}, keys=KEYS) is None


@pytest.mark.parametrize(
    "expression",
    [
        "$ENV.HOME",  # variables: the environment
        "env.HOME",
        '.a | select(.b == "\\(env.HOME)")',  # string interpolation runs code
        ".spec | debug",  # prints the object to stderr
        "input",
        "..",  # recursion
        ".a, .b",  # several outputs
        f"{JQ_C}[] | select(.args[] == .args[])",  # iteration inside a condition multiplies
        "def f: f; f",
        '.a | select(.b * 100000000 == "")',  # arithmetic
        ".spec.some-key",  # jq reads this as a subtraction (as Argo CD's gojq does)
        "map(.x)",
        '.a | select(.b == "x"',  # jq's own syntax check
        ".a) | (.b",  # parentheses may not leave path(...)
    ],
)
def test_expressions_outside_the_simple_forms_become_notes(expression: str) -> None:
    notes = notes_for(jqPathExpressions=[expression])
    assert len(notes) == 1 and repr(expression) in notes[0] and notes[0].endswith("not used")


def test_json_pointers_are_rfc_6901() -> None:
    live = body()
    live["metadata"]["annotations"]["a/b~c"] = "y"
    pointer = {"jsonPointers": ["/metadata/annotations/a~1b~0c"]}
    assert reason(pointer, 'metadata.annotations["a/b~c"]', live=live) == (
        "Argo CD ignoreDifferences: jsonPointers /metadata/annotations/a/b~c"
    )
    assert reason({"jsonPointers": ["/spec/template/spec/containers/1"]}, f"{C}[name=sidecar]")
    assert reason({"jsonPointers": ["/spec/template/spec/containers/01"]}, f"{C}[name=web]") is None  # RFC: no "01"
    assert reason({"jsonPointers": ["/spec/template/spec/containers/-"]}, f"{C}[name=web]") is None
    assert notes_for(jsonPointers=["/a~2b"]) == (
        "Argo CD spec.ignoreDifferences[0]: jsonPointer '/a~2b' has an escape other than ~0 and ~1: not used",
    )
    assert notes_for(jsonPointers=["spec/replicas", ""]) == tuple(
        f"Argo CD spec.ignoreDifferences[0]: jsonPointer {p!r} does not start with '/': not used"
        for p in ("spec/replicas", "")
    )


def test_list_positions_become_key_selectors_only_for_keyed_lists() -> None:
    from writeback.drift.ignores.pointers import field_path

    got = field_path(["spec", "template", "spec", "containers", 0, "args", 1], body(), KEYS)
    assert got == (*parse_path(C), Select(keys=(("name", "web"),)), Key("args"), Index(1))
    assert field_path(["spec", "template", "spec", "containers", 5], body(), KEYS) is None
