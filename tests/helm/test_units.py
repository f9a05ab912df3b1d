"""The pure parts of the Helm engine, one rule per test: versions, the values schema, rendered output, solving for
new values, values edits as splices, and the proof's comparison."""

from __future__ import annotations

import pytest

from writeback.adapters.helm_versions import pick, satisfies
from writeback.errors import PatchError
from writeback.kube.paths import parse_path
from writeback.kube.pathtypes import ABSENT, Key, Select
from writeback.kube.refs import ObjectRef
from writeback.model import Drift, FilePatch, Op
from writeback.sources.helm import Form, Layer, LayerKind, PostRender, Rendering, RenderOutput, Where, parse_output
from writeback.sources.helm.candidates import Perturb, Sentinels, scalar_candidates
from writeback.sources.helm.choosing import ValuesEdit
from writeback.sources.helm.editing import conflicts, patch_files
from writeback.sources.helm.schema import Schema
from writeback.sources.helm.solving import convert, locate_tokens, solve_remove, solve_scalar
from writeback.sources.helm.verifying import Proof, differences, generated, verify

# ---------------------------------------------------------------- versions


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        (None, "7.0.0"),
        ("*", "7.0.0"),
        ("6.x", "6.14.1"),
        ("6.13.x", "6.13.0"),
        (">=6.0.0 <7.0.0", "6.14.1"),
        (">=6.0.0, <7.0.0", "6.14.1"),
        ("~6.13.0", "6.13.0"),
        ("^6.0", "6.14.1"),
        ("6.14.1", "6.14.1"),
        ("6.15.0-rc.1", "6.15.0-rc.1"),
        (">6.14.1", "7.0.0"),
        ("<=6.13.0 || >=7", "7.0.0"),
        ("8.x", None),
    ],
)
def test_a_chart_version_is_picked_as_helm_constraints_pick_it(constraint: str | None, expected: str | None) -> None:
    assert pick(["6.14.1", "6.13.0", "7.0.0", "6.15.0-rc.1", "not-a-version"], constraint) == expected


def test_prereleases_match_only_exactly() -> None:
    assert not satisfies("6.15.0-rc.1", ">=6.0.0")
    assert satisfies("6.15.0-rc.1", "6.15.0-rc.1")


# ---------------------------------------------------------------- schema

SCHEMA = """{"type": "object", "properties": {
  "replicaCount": {"type": "integer", "minimum": 1, "maximum": 10},
  "service": {"type": "object", "properties": {"type": {"type": "string", "enum": ["ClusterIP", "NodePort"]}}},
  "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
  "list": {"type": "array", "items": {"$ref": "#/definitions/item"}}},
  "definitions": {"item": {"type": "object", "properties": {"port": {"type": "integer"}}}}}"""


def test_the_schema_decides_which_perturbations_are_accepted() -> None:
    schema = Schema(SCHEMA)
    assert schema.accepts(("replicaCount",), 3) and not schema.accepts(("replicaCount",), 731001)
    assert not schema.accepts(("replicaCount",), True)  # a boolean is not an integer
    assert schema.enum(("service", "type")) == ["ClusterIP", "NodePort"]
    assert not schema.accepts(("name",), "wbq1x") and schema.accepts(("name",), "abc")
    assert not schema.accepts(("list", 0, "port"), "x") and schema.accepts(("list", 0, "port"), 8)
    assert Schema(None).accepts(("anything",), object()) and Schema("not json").root is None


def test_sentinels_respect_the_schema_and_fall_back_to_another_enum_member() -> None:
    s = Sentinels(schema=Schema(SCHEMA))
    assert s.scalar(("service", "type"), "ClusterIP") == Perturb(key=("service", "type"), value="NodePort")
    assert s.scalar(("replicaCount",), 2) is None  # no sentinel within 1..10 that is found again: left alone
    token = s.scalar(("other",), "text")
    assert token is not None and token.tokens == (token.value,) and s.issued[token.value] == ("other",)


