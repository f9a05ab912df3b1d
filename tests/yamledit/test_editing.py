"""Targeted cases of apply_edits: exact output text for each guarantee in docs/yamledit.md."""

from __future__ import annotations

from typing import Any

import pytest
import yaml as pyyaml

from writeback.kube.paths import parse_path
from writeback.kube.pathtypes import ABSENT
from writeback.yaml.edit import Edit, EditRefused, VerifyError, YamlSyntaxError, apply_edits, load_documents


def edit(path: str, value: Any = ABSENT, document: int = 0) -> Edit:
    return Edit(document=document, path=parse_path(path), value=value)


def apply(text: str, *edits: Edit) -> str:
    return apply_edits(text, list(edits), source="f.yaml")


PEM_OLD = "-----BEGIN CERTIFICATE-----\nMIIBold1\nMIIBold2\n-----END CERTIFICATE-----\n"
PEM_NEW = (
    "-----BEGIN CERTIFICATE-----\nMIIBnew1\n-----END CERTIFICATE-----\n"
    "-----BEGIN CERTIFICATE-----\nMIIBnew2\n-----END CERTIFICATE-----\n"
)
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: trust  # the bundle
data:
  ca.crt: |
      -----BEGIN CERTIFICATE-----
      MIIBold1
      MIIBold2
      -----END CERTIFICATE-----
  other: x
