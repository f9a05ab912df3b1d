"""Flux's own drift ignore rules (issue 22 §2): a Kustomization's ``spec.ignore`` and a HelmRelease's
``spec.driftDetection.ignore``, read by one function and honoured as fluxcd/pkg ``ssa/jsondiff`` honours them; the
label-selector grammar their targets use; Flux's exclusion keys."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.core.support import applied_fields, defaulted_live, deployment_git, desired_obj, entry, k, live_obj
from writeback.drift.engine import EngineOptions, compute_drift
from writeback.gitops.base import PathIgnore
from writeback.gitops.flux import HELM_RELEASE, KUSTOMIZATION
from writeback.kube.paths import format_path
from writeback.kube.selectors import SelectorSyntaxError, parse_selector
from writeback.model import Decision, Drift, Rule

CONTAINER = "spec.template.spec.containers[name=web]"
IMAGE = f"{CONTAINER}.image"


def hotfix() -> dict[str, Any]:
    """A person's kubectl edit of replicas and the web image; Flux applied the rest."""
    live = defaulted_live(deployment_git())
    live["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] = "apps"  # what Flux adds when it applies
    live["spec"]["replicas"] = 4
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/shop/web:1.4.3"
    live["metadata"]["managedFields"] = [
        entry("kustomize-controller", applied_fields(), operation="Apply"),
        entry("kubectl-edit", {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
            k(name="web"): {"f:image": {}}}}}}}),
    ]  # fmt: skip
    return live


def rule(*paths: str, **target: str) -> PathIgnore:
    return PathIgnore(where="Flux Kustomization flux-system/apps spec.ignore[0]", paths=paths, **target)


def run(
    live: dict[str, Any], *rules: PathIgnore, git: dict[str, Any] | None = None
) -> tuple[dict[str, Drift], tuple[str, ...]]:
    report = compute_drift(
        live=[live_obj(live)], desired=[desired_obj(git or deployment_git())], options=EngineOptions(flux_ignore=rules)
    )
    return {format_path(d.path): d for d in report.drifts}, report.notes


def ignored(live: dict[str, Any], *rules: PathIgnore, git: dict[str, Any] | None = None) -> set[str]:
    drifts, _ = run(live, *rules, git=git)
    assert set(drifts) == {"spec.replicas", IMAGE}, drifts
    for path, d in drifts.items():  # what the rules leave is still a person's change
        assert d.decision in (Decision.IGNORE, Decision.WRITEBACK), (path, d)
    return {p for p, d in drifts.items() if d.decision is Decision.IGNORE}


def test_without_rules_both_changes_are_written_back() -> None:
    assert ignored(hotfix()) == set()


def test_a_rule_without_target_ignores_its_paths_on_every_object_and_names_itself() -> None:
    drifts, notes = run(hotfix(), rule("/spec/replicas"))
    replicas = drifts["spec.replicas"]
    assert (replicas.decision, replicas.rule, replicas.manager) == (Decision.IGNORE, Rule.FLUX_IGNORE, "kubectl-edit")
    assert replicas.reason == "Flux Kustomization flux-system/apps spec.ignore[0] ignores /spec/replicas"
    assert (drifts[IMAGE].decision, drifts[IMAGE].rule) == (Decision.WRITEBACK, Rule.PERSON)
    assert notes == ()


@pytest.mark.parametrize(
    ("target", "selects"),
    [
        ({"kind": "Deployment"}, True),
        ({"kind": "Deploy"}, False),  # a regular expression matched whole, not a prefix
        ({"kind": "Deploy.*"}, True),
        ({"kind": "StatefulSet|Deployment"}, True),
        ({"group": "apps", "version": "v1", "kind": "Deployment"}, True),
        ({"group": "apps", "version": "v1beta1"}, False),
        ({"group": ""}, True),  # an empty field selects every value
        ({"group": "extensions"}, False),
        ({"name": "web"}, True),
        ({"name": "we"}, False),
        ({"name": "w.b", "namespace": "sh.p"}, True),
        ({"namespace": "prod"}, False),
        ({"label_selector": "app=web"}, True),  # Git's label
        ({"label_selector": "app in (web, api),tier notin (db)"}, True),
        ({"label_selector": "kustomize.toolkit.fluxcd.io/name=apps"}, True),  # a label only live has (Flux's own)
        ({"label_selector": "app!=web"}, False),
        ({"label_selector": "!app"}, False),
        ({"annotation_selector": "deployment.kubernetes.io/revision"}, True),  # live's annotation
        ({"annotation_selector": "team=payments"}, False),
        ({"kind": "Deployment", "label_selector": "app=api"}, False),  # every field of the target must hold
    ],
)
def test_the_target_selects_objects_as_flux_does(target: dict[str, str], selects: bool) -> None:
    assert ignored(hotfix(), rule("/spec/replicas", **target)) == ({"spec.replicas"} if selects else set())