# ---------------------------------------------------------------- candidates


def test_candidates_are_the_keys_whose_value_is_in_the_field_and_in_the_part_that_changed() -> None:
    values = {"image": {"registry": "docker.io", "repository": "bitnami/nginx", "tag": "1.29.1-r0"}, "n": 1, "h": None}
    first, later = scalar_candidates(values, "docker.io/bitnami/nginx:1.29.1-r0", "docker.io/bitnami/nginx:1.29.2-r0")
    assert first == [("image", "tag")]
    assert set(later) >= {("image", "registry"), ("image", "repository"), ("n",), ("h",)}  # "1" is inside the tag
    first, _ = scalar_candidates(values, "docker.io/bitnami/nginx:1.29.1-r0")
    assert set(first) == {("image", "registry"), ("image", "repository"), ("image", "tag")}
    assert scalar_candidates(values, 1)[0] == [("n",)]


# ---------------------------------------------------------------- rendered output

OUTPUT = """\
---
# Source: web/templates/svc.yaml
apiVersion: v1
kind: Service
metadata:
  name: web
---
# Source: web/templates/role.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: web
---
# Source: web/templates/test.yaml
apiVersion: v1
kind: Pod
metadata:
  name: web-test
  namespace: other
  annotations: {helm.sh/hook: test}
"""


def test_rendered_objects_carry_their_template_namespace_and_hook_flag() -> None:
    out = parse_output(RenderOutput(text=OUTPUT), namespace="prod", post=PostRender(labels={"a": "b"}))
    summary = [(str(o.ref), o.template, o.ordinal, o.hook) for o in out.objects]
    assert summary == [
        ("Service prod/web", "web/templates/svc.yaml", 0, False),
        ("ClusterRole.rbac.authorization.k8s.io web", "web/templates/role.yaml", 0, False),
        ("Pod other/web-test", "web/templates/test.yaml", 0, True),
    ]
    assert all(o.body["metadata"]["labels"] == {"a": "b"} for o in out.objects)
    assert [d.ref.name for d in out.desired(file="apps/web.yaml")] == ["web", "web"]  # no hooks


def test_post_rendered_bodies_keep_the_templates_of_the_helm_output() -> None:
    post = "apiVersion: v1\nkind: Service\nmetadata: {name: web, annotations: {p: 'y'}}\n"
    out = parse_output(RenderOutput(text=OUTPUT, post_rendered=post), namespace="prod")
    assert [(o.template, o.body["metadata"]["annotations"]) for o in out.objects] == [
        ("web/templates/svc.yaml", {"p": "y"})
    ]


# ---------------------------------------------------------------- solving


def _perturbs(**keys: tuple[str, ...]) -> dict[str, Perturb]:
    return {tok: Perturb(key=key, value=tok, tokens=(tok,)) for tok, key in keys.items()}


def test_an_embedded_value_is_cut_from_live_changing_as_few_keys_as_possible() -> None:
    perturbs = _perturbs(wbq1x=("image", "repository"), wbq2x=("image", "tag"))
    values = {"image": {"repository": "reg:5000/app", "tag": "1.1"}}
    got = solve_scalar("wbq1x:wbq2x", "reg:5000/app:1.1", "reg:5000/app:1.2", perturbs=perturbs, effective=values)
    assert got == [(("image", "tag"), "1.2")]
    got = solve_scalar("wbq1x:wbq2x", "reg:5000/app:1.1", "other/app:1.1", perturbs=perturbs, effective=values)
    assert got == [(("image", "repository"), "other/app")]


def test_a_live_value_that_does_not_fit_the_pattern_or_a_transformed_value_is_a_reason() -> None:
    perturbs = _perturbs(wbq1x=("v",))
    assert solve_scalar("--x=wbq1x", "--x=a", "--y=b", perturbs=perturbs, effective={"v": "a"}) == (
        "the live value '--y=b' does not fit the template's pattern '--x={{v}}'"
    )
    reason = solve_scalar("WBQ1X", "A", "B", perturbs=perturbs, effective={"v": "a"})
    assert isinstance(reason, str)


