"""Flags and conventions as kubectl, flux and argocd have them (issue 19, section 3): no prefix abbreviations, one
validated namespace per ``-n``, ``-n`` on ``break-glass status``, ``--path FILE``, ``kubectl kustomize`` when no
kustomize is installed, and completion through kubectl (``kubectl_complete-writeback``) and in fish."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

from tests.cli.process import BIN, DEMO, ROOT, environment, script, writeback
from tests.support.controllers import argocd_app
from tests.support.gitrepos import commit, init_repo
from writeback.cli import build_parser, subparsers
from writeback.cli.completion import script as completion_script

GIT_SIDE = ["--repo", ".", "--path", "examples/hotfix/gitops"]


def test_no_parser_takes_a_prefix_of_a_flag() -> None:
    tree = subparsers(build_parser())
    assert len(tree) > 10
    assert [path for path, p in tree.items() if p.allow_abbrev] == []
    for args, unknown in [
        (["run", "--once", "--repo", "/x", "--forge", "github"], "--repo /x"),  # was silently --repo-url
        (["diff", *DEMO[:2], "--rep", "."], "--rep ."),
        (["diff", *DEMO[:2], "--pat", "examples"], "--pat examples"),
        (["diff", *DEMO, "--exp"], "--exp"),
    ]:
        result = writeback(*args)
        assert result.returncode == 2 and result.stdout == "", args
        assert result.stderr.splitlines()[-1] == f"writeback: error: unrecognized arguments: {unknown}", args


def test_namespace_takes_one_valid_name() -> None:
    swallowed = writeback("diff", *DEMO[:2], "--repo", ".", "-n", "shop", "examples/hotfix/gitops")
    assert swallowed.returncode == 2  # the path is no second namespace
    assert swallowed.stderr.splitlines()[-1] == "writeback: error: unrecognized arguments: examples/hotfix/gitops"
    for bad in ("Shop", "shop_1", "-shop", "a" * 64, "shop.prod"):
        result = writeback("diff", *DEMO, f"--namespace={bad}")
        assert result.returncode == 2, bad
        assert f"argument --namespace/-n: {bad!r} is not a namespace name" in result.stderr, result.stderr
    repeated = writeback("diff", *DEMO, "-n", "shop", "-n", "payments", "-o", "json")
    assert repeated.returncode == 0, repeated.stderr


def test_break_glass_status_takes_the_namespace_as_kubectl_does(
    controlplane: Any, crds: list[str], namespace: str
) -> None:
    argocd_app(controlplane, namespace, "web")
    kc = ["--kubeconfig", controlplane.kubeconfig]
    start = writeback("break-glass", "start", "--argocd-app", f"{namespace}/web", "--reason", "incident", "--ttl",
                      "1h", "--actor", "alice", *kc)  # fmt: skip
    assert start.returncode == 0, start.stderr
    for flag in ("-n", "--namespace", "--controller-namespace"):
        listed = writeback("break-glass", "status", flag, namespace, "-o", "json", *kc)
        assert listed.returncode == 0, (flag, listed.stderr)
        assert [i["name"] for i in json.loads(listed.stdout)] == ["web"], flag
    elsewhere = writeback("break-glass", "status", "-n", "kube-public", *kc)
    assert elsewhere.returncode == 0 and elsewhere.stdout == "no break-glass\n"
    bad = writeback("break-glass", "status", "-n", "Not_A_Namespace", *kc)
    assert bad.returncode == 2 and "is not a namespace name" in bad.stderr
    end = writeback("break-glass", "end", "--argocd-app", f"{namespace}/web", "--no-backport", "--force", *kc)
    assert end.returncode == 0, end.stderr


def test_path_may_name_one_manifest_file_and_names_the_branch_after_it() -> None:
    file = "examples/hotfix/gitops/apps/checkout/deployment.yaml"
    plan = writeback("plan", "--live", "examples/hotfix/live.yaml", "--repo", ".", "--path", file, "-o", "json")
    assert plan.returncode == 0, plan.stderr
    [cs] = json.loads(plan.stdout)["changesets"]
    assert cs["target"] == "checkout-deployment" and cs["pullRequest"]["branch"] == (
        "writeback/checkout-deployment/checkout-deployment"
    )  # not writeback/deployment.yaml/deployment.yaml
    assert [f["path"] for f in cs["files"]] == [file]
    run = writeback("run", "--once", "--dry-run", "--live", "examples/hotfix/live.yaml", "--path", file,
                    "--repo-url", "https://github.com/acme/gitops.git", "--forge", "github",
                    "--token-env", "WB_NO_SUCH_TOKEN")  # fmt: skip
    assert run.stdout.startswith("checkout-deployment  failed"), run.stdout  # the token is missing: the name shows


def test_kubectl_kustomize_renders_when_no_kustomize_is_installed(kustomize_bin: Path, tmp_path: Path) -> None:
    repo = tmp_path / "gitops"
    init_repo(repo)
    commit(repo, "overlay", files={
        "base/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: slow\n",
        "base/kustomization.yaml": "resources: [cm.yaml]\n",
        "prod/kustomization.yaml": "resources: [../base]\nnamespace: shop\nnamePrefix: prod-\n",
    })  # fmt: skip
    live = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: prod-settings\n  namespace: shop\n  managedFields:\n"
            "  - {manager: kubectl-edit, operation: Update, apiVersion: v1, time: '2026-01-01T00:00:00Z',\n"
            "     fieldsType: FieldsV1, fieldsV1: {'f:data': {'f:mode': {}}}}\ndata:\n  mode: fast\n")  # fmt: skip
    only_kubectl = tmp_path / "bin"
    only_kubectl.mkdir()
    (only_kubectl / "kubectl").symlink_to(kustomize_bin.parent / "kubectl")
    git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
    (only_kubectl / "git").symlink_to(git)
    env = environment(PATH=f"{only_kubectl}")
    env.pop("WRITEBACK_KUSTOMIZE", None)
    args = ["diff", "--live", "-", "--repo", str(repo), "--path", "prod", "-o", "json"]
    result = writeback(*args, stdin=live, env=env)
    assert result.returncode == 0, result.stderr
    [drift] = json.loads(result.stdout)["drifts"]  # the overlay was rendered: prod-settings in shop
    assert (drift["resource"]["name"], drift["path"], drift["decision"]) == ("prod-settings", "data.mode", "writeback")
    with_kustomize = writeback(*args, stdin=live, env=environment(WRITEBACK_KUSTOMIZE=str(kustomize_bin)))
    assert json.loads(with_kustomize.stdout)["drifts"] == json.loads(result.stdout)["drifts"]
    (only_kubectl / "kubectl").unlink()
    neither = writeback(*args, stdin=live, env=env)
    assert neither.returncode == 2 and "neither kustomize nor kubectl is on PATH" in neither.stderr


def _complete(kubectl: Path, *words: str) -> tuple[list[str], str]:
    """What the real kubectl completes for ``kubectl writeback WORDS`` (its hidden ``__complete`` command, which
    the shell scripts of ``kubectl completion`` call)."""
    env = environment(PATH=f"{BIN}:{kubectl.parent}", HOME=str(kubectl.parent))
    done = subprocess.run([str(kubectl), "__complete", "writeback", *words], env=env, capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    lines = done.stdout.splitlines()
    return [line.split("\t", 1)[0] for line in lines[:-1]], lines[-1]


def test_kubectl_completes_writeback(kustomize_bin: Path) -> None:
    assert script("kubectl_complete-writeback").is_file()  # pip installs it beside kubectl-writeback
    kubectl = kustomize_bin.parent / "kubectl"
    assert _complete(kubectl, "") == (["diff", "plan", "run", "config", "break-glass", "completion"], ":4")
    assert _complete(kubectl, "br") == (["break-glass"], ":4")
    assert _complete(kubectl, "break-glass", "st") == (["start", "status"], ":4")
    flags, directive = _complete(kubectl, "diff", "--li")
    assert flags == ["--live"] and directive == ":4"
    assert _complete(kubectl, "diff", "-o", "") == (["text", "json", "yaml"], ":4")
    assert _complete(kubectl, "diff", "--live", "") == ([], ":0")  # a path: the shell completes file names
    assert _complete(kubectl, "config", "validate", "") == ([], ":0")
    assert _complete(kubectl, "completion", "") == (["bash", "zsh", "fish"], ":4")


def _fish_lines(text: str) -> list[list[str]]:
    return [shlex.split(line) for line in text.splitlines() if line.startswith("complete -c writeback")]


def test_fish_completion_covers_every_command_and_flag() -> None:
    """Every flag of every (sub)command is offered under that command; paths complete as paths. (Checked by hand
    in fish 3.6 too: `complete -C "writeback diff --li"` gives --live, `"writeback break-glass st"` start and
    status; fish is no requirement of the test suite.)"""
    result = writeback("completion", "fish")
    assert result.returncode == 0 and result.stdout == completion_script("fish")
    offered: dict[tuple[str, str], list[str]] = {}  # (condition, long flag) -> the line
    for line in _fish_lines(result.stdout):
        if "-n" in line:
            for i, word in enumerate(line[:-1]):
                if word == "-l":
                    offered[(line[line.index("-n") + 1], line[i + 1])] = line
    for path, p in subparsers(build_parser()).items():
        if not path:
            continue
        for action in p._actions:
            for option in (o for o in action.option_strings if o.startswith("--")):
                if action.help != argparse.SUPPRESS and option not in ("--help", "--debug", "--color"):
                    assert (f"_shtab_writeback_using {' '.join(path)}", option[2:]) in offered, (path, option)
    assert "__fish_complete_path" in " ".join(offered[("_shtab_writeback_using diff", "live")])
    assert writeback("completion", "tcsh").returncode == 2  # bash, zsh and fish are offered


def test_the_completion_scripts_name_no_file_of_this_machine() -> None:
    for shell in ("bash", "zsh", "fish"):
        text = completion_script(shell)
        assert str(ROOT) not in text and str(Path.home()) not in text, shell