def test_git_labels_win_over_live_labels_as_in_the_object_flux_applies() -> None:
    live = hotfix()
    live["metadata"]["labels"]["app"] = "web-hotfix"  # a person relabelled live: Flux applies Git's label again
    drifts, _ = run(live, rule("/spec/replicas", label_selector="app=web"))
    assert drifts["spec.replicas"].rule is Rule.FLUX_IGNORE


@pytest.mark.parametrize(
    ("pointer", "paths"),
    [
        ("/spec/template/spec/containers/0/image", {IMAGE}),  # a position: that container, by name
        ("/spec/template/spec/containers/-2/image", {IMAGE}),  # from the end, as Flux's JSON patch allows
        ("/spec/template/spec/containers/0", {IMAGE}),  # a node: everything below it
        ("/spec/template/spec/containers/1/image", set()),
        ("/spec/template/spec/containers/7/image", set()),
        ("", {"spec.replicas", IMAGE}),  # the whole object
        ("/spec/replica", set()),
    ],
)
def test_paths_are_json_pointers(pointer: str, paths: set[str]) -> None:
    assert ignored(hotfix(), rule(pointer)) == paths


def test_a_container_that_moved_is_still_the_one_the_pointer_named() -> None:
    live = hotfix()
    containers = live["spec"]["template"]["spec"]["containers"]
    containers.reverse()  # positions are resolved in live, then the drift path names the item by its key
    assert ignored(live, rule("/spec/template/spec/containers/1/image")) == {IMAGE}


@pytest.mark.parametrize(
    ("target", "note"),
    [
        ({"kind": "Deploy(ment"}, "target.kind 'Deploy(ment' is not a regular expression"),
        ({"label_selector": "app in web"}, "label selector 'app in web': found 'web', expected '('"),
        ({"annotation_selector": "a=b=c"}, "label selector 'a=b=c'"),
    ],
)
def test_a_rule_flux_would_refuse_is_a_note_and_ignores_nothing(target: dict[str, str], note: str) -> None:
    drifts, notes = run(hotfix(), rule("/spec/replicas", **target))
    assert {d.decision for d in drifts.values()} == {Decision.WRITEBACK}
    assert len(notes) == 1 and notes[0].startswith("Flux Kustomization flux-system/apps spec.ignore[0]: ")
    assert note in notes[0] and notes[0].endswith("not used"), notes


def test_a_path_that_is_no_pointer_is_a_note_and_the_others_still_count() -> None:
    drifts, notes = run(hotfix(), rule("spec/replicas", "/a~2b", "/spec/template/spec/containers/0/image"))
    assert (drifts["spec.replicas"].decision, drifts[IMAGE].rule) == (Decision.WRITEBACK, Rule.FLUX_IGNORE)
    assert notes == (
        "Flux Kustomization flux-system/apps spec.ignore[0]: path 'spec/replicas' is not a JSON pointer "
        "(it does not start with '/'): not used",
        "Flux Kustomization flux-system/apps spec.ignore[0]: path '/a~2b' has an escape other than ~0 and ~1: not used",
    )


def test_a_removal_at_an_ignored_path_is_ignored_too() -> None:
    live = hotfix()
    del live["spec"]["template"]["spec"]["containers"][1]["args"]
    drifts, _ = run(live, rule("/spec/template/spec/containers/1/args"))
    d = drifts["spec.template.spec.containers[name=metrics].args"]
    assert (d.decision, d.rule) == (Decision.IGNORE, Rule.FLUX_IGNORE)


# ---------------------------------------------------------------- reading the rules from the controller objects

SPEC_IGNORE = [
    {"paths": ["/spec/replicas"], "target": {"kind": "Deployment", "labelSelector": "app=web"}},
    {
        "paths": ["/data"],
        "target": {
            "group": "",
            "version": "v1",
            "kind": "ConfigMap",
            "name": "cfg-.*",
            "namespace": "shop",
            "annotationSelector": "team in (a,b)",
        },
    },
    {"paths": []},  # no paths: ignores nothing, left out
    "not a rule",
    {"paths": ["/metadata/annotations"]},
]


