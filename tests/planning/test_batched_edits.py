"""A file's value edits go to the YAML editor in one call: one parse of the file, and one refusal never stops
the other edits of the same file."""

from __future__ import annotations

from tests.planning.repos import WEB, drift
from writeback.kube.paths import parse_path
from writeback.model import Op
from writeback.sources.applying import apply_locations
from writeback.sources.locations import Location
from writeback.yaml.edit import EditRefused
from writeback.yaml.edit.trees import _compose_cached

TEXT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: &labels
    app: web
spec:
  replicas: 2  # the HPA scales it
  selector:
    matchLabels: *labels
  template:
    spec:
      containers:
        - name: app
          image: registry.example.com/web:1.0.0
          env:
            - name: MODE
              value: normal
"""
IMAGE = "spec.template.spec.containers[name=app].image"


def _loc(path: str, live: object, op: Op = Op.CHANGE) -> Location:
    return Location(
        drift=drift(WEB, path, live=live, git=None, op=op), file="web.yaml", document=0, path=parse_path(path)
    )


def test_one_files_edits_are_applied_with_one_parse() -> None:
    locs = [
        _loc("spec.replicas", 5),
        _loc(IMAGE, "registry.example.com/web:1.0.4"),
        _loc("spec.template.spec.containers[name=app].env[name=MODE].value", "debug"),
        _loc("spec.paused", True, Op.ADD),
    ]
    texts = {"web.yaml": TEXT}
    _compose_cached.cache_clear()
    assert apply_locations(texts, locs) == [None, None, None, None]
    assert _compose_cached.cache_info().misses == 1  # the file was parsed once for all four edits
    assert texts["web.yaml"] == (
        TEXT.replace("replicas: 2", "replicas: 5")
        .replace("web:1.0.0", "web:1.0.4")
        .replace("value: normal", "value: debug")
        + "  paused: true\n"
    )


def test_a_refused_edit_does_not_stop_the_others_of_the_file() -> None:
    locs = [
        _loc("spec.replicas", 5),
        _loc("metadata.labels.app", "api"),  # under the anchor &labels: refused
        _loc(IMAGE, "registry.example.com/web:1.0.4"),
    ]
    texts = {"web.yaml": TEXT}
    outcomes = apply_locations(texts, locs)
    assert outcomes[0] is None and outcomes[2] is None
    assert isinstance(outcomes[1], EditRefused) and "anchor &labels" in str(outcomes[1])
    assert texts["web.yaml"] == TEXT.replace("replicas: 2", "replicas: 5").replace("web:1.0.0", "web:1.0.4")


def test_a_value_already_there_is_not_an_edit() -> None:
    texts = {"web.yaml": TEXT}
    assert apply_locations(texts, [_loc("spec.replicas", 2), _loc("spec.missing", None, Op.REMOVE)]) == [None, None]
    assert texts["web.yaml"] == TEXT