def test_a_direct_value_keeps_the_type_of_the_key() -> None:
    assert solve_scalar("wbq1x", "3", "4", perturbs=_perturbs(wbq1x=("n",)), effective={"n": "3"}) == [(("n",), "4")]
    assert solve_scalar(
        731001, 2, 5, perturbs={"731001": Perturb(key=("n",), value=731001, tokens=("731001",))}, effective={"n": 2}
    ) == [(("n",), 5)]
    assert convert("7", 1) == 7 and convert(True, "x") == "true" and convert("false", True) is False


def test_removing_an_item_removes_the_list_item_all_its_keys_are_under() -> None:
    keys = [("extraEnvs", 1, "name"), ("extraEnvs", 1, "value")]
    assert solve_remove(keys, effective={}, whole=True) == [(("extraEnvs", 1), ABSENT)]
    assert solve_remove([("podAnnotations", "a")], effective={}, whole=False) == [(("podAnnotations", "a"), ABSENT)]
    assert isinstance(solve_remove([("a",), ("b",)], effective={}, whole=True), str)


def test_tokens_are_found_as_keys_values_and_inside_strings() -> None:
    found = list(
        locate_tokens({"wbq1x": "x-wbq2x", "l": [731003]}, {"wbq1x": ("a",), "wbq2x": ("b",), "731003": ("c",)})
    )
    assert [(f.how, f.token) for f in found] == [("key", "wbq1x"), ("embedded", "wbq2x"), ("value", "731003")]


# ---------------------------------------------------------------- editing

DRIFT = Drift(
    resource=ObjectRef(api_version="v1", kind="ConfigMap", namespace="a", name="b"), path=(Key("x"),), op=Op.CHANGE
)


def edit(where: Where, key: tuple[str | int, ...], value: object) -> ValuesEdit:
    return ValuesEdit(
        drift=DRIFT,
        layer=Layer(kind=LayerKind.INLINE, name="n", where=where),
        where=where,
        key=key,
        value=value,
        via="v",
    )


MANIFEST = """\
spec:
  helm:
    values: |
      # inline
      image:
        tag: "1.0" # pinned
    parameters:
      - name: replicaCount
        value: "2"
"""


def test_values_edits_are_spliced_into_files_texts_and_parameters() -> None:
    files = {"values.yaml": "# top\nimage:\n  tag: '1.0'  # pinned\n", "app.yaml": MANIFEST, "f.txt": "old"}
    text = Where(file="app.yaml", document=0, path=parse_path("spec.helm.values"), form=Form.TEXT)
    param = Where(
        file="app.yaml",
        document=0,
        path=(Key("spec"), Key("helm"), Key("parameters"), Select((("name", "replicaCount"),)), Key("value")),
        form=Form.SCALAR,
    )
    patches = patch_files(
        [
            edit(Where(file="values.yaml"), ("image", "tag"), "1.1"),
            edit(Where(file="values.yaml"), ("extra", "list"), [1, 2]),
            edit(text, ("image", "tag"), "2.0"),
            edit(param, (), 5),
            edit(Where(file="f.txt", form=Form.FILE), (), "new"),
        ],
        files,
    )
    after = {p.path: p.after for p in patches}
    assert after["values.yaml"] == "# top\nimage:\n  tag: '1.1'  # pinned\nextra:\n  list:\n    - 1\n    - 2\n"
    assert after["app.yaml"] == MANIFEST.replace('tag: "1.0"', 'tag: "2.0"').replace('value: "2"', 'value: "5"')
    assert after["f.txt"] == "new"
    assert all(isinstance(p, FilePatch) and p.before == files[p.path] for p in patches)