def test_a_kustomization_and_a_helmrelease_read_their_rules_with_one_function() -> None:
    ks = {"spec": {"ignore": copy.deepcopy(SPEC_IGNORE)}, "status": {"lastAppliedRevision": "main@sha1:" + "a" * 40}}
    hr = {"spec": {"driftDetection": {"mode": "enabled", "ignore": copy.deepcopy(SPEC_IGNORE)}}}
    from_ks = KUSTOMIZATION.state(ks, ref=KUSTOMIZATION.at(namespace="flux-system", name="apps")).path_ignores
    from_hr = HELM_RELEASE.state(hr, ref=HELM_RELEASE.at(namespace="shop", name="web")).path_ignores
    assert from_ks == (
        PathIgnore(where="Flux Kustomization flux-system/apps spec.ignore[0]", paths=("/spec/replicas",),
                   kind="Deployment", label_selector="app=web"),
        PathIgnore(where="Flux Kustomization flux-system/apps spec.ignore[1]", paths=("/data",), version="v1",
                   kind="ConfigMap", name="cfg-.*", namespace="shop", annotation_selector="team in (a,b)"),
        PathIgnore(where="Flux Kustomization flux-system/apps spec.ignore[4]", paths=("/metadata/annotations",)),
    )  # fmt: skip
    assert [r.where for r in from_hr] == [
        f"Flux HelmRelease shop/web spec.driftDetection.ignore[{i}]" for i in (0, 1, 4)
    ]
    assert [(r.paths, r.kind, r.label_selector) for r in from_hr] == [
        (r.paths, r.kind, r.label_selector) for r in from_ks
    ]
    # neither reads the other's field, nor Argo CD's form
    assert KUSTOMIZATION.state(hr, ref=KUSTOMIZATION.at(namespace="a", name="b")).path_ignores == ()
    assert HELM_RELEASE.state(ks, ref=HELM_RELEASE.at(namespace="a", name="b")).path_ignores == ()
    assert KUSTOMIZATION.state(ks, ref=KUSTOMIZATION.at(namespace="a", name="b")).ignore_differences == ()


# ---------------------------------------------------------------- label selectors (apimachinery's grammar)

LABELS = {"app": "web", "tier": "front", "example.com/size": "12", "empty": ""}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        (" app = web , tier = front ", True),
        ("app=api", False),
        ("app!=api", True),
        ("missing!=x", True),  # != and notin hold when the label is missing
        ("app in (web,api)", True),
        ("app in (api)", False),
        ("app notin (api, db)", True),
        ("missing notin (x)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("empty=", True),
        ("empty in ()", True),  # "()" is the empty value
        ("example.com/size>10", True),
        ("example.com/size<10", False),
        ("app>1", False),  # not an integer: no match
        ("app=web,tier=back", False),
    ],
)
def test_label_selectors_match_as_apimachinery_does(text: str, matches: bool) -> None:
    assert parse_selector(text).matches(LABELS) is matches


@pytest.mark.parametrize(
    "text",
    ["app in web", "app in (web", "!app=web", "app=web,", ",app", "app=web=x", "app ~ web", "-app=web",
     "app=" + "x" * 64, "a/b/c=d", "Example.com/x=y", "app>x", "app in (a b)"],
)  # fmt: skip
def test_a_selector_apimachinery_refuses_is_an_error_that_names_it(text: str) -> None:
    with pytest.raises(SelectorSyntaxError) as error:
        parse_selector(text)
    assert repr(text) in str(error.value)


# ---------------------------------------------------------------- objects Flux leaves alone


@pytest.mark.parametrize(
    ("field", "key", "value"),
    [
        ("annotations", "kustomize.toolkit.fluxcd.io/ssa", "IfNotPresent"),
        ("labels", "kustomize.toolkit.fluxcd.io/ssa", "ignore"),  # a label counts, in any case
        ("labels", "kustomize.toolkit.fluxcd.io/reconcile", "Disabled"),
        ("annotations", "helm.toolkit.fluxcd.io/driftDetection", "disabled"),
    ],
)
def test_flux_exclusion_keys_as_annotations_or_labels(field: str, key: str, value: str) -> None:
    live = hotfix()
    live["metadata"].setdefault(field, {})[key] = value
    drifts, _ = run(live)
    assert {(d.decision, d.rule) for d in drifts.values()} == {(Decision.IGNORE, Rule.FLUX_ANNOTATION)}
