"""The groups of decisions are properties of ``Decision``; ``diff --exit-code``, its help and docs/diff.md agree."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.process import ROOT, writeback
from tests.drift.support import configmap, to_yaml, write
from tests.support.cli import run_cli
from tests.support.gitrepos import commit, init_repo
from writeback.cli.exits import actionable_words
from writeback.model import Decision, Rule

ACTIONABLE = {Decision.WRITEBACK, Decision.FLAG, Decision.UNATTRIBUTED, Decision.NEW, Decision.DELETED}
T = "2026-03-04T03:12:55Z"


def test_the_groups_of_decisions() -> None:
    assert {d for d in Decision if d.actionable} == ACTIONABLE
    assert {d for d in Decision if d.written} == {Decision.WRITEBACK, Decision.FLAG}
    assert {d for d in Decision if d.by_person} == {Decision.WRITEBACK, Decision.FLAG, Decision.UNATTRIBUTED}
    assert {d for d in Decision if d.whole_object} == {Decision.NEW, Decision.DELETED}
    assert {d for d in Decision if d.held_back} == {Decision.IGNORE, Decision.PENDING, Decision.UNATTRIBUTED}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text)) & {d.value for d in Decision}


def test_help_and_docs_name_the_decisions_that_exit_1() -> None:
    want = {d.value for d in ACTIONABLE}
    assert _words(actionable_words()) == want
    text = writeback("diff", "--help").stdout
    codes = text.split("exit codes:\n", 1)[1].split("\n\n", 1)[0]
    (one,) = [line for line in codes.splitlines() if line.startswith("  1 ")]
    assert _words(one) == want, one
    flag = " ".join(text.split("--exit-code", 2)[2].split("\n  -", 1)[0].split())  # the flag's help, unwrapped
    assert _words(flag.split("drift:", 1)[1]) == want, flag
    docs = (ROOT / "docs" / "diff.md").read_text(encoding="utf-8")
    rule = docs.split("- `0`: it ran. With `--exit-code`:", 1)[1].split("\n- ", 1)[0]
    assert set(re.findall(r"`([a-z]+)`", rule)) == want, rule


def test_the_docs_list_every_rule_that_explain_names() -> None:
    diff_docs = (ROOT / "docs" / "diff.md").read_text(encoding="utf-8")
    table = diff_docs.split("Every rule, by the decision it makes", 1)[1].split("\n\n", 2)[1]
    assert set(re.findall(r"`([a-z-]+)`", table)) >= {r.value for r in Rule}, table
    drift_docs = (ROOT / "docs" / "drift.md").read_text(encoding="utf-8")
    decisions = drift_docs.split("## 4. Decisions", 1)[1].split("\n\n", 3)[2]  # the table of rules
    named = set(re.findall(r"`([a-z-]+)`", decisions))
    assert named >= {r.value for r in Rule} - {"brought-default", "missing-live", "created-live"}, decisions


def _git(name: str, data: dict[str, str]) -> dict[str, Any]:
    doc = configmap(name, data)
    doc["metadata"]["namespace"] = "prod"
    return doc


def _live(data: dict[str, str], *, owner: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "settings", "namespace": "prod", "uid": "u1", "resourceVersion": "7"}
    if owner is not None:
        meta["managedFields"] = [
            {"manager": "argocd-controller", "operation": "Update", "apiVersion": "v1", "time": T,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:level": {}}}},
            {"manager": owner, "operation": "Update", "apiVersion": "v1", "time": T, "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {"f:mode": {}}}},
        ]  # fmt: skip
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


@pytest.mark.parametrize(
    ("case", "decisions", "code"),
    [
        ("person", {"writeback"}, 1),
        ("controller", {"ignore"}, 0),
        ("no managedFields", {"unattributed"}, 1),
        ("missing live", {"deleted"}, 1),
        ("created live", {"new"}, 1),
        ("changed in Git since", {"pending"}, 0),
    ],
)
def test_exit_code_is_1_exactly_for_actionable_drift(tmp_path: Path, case: str, decisions: set[str], code: int) -> None:
    repo = tmp_path / "repo"
    init_repo(repo)
    write(repo, "apps/settings.yaml", _git("settings", {"mode": "strict", "level": "info"}))
    applied = commit(repo, "settings")
    live = _live({"mode": "relaxed", "level": "info"}, owner={"controller": "kube-controller-manager",
                 "no managedFields": None}.get(case, "kubectl-edit"))  # fmt: skip
    items = [live]
    if case == "missing live":
        items = [_live({"mode": "strict", "level": "info"}, owner="kubectl-edit")]
        write(repo, "apps/extra.yaml", _git("extra", {"a": "b"}))
        applied = commit(repo, "extra")
    if case == "created live":
        items = [_live({"mode": "strict", "level": "info"}, owner="kubectl-edit"), copy.deepcopy(live)]
        items[1]["metadata"]["name"] = "made-by-hand"
        items[1]["metadata"]["managedFields"] = items[1]["metadata"]["managedFields"][1:]
    if case == "changed in Git since":
        write(repo, "apps/settings.yaml", _git("settings", {"mode": "lenient", "level": "info"}))
        commit(repo, "mode")
    dump = tmp_path / "dump.yaml"
    dump.write_text(to_yaml({"apiVersion": "v1", "kind": "List", "items": items}))
    args = ("diff", "--repo", str(repo), "--path", "apps", "--live", str(dump), "--revision", applied)
    got, out, err = run_cli(*args, "--output", "json")
    assert got == 0, err
    assert {d["decision"] for d in json.loads(out)["drifts"]} == decisions, out
    got, _, err = run_cli(*args, "--exit-code")
    assert got == code, err


def test_explain_names_the_rule_that_decided_each_drift(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo)
    write(repo, "apps/settings.yaml", _git("settings", {"mode": "strict", "level": "info"}))
    applied = commit(repo, "settings")
    dump = tmp_path / "dump.yaml"
    dump.write_text(to_yaml(_live({"mode": "relaxed", "level": "info"}, owner="kubectl-edit")))
    args = ("diff", "--repo", str(repo), "--path", "apps", "--live", str(dump), "--revision", applied)
    _, out, _ = run_cli(*args, "--output", "json", "--explain")
    assert [(d["decision"], d["rule"]) for d in json.loads(out)["drifts"]] == [("writeback", "person")]
    _, plain, _ = run_cli(*args, "--output", "json")
    assert "rule" not in json.loads(plain)["drifts"][0]  # the contract without --explain is unchanged
    _, text, _ = run_cli(*args, "--explain", "--color", "never")
    assert "            reason: kubectl-edit (Update) changed a field Git declares" in text and "[rule: person]" in text
    _, text, _ = run_cli(*args, "--color", "never")
    assert "[rule:" not in text