@pytest.mark.parametrize(
    ("before", "after"),
    [("", "a:\n  b: 1\n"), ("# nothing yet\n", "# nothing yet\na:\n  b: 1\n"), ("{}\n", "{a: {b: 1}}\n")],
)
def test_an_empty_values_file_gets_its_first_keys_in_its_style(before: str, after: str) -> None:
    (patch,) = patch_files([edit(Where(file="v.yaml"), ("a", "b"), 1)], {"v.yaml": before})
    assert patch.after == after


def test_edits_that_want_different_values_at_one_place_conflict() -> None:
    where = Where(file="values.yaml")
    keep, bad = conflicts(
        [edit(where, ("t",), "1"), edit(where, ("t",), "1"), edit(where, ("u",), "1"), edit(where, ("u",), "2")]
    )
    assert [e.key for e in keep] == [("t",), ("t",)]
    assert len(bad) == 1 and bad[0].reason == 'the drifted fields need different values for u in values.yaml: "1", "2"'


def test_an_edit_the_yaml_editor_refuses_is_an_error_naming_the_file() -> None:
    files = {"values.yaml": "base: &b {tag: 1}\nimage: *b\n"}
    with pytest.raises(PatchError, match=r"values\.yaml"):
        patch_files([edit(Where(file="values.yaml"), ("image", "tag"), 2)], files)


# ---------------------------------------------------------------- the proof


def _render(text: str) -> Rendering:
    return parse_output(RenderOutput(text=text), namespace="ns")


BASE = """\
# Source: c/templates/d.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  replicas: 1
  template: {spec: {containers: [{name: a, image: x:1}, {name: b, image: y:1}]}}
---
# Source: c/templates/s.yaml
apiVersion: v1
kind: Secret
metadata: {name: s}
data: {k: c2VjcmV0}
"""
D = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="ns", name="d")


def test_the_proof_holds_when_exactly_the_drifted_fields_moved_to_live() -> None:
    after = BASE.replace("replicas: 1", "replicas: 3").replace("{name: b, image: y:1}, {name: a, image: x:1}", "")
    drift = Drift(resource=D, path=parse_path("spec.replicas"), op=Op.CHANGE, live=3, git=1)
    swapped = after.replace(
        "[{name: a, image: x:1}, {name: b, image: y:1}]", "[{name: b, image: y:1}, {name: a, image: x:1}]"
    )
    result = verify(_render(BASE), _render(swapped), [drift])
    assert result.ok and result.proof == Proof(fields=1, objects=1)
    assert (
        result.proof.sentence()
        == "helm template re-render: changes exactly these 1 field of these 1 object; nothing else"
    )


def test_anything_else_that_moves_fails_the_proof_with_both_values_and_secrets_stay_hidden() -> None:
    after = (
        BASE.replace("replicas: 1", "replicas: 3").replace("image: y:1", "image: y:2").replace("c2VjcmV0", "b3RoZXI=")
    )
    drift = Drift(resource=D, path=parse_path("spec.replicas"), op=Op.CHANGE, live=3, git=1)
    result = verify(_render(BASE), _render(after), [drift])
    assert not result.ok
    reason = result.reason()
    assert (
        'Deployment.apps/ns/d spec.template.spec.containers[name=b].image: expected "y:1", re-render has "y:2"'
        in reason
    )
    assert "Secret/ns/s data.k: changed (a Secret: values not shown)" in reason
    assert "c2VjcmV0" not in reason and "b3RoZXI=" not in reason


def test_generated_content_differs_in_three_renders_and_a_moved_value_does_not() -> None:
    base, other = _render(BASE), _render(BASE.replace("c2VjcmV0", "b3RoZXI=").replace("image: y:1", "image: y:wbq1x"))
    after = _render(BASE.replace("c2VjcmV0", "dGhpcmQ=").replace("image: y:1", "image: y:2"))
    found = differences(base.lasting, after.lasting)
    assert [str(d.path) for d in generated(base, other, found)] == [str(parse_path("data.k"))]
