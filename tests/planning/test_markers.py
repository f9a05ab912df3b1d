"""``$writeback`` markers: Helm values.yaml, a Flux HelmRelease's inline values, and their errors."""

from __future__ import annotations

import pytest

from tests.planning.repos import HELM_RELEASE, HELM_VALUES, WEB, drift, ref
from writeback.errors import PathSyntaxError
from writeback.kube.images import parse_image
from writeback.kube.pathtypes import Key
from writeback.model import Op
from writeback.sources.changesets import plan_changesets
from writeback.sources.locating import locate
from writeback.sources.markers import parse_reference, scan_markers
from writeback.sources.registry import by_name

IMAGE = "spec.template.spec.containers[name=app].image"
API = ref("Deployment", "api")
LOG_LEVEL = "spec.template.spec.containers[name=api].env[name=LOG_LEVEL].value"


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    a, b = before.splitlines(), after.splitlines()
    assert len(a) == len(b)
    return [(x, y) for x, y in zip(a, b, strict=True) if x != y]


def test_helm_values_marker_writes_tag_and_replicas() -> None:
    files = {"charts/web/values.yaml": HELM_VALUES}
    drifts = [
        drift(WEB, IMAGE, live="registry.example.com/web:1.0.4", git="registry.example.com/web:1.0.0"),
        drift(WEB, "spec.replicas", live=4, git=2),
    ]
    located = locate(files=files, root="charts/web", source=by_name("markers"), drifts=drifts)
    assert located.unresolved == ()
    assert {loc.via for loc in located.locations} == {
        "marker at charts/web/values.yaml:2",
        "marker at charts/web/values.yaml:5",
    }
    (cs,) = plan_changesets(target="web", files=files, drifts=drifts, located=located).changesets
    (patch,) = cs.files
    assert _changed_lines(HELM_VALUES, patch.after) == [
        (
            'replicaCount: 2 # {"$writeback": "Deployment.apps/prod/web:spec.replicas"}',
            'replicaCount: 4 # {"$writeback": "Deployment.apps/prod/web:spec.replicas"}',
        ),
        (HELM_VALUES.splitlines()[4], HELM_VALUES.splitlines()[4].replace('"1.0.0"', '"1.0.4"')),
    ]


def test_helmrelease_inline_values_marker() -> None:
    files = {"apps/api/release.yaml": HELM_RELEASE, "charts/web/values.yaml": HELM_VALUES}
    drifts = [drift(API, LOG_LEVEL, live="debug", git="info")]
    located = locate(files=files, root="apps", source=by_name("markers"), drifts=drifts)
    (loc,) = located.locations
    assert loc.file == "apps/api/release.yaml"
    assert loc.path == (Key("spec"), Key("values"), Key("logLevel"))
    (cs,) = plan_changesets(target="apps", files=files, drifts=drifts, located=located).changesets
    (patch,) = cs.files
    assert patch.path == "apps/api/release.yaml"
    ((old, new),) = _changed_lines(HELM_RELEASE, patch.after)
    assert old.startswith("    logLevel: info #") and new == old.replace("info", "debug", 1)


def test_marker_without_drift_does_nothing_and_unmarked_field_is_unresolved() -> None:
    files = {"charts/web/values.yaml": HELM_VALUES}
    drifts = [drift(WEB, "spec.template.spec.containers[name=app].resources.limits.cpu", live="2", git="1")]
    located = locate(files=files, root="charts/web", source=by_name("markers"), drifts=drifts)
    assert located.locations == ()
    (u,) = located.unresolved
    assert "no $writeback marker binds" in u.reason and "Helm" in u.reason
    (cs,) = plan_changesets(target="web", files=files, drifts=drifts, located=located).changesets
    assert cs.files == () and cs.unresolved == (u,)


def test_marker_wins_in_a_plain_target() -> None:
    manifest = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: prod\nspec:\n  replicas: 2\n"
    )
    files = {"deploy/web.yaml": manifest, "deploy/values.yaml": HELM_VALUES}
    drifts = [drift(WEB, "spec.replicas", live=7, git=2)]
    (loc,) = locate(files=files, root="deploy", source=by_name("plain"), drifts=drifts).locations
    assert loc.file == "deploy/values.yaml"


def test_marker_errors_name_file_and_line_and_stay_local() -> None:
    bad = (
        'a: 1 # {"$writeback": "Deployment.apps/prod/web:spec..replicas"}\n'
        'b: 2 # {"$writeback": "Deployment.apps/prod/web:spec.replicas", "part": "color"}\n'
        'c: 3 # {"$writeback": oops}\n'
    )
    scan = scan_markers({"x/bad.yaml": bad, "charts/web/values.yaml": HELM_VALUES})
    assert len(scan.markers) == 2  # the good file still counts
    messages = [str(e) for e in scan.errors]
    assert messages[0].startswith("x/bad.yaml:1: malformed path in $writeback marker")
    assert messages[1].startswith('x/bad.yaml:2: "part" must be one of')
    assert messages[2].startswith("x/bad.yaml:3: a $writeback marker that is not valid JSON")


