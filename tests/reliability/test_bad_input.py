"""Bad input: each is a clear error naming the file, key or resource; nothing else is skipped and nothing is lost.

(YAML bombs, 10 MB files and bounded loading are the `scale` branch's part of the matrix.)
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.reliability.world import World, live_object
from writeback.cli import main

ROOT = Path(__file__).resolve().parents[2]
BAD_FILES = {
    "apps/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lost\n  bad: [unclosed\n",
    "apps/nokind.yaml": "apiVersion: v1\nmetadata: {name: nokind, namespace: ns-alpha}\ndata: {x: y}\n",
    "apps/nometa.yaml": "apiVersion: v1\nkind: ConfigMap\ndata: {x: y}\n",
    "apps/twice-1.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: twice, namespace: ns-alpha}\n",
    "apps/twice-2.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: twice, namespace: ns-alpha}\n",
    "apps/widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ns-alpha}\n"
    "spec: {size: 1}\n",
}


@pytest.fixture
def bad_world(tmp_path: Path) -> Iterator[World]:
    w = World.make(tmp_path, files={"alpha": BAD_FILES})
    twice = live_object("twice", "x")
    twice["metadata"]["namespace"] = "ns-alpha"
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns-alpha"},
              "spec": {"size": 1}}  # fmt: skip
    w.extra_live = [twice, widget]
    try:
        yield w
    finally:
        w.stop()


def test_bad_files_in_one_repo_are_each_named_and_the_good_drift_is_still_written_back(bad_world: World) -> None:
    done = bad_world.run()
    assert done.code == 2, done.stderr[-2000:]  # bad input, no run-time failure
    outcomes = sorted(done.outcomes("alpha"))
    assert outcomes == ["created", "failed"], done.results
    [bad] = [r for r in done.of("alpha") if r["outcome"] == "failed"]
    assert bad["reason"] == "bad-input", bad
    for named in ("apps/broken.yaml", "apps/nokind.yaml", "without kind", "apps/nometa.yaml", "without metadata.name",
                  "ConfigMap ns-alpha/twice", "declared more than once"):  # fmt: skip
        assert named in done.stderr, (named, done.stderr[-3000:])
    assert done.outcomes("beta") == ["created"]
    bad_world.assert_converged()
    [pr] = bad_world.fakes["alpha"].prs.values()
    assert "twice" not in pr["body"], "a resource Git declares twice is no 'new' resource"
    again = bad_world.run()  # nothing lost: the PR stays open, it is not retired while the input is bad
    assert sorted(again.outcomes("alpha")) == ["failed", "unchanged"], again.results
    bad_world.assert_converged()


def _leaves(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every key path of the example configuration, containers and leaves."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield (*path, k), v
            yield from _leaves(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _leaves(v, (*path, i))


def _key(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def test_a_config_with_each_key_wrong_in_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = YAML(typ="safe", pure=True).load((ROOT / "config" / "writeback.example.yaml").read_text())
    paths = [p for p, _ in _leaves(example)]
    assert len(paths) > 40, "the example covers the configuration"
    for path in paths:
        data = copy.deepcopy(example)
        holder = data
        for part in path[:-1]:
            holder = holder[part]
        value = holder[path[-1]]
        holder[path[-1]] = 12345 if isinstance(value, dict | list) else {"wrong": ["type"]}
        file = tmp_path / "wrong.yaml"
        file.write_text(json.dumps(data))
        code = main(["config", "validate", str(file)])
        err = capsys.readouterr().err
        assert code == 2, f"{_key(path)} = wrong type was accepted"
        # the error names the key (a list item's error may name a field of it; a secret reference its own key)
        # ... at its line and column (FILE:LINE:COL: key)
        assert re.search(rf"{re.escape(str(file))}:\d+:\d+: {re.escape(_key(path))}", err), (_key(path), err)
        assert "Traceback" not in err


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("{{ target }", "pr_title.j2:1: template syntax error"),
        ("{{ no_such_variable }}", "undefined variable(s) no_such_variable"),
        ("{% if security %}{{ fingerprint.no.such }}{% endif %}", "has no attribute"),
        ("{{ ''.__class__.__mro__ }}", "unsafe"),
    ],
    ids=["syntax", "undefined", "undefined-attribute", "sandboxed"],
)
def test_a_broken_template_fails_when_the_config_loads(world: World, template: str, says: str) -> None:
    templates = world.root / "templates"
    templates.mkdir()
    (templates / "pr_title.j2").write_text(template)
    world.target_overrides["beta"] = {"pull_request": {"templates_dir": str(templates)}}
    done = world.run()
    assert done.code == 2 and done.results == [], done
    assert "targets[1].pull_request.templates_dir" in done.stderr and says in done.stderr, done.stderr
    assert all(not fake.requests for fake in world.fakes.values()), "nothing was cloned, asked or pushed"
    assert not world.workdir.exists() or not any(world.workdir.iterdir())
