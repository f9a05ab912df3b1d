"""Fuzzing the configuration loader: a valid configuration with random keys set, removed or mistyped, as data
and as YAML text (with lines duplicated or cut), either loads or fails with a ConfigError that names the file;
nothing else escapes, and a secret written inline is never echoed."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzzing import fuzz
from writeback.config import Config, load_config, parse_config
from writeback.errors import ConfigError

CANARY = "ghp_CANARY0123456789abcdefCANARY"
VALID: dict[str, Any] = {
    "clusters": [{"name": "prod", "kubeconfig": "/etc/kube/config", "context": "prod"}],
    "targets": [
        {
            "name": "shop",
            "cluster": "prod",
            "repo_url": "https://git.example.com/acme/shop.git",
            "path": "apps",
            "selectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "namespaces": ["shop"]}],
            "forge": {"kind": "github", "project": "acme/shop", "token": {"env": "GH_TOKEN"}},
            "git": {"ssh_key": {"file": "/run/secrets/key"}},
            "pull_request": {"labels": ["writeback"], "branch_template": "writeback/{target}/{changeset}"},
            "schedule": {"interval_seconds": 300, "cron": "*/5 * * * *"},
            "policy": {"sensitive_paths": ["data.*"], "presets": ["istio"]},
            "ignore": [{"paths": ["spec.replicas"], "kind": "Deployment"}],
        }
    ],
    "metrics": {"address": "0.0.0.0:9090"},
    "watch": {"enabled": True},
}
SECRET_PLACES = [
    ("targets", 0, "forge", "token"),
    ("targets", 0, "forge", "private_key"),
    ("targets", 0, "git", "ssh_key"),
    ("targets", 0, "pull_request", "fingerprint_key"),
]
VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=12),
        st.sampled_from(["", "main", "{target}", "*/5 * * * *", "a..b", "x.lock", "user:pw@host", "[", "**"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6,
)


def _places(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path and list position in ``data``."""
    out = [path]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _places(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _places(v, (*path, i))
    return out


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    """VALID with 0-3 random changes: a value replaced, a key or item removed, or an unknown key added."""
    data = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(0, 3))):
        place = draw(st.sampled_from(_places(data)))
        if not place:
            continue
        parent: Any = data
        for part in place[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["set", "remove", "add"]))
        if action == "set":
            parent[place[-1]] = draw(VALUES)
        elif action == "remove":
            del parent[place[-1]]
        elif isinstance(parent[place[-1]], dict):
            parent[place[-1]][draw(st.text(min_size=1, max_size=8))] = draw(VALUES)
    if draw(st.booleans()):  # a secret pasted where a reference belongs
        place = draw(st.sampled_from(SECRET_PLACES))
        parent = data
        for part in place[:-1]:
            if isinstance(parent, dict) and isinstance(part, str):
                parent = parent.get(part)
            elif isinstance(parent, list) and isinstance(part, int) and part < len(parent):
                parent = parent[part]
            else:
                return data
        if isinstance(parent, dict):
            parent[place[-1]] = draw(st.sampled_from([CANARY, {"env": "X", "file": CANARY}, {"value": CANARY}]))
    return data


def _check_error(err: ConfigError, source: str) -> None:
    text = str(err)
    assert source in text, text
    assert CANARY not in text, text


@fuzz(ci=100)
@example(data={"targets": []})  # found: an empty list of targets loaded as a valid configuration
@example(data={"targets": [{"name": "a", "repo_url": "r", "x\x85y": 1}]})  # found: a key's NEL broke the line
@given(configs())
def test_configuration_data_loads_or_fails_naming_the_source(data: dict[str, Any]) -> None:
    try:
        got = parse_config(data, source="cfg.yaml")
    except ConfigError as err:
        _check_error(err, "cfg.yaml")
        for line in str(err).splitlines()[1:]:
            assert line.strip().startswith("cfg.yaml"), line
    else:
        assert isinstance(got, Config) and got.targets


def _texts() -> st.SearchStrategy[str]:
    def cut(text_and_picks: tuple[str, list[int]]) -> str:
        text, picks = text_and_picks
        lines = text.splitlines(keepends=True)
        for pick in picks:  # duplicate a line (a key given twice) or drop one
            n = pick % max(len(lines), 1)
            if lines:
                lines.insert(n, lines[n]) if pick % 2 else lines.pop(n)
        return "".join(lines)

    dumped = configs().map(lambda d: yaml.safe_dump(d, sort_keys=False, allow_unicode=True))
    return st.one_of(
        dumped,
        st.tuples(dumped, st.lists(st.integers(0, 200), min_size=1, max_size=3)).map(cut),
        st.text(max_size=40),
        st.integers(1, 400).map(lambda n: "targets: " + "[" * n + "]" * n),  # deep nesting
    )


@fuzz(ci=60)
@example(text="targets: " + "[" * 3000)  # found: deep nesting raised RecursionError
@example(text=f"targets:\n- forge:\n    token: {CANARY}\n    token: {CANARY}x\n")  # found: echoed the value
@given(_texts())
def test_configuration_files_load_or_fail_naming_the_file(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "writeback.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            got = load_config(path)
        except ConfigError as err:
            _check_error(err, str(path))
        else:
            assert isinstance(got, Config)


def test_the_base_configuration_is_valid() -> None:
    got = parse_config(copy.deepcopy(VALID), source="cfg.yaml")
    assert got.targets[0].forge is not None and got.targets[0].forge.project == "acme/shop"
    with pytest.raises(ConfigError, match=r"cfg\.yaml: targets\[0\]\.forge\.token: .*inline secrets"):
        parse_config(
            {**VALID, "targets": [{**VALID["targets"][0], "forge": {"kind": "github", "token": CANARY}}]},
            source="cfg.yaml",
        )