"""


def test_pem_bundle_stays_a_literal_block_at_its_indentation() -> None:
    after = apply(CONFIGMAP, edit('data["ca.crt"]', PEM_NEW))
    assert after == CONFIGMAP.replace(
        "      MIIBold1\n      MIIBold2\n      -----END CERTIFICATE-----\n",
        "      MIIBnew1\n      -----END CERTIFICATE-----\n      -----BEGIN CERTIFICATE-----\n"
        "      MIIBnew2\n      -----END CERTIFICATE-----\n",
    )
    assert load_documents(after, source="f")[0].data["data"]["ca.crt"] == PEM_NEW


@pytest.mark.parametrize(
    ("value", "header"),
    [("one\ntwo", "|-"), ("one\ntwo\n", "|"), ("one\ntwo\n\n", "|+")],
)
def test_block_chomping_follows_the_trailing_newlines(value: str, header: str) -> None:
    after = apply("k: |\n  old\nz: 1\n", edit("k", value))
    assert after.startswith(f"k: {header}\n  one\n  two\n")
    assert after.endswith("z: 1\n")
    assert load_documents(after, source="f")[0].data == {"k": value, "z": 1}


def test_folded_block_keeps_its_indicator_and_comment() -> None:
    after = apply("k: >-  # note\n  a b\n  c\nz: 1\n", edit("k", "x y\nz"))
    assert after == "k: >-  # note\n  x y\n\n  z\nz: 1\n"


def test_tabs_inside_a_block_scalar_are_kept() -> None:
    text = "script: |\n  a\tb\n  c\nz: 1\n"
    assert apply(text, edit("z", 2)) == "script: |\n  a\tb\n  c\nz: 2\n"


def test_crlf_file_stays_crlf() -> None:
    text = "a: 1\r\nm:\r\n  # about b\r\n  b: x\r\n  c: y\r\n"
    after = apply(text, edit("a", 2), edit("m.d", "z"), edit("m.b"))
    assert after == "a: 2\r\nm:\r\n  c: y\r\n  d: z\r\n"


def test_missing_final_newline_stays_missing() -> None:
    text = "a: 1\nb: 2"
    assert apply(text, edit("b", 3)) == "a: 1\nb: 3"
    assert apply(text, edit("c", 3)) == "a: 1\nb: 2\nc: 3"
    assert apply(text, edit("b")) == "a: 1"


@pytest.mark.parametrize("value", ["yes", "no", "on", "off", "y", "n", "0755", "1e3", "null", "~", "true", "1:20"])
def test_strings_that_read_as_other_types_are_quoted(value: str) -> None:
    after = apply("k: plain\n", edit("k", value))
    assert after == f'k: "{value}"\n'
    assert pyyaml.safe_load(after) == {"k": value}  # YAML 1.1 reading
    assert load_documents(after, source="f")[0].data == {"k": value}  # YAML 1.2 reading


@pytest.mark.parametrize(
    "value", ["*alias", "&anchor", "!tag", "%x", "@x", "`x", "|x", ">x", "- x", "a: b", "#x", " x"]
)
def test_strings_with_indicators_are_quoted(value: str) -> None:
    after = apply("k: plain\n", edit("k", value))
    assert after == f'k: "{value}"\n'


@pytest.mark.parametrize(
    ("value", "text"), [(493, "493"), (True, "true"), (None, "null"), (1.5, "1.5"), (1e20, "1.0e+20")]
)
def test_non_strings_are_written_as_literals(value: Any, text: str) -> None:
    after = apply("k: 'old'\n", edit("k", value))
    assert after == f"k: {text}\n"
    assert pyyaml.safe_load(after) == {"k": value}


def test_quoted_values_keep_their_quote_character() -> None:
    text = "a: 'x'  # single\nb: \"y\"\nc: plain\n"
    after = apply(text, edit("a", "it's"), edit("b", 'say "hi"'), edit("c", "still-plain"))
    assert after == "a: 'it''s'  # single\nb: \"say \\\"hi\\\"\"\nc: still-plain\n"


def test_flow_list_items() -> None:
    text = "args: [--a, --b, --c]  # flags\n"
    assert apply(text, edit("args[1]", "--x")) == "args: [--a, --x, --c]  # flags\n"
    assert apply(text, edit("args[3]", "--d")) == "args: [--a, --b, --c, --d]  # flags\n"
    assert apply(text, edit("args[1]")) == "args: [--a, --c]  # flags\n"
    assert apply(text, edit("args[1]", "a, b")) == 'args: [--a, "a, b", --c]  # flags\n'


def test_remove_key_with_its_own_comments_only() -> None:
    text = "m:\n  # about a\n  a: 1\n  # about b\n  # more about b\n  b: 2  # b's line\n  # about c\n  c: 3\n"
    assert apply(text, edit("m.b")) == "m:\n  # about a\n  a: 1\n  # about c\n  c: 3\n"


def test_file_header_comment_stays_when_the_first_key_goes() -> None:
    text = "# Copyright header\napiVersion: v1\nkind: X\n"
    assert apply(text, edit("apiVersion")) == "# Copyright header\nkind: X\n"


def test_removing_the_last_key_or_item_leaves_an_empty_collection() -> None:
    assert apply("m:\n  only: 1\nz: 2\n", edit("m.only")) == "m: {}\nz: 2\n"
    assert apply("l:\n- only\nz: 2\n", edit("l[0]")) == "l: []\nz: 2\n"
    assert apply("l:\n- only: 1\n", edit("l[0].only")) == "l:\n- {}\n"


def test_add_key_matches_sibling_indentation_and_nested_style() -> None:
    text = "spec:\n    replicas: 1\n    template:\n        spec:\n            containers:\n            -   name: app\n"
    after = apply(text, edit("spec.selector", {"matchLabels": {"app": "web"}, "tiers": ["a", "b"]}))
    assert (
        after
        == text
        + "    selector:\n        matchLabels:\n            app: web\n        tiers:\n        - a\n        - b\n"
    )


def test_add_into_empty_flow_mapping_and_sequence() -> None:
    assert apply("labels: {}\n", edit("labels.app", "web")) == "labels: {app: web}\n"
    assert apply("labels: {a: b}\n", edit("labels.c", "d")) == "labels: {a: b, c: d}\n"
    assert apply("args: []\n", edit("args[0]", "x")) == "args: [x]\n"


@pytest.mark.parametrize("indent", ["", "  "])
def test_append_item_follows_dash_style(indent: str) -> None:
    text = f"containers:\n{indent}- name: app\n{indent}  image: a\n"
    after = apply(text, edit("containers[name=side].image", "b"))
    assert after == text + f"{indent}- name: side\n{indent}  image: b\n"


def test_select_path_edits_the_matching_item() -> None:
    text = "ports:\n- port: 80\n  protocol: TCP\n  targetPort: 8080\n- port: 443\n  protocol: TCP\n"
    after = apply(text, edit("ports[port=443,protocol=TCP].targetPort", 8443))
    assert after == text + "  targetPort: 8443\n"
    assert apply(text, edit("ports[port=80,protocol=TCP]")) == "ports:\n- port: 443\n  protocol: TCP\n"


def test_null_value_becomes_a_mapping() -> None:
    assert apply("labels:\nz: 1\n", edit("labels.app", "web")) == "labels:\n  app: web\nz: 1\n"
    assert apply("a: x  # note\n", edit("a", {"k": "v"})) == "a:  # note\n  k: v\n"


def test_multi_document_markers_and_directives_are_kept() -> None:
    text = "# lead\n%YAML 1.2\n---\na: 1\n...\n# between\n--- # second\nb: 2\n...\n"
    after = apply(text, edit("b", 3, document=1), edit("a", 0, document=0))
    assert after == text.replace("a: 1", "a: 0").replace("b: 2", "b: 3")


def test_list_kind_items_are_addressed_by_position() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n- kind: ConfigMap\n  data:\n    k: v\n- kind: Secret\n"
    assert apply(text, edit("items[0].data.k", "w")) == text.replace("k: v", "k: w")


def test_non_ascii_text_keeps_columns() -> None:
    text = "名前: ünïcode  # ç\nnext: 1\n"
    assert apply(text, edit('["名前"]', "ñ")) == "名前: ñ  # ç\nnext: 1\n"


def test_anchors_aliases_and_merge_keys_are_refused() -> None:
    text = "base: &b\n  cpu: 1\n  mem: 2\nport: &p 80\nother: *p\napp:\n  <<: *b\n  mem: 4\n"
    for path, reason in [
        ("port", "anchor &p"),
        ("other", "alias"),
        ("base.cpu", "anchor &b"),
        ("app.cpu", "merge key"),
    ]:
        with pytest.raises(EditRefused, match=reason) as info:
            apply(text, edit(path, 9))
        assert "f.yaml" in str(info.value) and path in str(info.value)
    assert apply(text, edit("app.mem", 8)) == text.replace("mem: 4", "mem: 8")
    with pytest.raises(EditRefused, match=r"holds the anchor &b, which \*b still uses"):
        apply("x:\n  base: &b {cpu: 1}\ny: *b\n", edit("x"))


def test_refusals_and_errors_name_the_source_and_path() -> None:
    with pytest.raises(EditRefused, match=r"f\.yaml: cannot edit a\.missing: the path is not in the file"):
        apply("a: {}\n", edit("a.missing"))
    with pytest.raises(EditRefused, match="explicit tag"):
        apply("a: !custom x\n", edit("a", "y"))
    with pytest.raises(EditRefused, match="no document 3"):
        apply("a: 1\n", edit("a", 2, document=3))
    with pytest.raises(YamlSyntaxError, match=r"bad\.yaml:2:5: not valid YAML: "):
        load_documents("a: 1\nb: c: d\n", source="bad.yaml")


def test_result_that_does_not_read_back_is_a_verify_error() -> None:
    # Duplicate keys: the first "a" is edited but readers keep the last one.
    with pytest.raises(VerifyError, match=r"f\.yaml"):
        apply("a: x\na: y\n", edit("a", "z"))


def test_setting_an_equal_value_changes_nothing() -> None:
    text = "a: '1'\nb: 0x10\nc: [1, 2]\n"
    assert apply(text, edit("a", "1"), edit("b", 16), edit("c", [1, 2])) == text


def test_block_content_starting_with_spaces_gets_an_indentation_digit() -> None:
    text = "a:\n  k: |\n    x\n  z: 1\n"
    after = apply(text, edit("a.k", "  indented\nnext\n"))
    assert after == "a:\n  k: |2\n      indented\n    next\n  z: 1\n"
    assert apply("k: |2\n    lead\n", edit("k", "x\n")) == "k: |2\n  x\n"


def test_multi_line_strings_are_written_as_literal_blocks() -> None:
    text = "data:\n  a: x\n  q: 'y'\n"
    after = apply(text, edit('data["ca.crt"]', PEM_OLD), edit("data.a", "one\ntwo"))
    assert after == (
        "data:\n  a: |-\n    one\n    two\n  q: 'y'\n  ca.crt: |\n    -----BEGIN CERTIFICATE-----\n"
        "    MIIBold1\n    MIIBold2\n    -----END CERTIFICATE-----\n"
    )
    # a quoted value keeps its quotes (single quotes fold over lines: test_edge_cases.py);
    # a trailing comment or a missing final newline keeps a plain value on one line
    assert apply('q: "y"\n', edit("q", "one\ntwo")) == 'q: "one\\ntwo"\n'
    assert apply("a: x  # c\n", edit("a", "1\n2")) == 'a: "1\\n2"  # c\n'
    assert apply("a: x", edit("b", "1\n2\n")) == 'a: x\nb: "1\\n2\\n"'


def test_literal_block_that_would_swallow_comments_falls_back_to_quotes() -> None:
    text = "a:\n  b: 1\n      # a note below\nz: 1\n"
    assert apply(text, edit("a.c", "x\ny")) == 'a:\n  b: 1\n  c: "x\\ny"\n      # a note below\nz: 1\n'


def test_block_scalar_at_end_of_file_without_newline_keeps_its_value() -> None:
    # A line break after "x" would add "\n" to b: the new key goes before b (and its own comments).
    assert apply("a: 1\n# about b\nb: |\n  x", edit("c", 2)) == "a: 1\nc: 2\n# about b\nb: |\n  x"
    assert apply("a: 1\nb: |-\n  x", edit("c", 2)) == "a: 1\nb: |-\n  x\nc: 2"
    with pytest.raises(EditRefused, match="block scalar ends the file"):
        apply("l:\n- |\n  x", edit("l[1]", 2))
