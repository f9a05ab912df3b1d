"""load_documents and iter_scalars: data, document spans, scalar positions and trailing comments."""

from __future__ import annotations

import pytest

from writeback.kube.pathtypes import Index, Key
from writeback.yaml.edit import YamlSyntaxError, iter_scalars, load_documents

TEXT = """\
# header
%YAML 1.2
---
image: nginx:1.25  # {"$writeback": "Deployment/web:spec.template.spec.containers[name=web].image"}
ports: [80, "443"]
script: |  # block marker
  echo é
base: &b {x: 1}
copy: *b
on: yes
...
---
second: 2
"""


def test_load_documents_reads_yaml_1_2_data_and_spans() -> None:
    docs = load_documents(TEXT, source="v.yaml")
    assert [d.index for d in docs] == [0, 1]
    assert docs[0].data == {
        "image": "nginx:1.25",
        "ports": [80, "443"],
        "script": "echo é\n",
        "base": {"x": 1},
        "copy": {"x": 1},
        "on": "yes",  # YAML 1.2: plain strings
    }
    assert docs[1].data == {"second": 2}
    assert TEXT[docs[0].start :].startswith("---\nimage")
    assert TEXT[docs[0].end - 3 : docs[0].end] == "..."
    assert TEXT[docs[1].start :].startswith("---\nsecond")


def test_iter_scalars_positions_comments_and_flags() -> None:
    infos = {(s.document, s.path): s for s in iter_scalars(TEXT, source="v.yaml")}
    image = infos[(0, (Key("image"),))]
    assert (image.line, image.column, image.style) == (3, 7, "plain")
    assert image.comment == '{"$writeback": "Deployment/web:spec.template.spec.containers[name=web].image"}'
    port = infos[(0, (Key("ports"), Index(1)))]
    assert (port.value, port.style, port.flow, port.line, port.column) == ("443", '"', True, 4, 12)
    script = infos[(0, (Key("script"),))]
    assert (script.style, script.comment, script.end_line) == ("|", "block marker", 6)
    assert infos[(0, (Key("base"), Key("x")))].editable is False  # under an anchor
    assert (0, (Key("copy"), Key("x"))) not in infos  # aliases are not listed again
    assert infos[(0, (Key("on"),))].editable is True
    assert infos[(1, (Key("second"),))].line == 12


def test_columns_count_characters_in_crlf_non_ascii_files() -> None:
    text = '名前: 値\r\nnext: "ü"  # ç\r\n'
    infos = list(iter_scalars(text, source="c.yaml"))
    assert [(s.line, s.column, s.end_column, s.comment) for s in infos] == [(0, 4, 5, None), (1, 6, 9, "ç")]


def test_syntax_error_names_source_line_and_column() -> None:
    with pytest.raises(YamlSyntaxError, match=r"^broken\.yaml:4:3: not valid YAML: ") as info:
        load_documents("a: 1\nb:\n  - x\n  y: 2\n", source="broken.yaml")
    assert info.value.exit_code == 3
    assert (info.value.source, info.value.line, info.value.column) == ("broken.yaml", 4, 3)