def test_marker_pointing_to_a_missing_resource_is_an_error_for_that_marker_only() -> None:
    ghost = (
        'tag: "2.0" # {"$writeback": "Deployment.apps/prod/ghost:spec.template.spec.containers[name=app].image",'
        ' "part": "tag"}\n'
    )
    files = {"charts/web/values.yaml": HELM_VALUES, "charts/ghost/values.yaml": ghost}
    drifts = [drift(WEB, "spec.replicas", live=4, git=2)]
    located = locate(files=files, root="charts", source=by_name("markers"), drifts=drifts, live_refs=[WEB])
    (loc,) = located.locations
    assert loc.file == "charts/web/values.yaml"
    (u,) = located.unresolved
    assert u.resource.name == "ghost" and u.reason.startswith("charts/ghost/values.yaml:1: ")
    assert "does not exist live" in u.reason
    plan = plan_changesets(target="charts", files=files, drifts=drifts, located=located)
    (cs,) = plan.changesets
    assert [f.path for f in cs.files] == ["charts/web/values.yaml"] and cs.unresolved == (u,)


def test_reference_and_image_parsing() -> None:
    identity, path = parse_reference("ClusterRole.rbac.authorization.k8s.io/viewer:rules[0].verbs")
    assert identity == ("rbac.authorization.k8s.io", "ClusterRole", "", "viewer") and len(path) == 3
    assert parse_reference("ConfigMap/prod/cfg:data.x")[0] == ("", "ConfigMap", "prod", "cfg")
    with pytest.raises(PathSyntaxError):
        parse_reference("ConfigMap/prod/cfg:data..x")
    with pytest.raises(ValueError, match="expected"):
        parse_reference("ConfigMap/prod/cfg")
    img = parse_image("registry:5000/team/web:1.2@sha256:abc")
    assert (img.name, img.tag, img.digest) == ("registry:5000/team/web", "1.2", "sha256:abc")
    assert parse_image("registry:5000/web").tag is None


def test_marker_part_missing_in_live_image_is_unresolved() -> None:
    files = {"charts/web/values.yaml": HELM_VALUES}
    drifts = [drift(WEB, IMAGE, live="registry.example.com/web@sha256:abc", git="registry.example.com/web:1.0.0")]
    located = locate(files=files, root="charts/web", source=by_name("markers"), drifts=drifts)
    (cs,) = plan_changesets(target="web", files=files, drifts=drifts, located=located).changesets
    assert cs.files == ()
    (u,) = cs.unresolved
    assert "has no tag" in u.reason


def test_removal_through_a_marker_is_unresolved_not_guessed() -> None:
    files = {"apps/api/release.yaml": HELM_RELEASE}
    drifts = [drift(API, LOG_LEVEL, op=Op.REMOVE, git="info")]
    located = locate(files=files, root="apps", source=by_name("markers"), drifts=drifts)
    (cs,) = plan_changesets(target="apps", files=files, drifts=drifts, located=located).changesets
    assert cs.files == ()
    (u,) = cs.unresolved
    assert "apps/api/release.yaml:15" in u.reason and "cannot express a removal" in u.reason


def test_argocd_application_helm_parameter_marker() -> None:
    app = (
        "apiVersion: argoproj.io/v1alpha1\n"
        "kind: Application\n"
        "metadata:\n"
        "  name: web\n"
        "  namespace: argocd\n"
        "spec:\n"
        "  source:\n"
        "    helm:\n"
        "      parameters:\n"
        "        - name: image.tag\n"
        '          value: "1.0.0" # {"$writeback": "Deployment.apps/prod/web:'
        'spec.template.spec.containers[name=app].image", "part": "tag"}\n'
        "        - name: replicaCount\n"
        "          value: '2'\n"
    )
    files = {"argocd/web.yaml": app}
    drifts = [drift(WEB, IMAGE, live="registry.example.com/web:1.0.7", git="registry.example.com/web:1.0.0")]
    located = locate(files=files, root="argocd", source=by_name("markers"), drifts=drifts)
    (cs,) = plan_changesets(target="web", files=files, drifts=drifts, located=located).changesets
    ((old, new),) = _changed_lines(app, cs.files[0].after)
    assert new == old.replace('"1.0.0"', '"1.0.7"')
