"""Input and output conventions of the real ``writeback`` process: stdin, stdout/stderr, colour, global options,
usage errors, help, completion and the kubectl plugin name."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.cli.process import DEMO, ESC, ROOT, environment, on_terminal, script, writeback
from tests.support.gitrepos import init_repo

LIVE = (ROOT / "examples" / "hotfix" / "live.yaml").read_text(encoding="utf-8")
GIT_SIDE = ["--repo", ".", "--path", "examples/hotfix/gitops"]


def test_live_dash_reads_the_dump_from_stdin() -> None:
    piped = writeback("diff", "--live", "-", *GIT_SIDE, "--output", "json", stdin=LIVE)
    from_file = writeback("diff", *DEMO, "--output", "json")
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["drifts"] == json.loads(from_file.stdout)["drifts"] != []
    plan = writeback("plan", "--live", "-", *GIT_SIDE, stdin=LIVE)
    assert plan.returncode == 0 and "offline dump from standard input" in plan.stdout  # the PR body names it


def test_a_bad_document_on_stdin_is_named_stdin_with_line_and_column() -> None:
    bad = LIVE + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: broken\n  namespace: shop\n"
    result = writeback("diff", "--live", "-", *GIT_SIDE, stdin=bad)
    assert result.returncode == 2 and result.stdout == ""  # a dump that cannot be read stops before any report
    assert result.stderr.count("<stdin>:") == 1
    assert result.stderr.startswith("writeback: error: --live -: the dump cannot be used:\n")
    assert re.search(r"^  <stdin>:\d+:\d+: not valid YAML: ", result.stderr, re.MULTILINE), result.stderr


def test_stdout_is_only_the_output_and_each_problem_is_said_once_on_stderr(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "hotfix" / "gitops", repo / "gitops")
    (repo / "gitops" / "apps" / "checkout" / "broken.yaml").write_text("kind: ConfigMap\nmetadata: {name: x}\n")
    init_repo(repo)
    args = ["--live", str(ROOT / "examples" / "hotfix" / "live.yaml"), "--repo", str(repo), "--path", "gitops"]
    text = writeback("plan", *args)
    assert text.returncode == 2  # the unusable Git file is bad input; the rest is still planned
    assert "note:" not in text.stdout and "error" not in text.stdout and "broken.yaml" not in text.stdout
    assert text.stdout.startswith("changeset ")
    assert text.stderr.count("broken.yaml") == 1 and "a manifest without apiVersion" in text.stderr
    assert text.stderr.count("writeback: note: offline mode") == 1
    as_json = writeback("plan", *args, "--output", "json")
    doc = json.loads(as_json.stdout)  # stdout parses as a whole: `| jq` works
    assert any("a manifest without apiVersion" in p["message"] for p in doc["problems"])
    assert any("offline mode" in n for n in doc["notes"])
    diff = writeback("diff", *args, "--output", "json")
    assert json.loads(diff.stdout)["problems"] and diff.stderr.count("a manifest without apiVersion") == 1


def test_colour_on_a_terminal_only_and_never_with_no_color() -> None:
    tty = on_terminal("plan", *DEMO)
    assert tty.code == 0
    assert f"{ESC}32m+            - name: PAYMENT_TIMEOUT_MS" in tty.tty  # added lines green, as git diff
    assert f"{ESC}36m@@ " in tty.tty and f"{ESC}1mdiff --git " in tty.tty
    assert on_terminal("plan", *DEMO, env=environment(NO_COLOR="1")).tty.count(ESC) == 0
    assert on_terminal("plan", *DEMO, "--color", "never").tty.count(ESC) == 0
    forced = writeback("diff", *DEMO, "--color=always")
    assert f"{ESC}32mwriteback" in forced.stdout and f"{ESC}2mignore" in forced.stdout  # decisions in colour
    assert f"{ESC}36mnote:" in forced.stderr
    no_color = writeback("diff", *DEMO)
    assert ESC not in no_color.stdout + no_color.stderr
    assert no_color.stdout == forced.stdout.replace(f"{ESC}0m", "").replace(f"{ESC}32m", "").replace(
        f"{ESC}2m", ""
    ).replace(f"{ESC}1m", "").replace(f"{ESC}31m", "").replace(f"{ESC}36m", "")  # off a terminal: the same text


def test_diff_shows_progress_on_a_terminal_only() -> None:
    tty = on_terminal("diff", *DEMO, stream="stderr")
    assert tty.code == 0
    assert "gitops: read Git" in tty.tty or "gitops: compare" in tty.tty  # the target and its step
    assert "gitops:" not in tty.piped and "gitops:" not in writeback("diff", *DEMO).stderr


def test_global_options_work_after_the_subcommand() -> None:
    after = writeback("diff", *DEMO, "--debug", "--color", "never")
    assert after.returncode == 0, after.stderr
    assert "writeback: debug: writeback.cli: " in after.stderr  # log records read as every other message
    before = writeback("--color", "always", "diff", *DEMO)
    assert before.returncode == 0 and ESC in before.stdout
    nested = writeback("config", "validate", "config/writeback.example.yaml", "--debug")
    assert nested.returncode == 0, nested.stderr


def test_usage_errors_show_the_subcommand_usage_and_one_prefix() -> None:
    for args, message in [
        (["diff", "--bogus"], "unrecognized arguments: --bogus"),
        (["diff", "-o", "xml"], "argument --output/-o: invalid choice: 'xml'"),
        (["config", "validate"], "the following arguments are required: FILE"),
    ]:
        result = writeback(*args)
        assert result.returncode == 2 and result.stdout == ""
        usage, error = result.stderr.splitlines()[0], result.stderr.splitlines()[-1]
        assert usage.startswith(f"usage: writeback {' '.join(a for a in args if not a.startswith('-') and a != 'xml')}")
        assert error == f"writeback: error: {message}" or error.startswith(f"writeback: error: {message}")
        assert result.stderr.count("error:") == 1
    bare = writeback()
    assert bare.returncode == 2 and bare.stdout == ""
    assert bare.stderr.startswith("usage: writeback ") and "COMMAND" in bare.stderr and "diff" in bare.stderr


HELP = {  # each command and the environment variables its help must name
    ("diff",): ["KUBECONFIG", "WRITEBACK_KUSTOMIZE", "WRITEBACK_HELM", "NO_COLOR"],
    ("plan",): ["KUBECONFIG", "WRITEBACK_KUSTOMIZE", "WRITEBACK_HELM"],
    ("run",): ["KUBECONFIG", "GITHUB_TOKEN", "--token-env"],
    ("config", "validate"): [],
    ("break-glass", "start"): ["KUBECONFIG", "USER"],
    ("break-glass", "end"): ["KUBECONFIG", "--token-env"],
    ("break-glass", "status"): ["KUBECONFIG"],
    ("break-glass", "expire"): ["KUBECONFIG"],
    ("completion",): [],
}


def test_help_shows_examples_exit_codes_and_environment() -> None:
    with ThreadPoolExecutor(max_workers=3) as pool:  # independent processes: side by side
        results = dict(zip(HELP, pool.map(lambda command: writeback(*command, "--help"), HELP), strict=True))
    for command, variables in HELP.items():
        result = results[command]
        assert result.returncode == 0, command
        text = result.stdout
        examples = text.split("examples:\n", 1)[1].split("\n\n", 1)[0]
        assert f"writeback {' '.join(command)}" in examples or "writeback completion" in examples, command
        codes = text.split("exit codes:\n", 1)[1].split("\n\n", 1)[0]
        assert "  0 " in codes and "  2 " in codes, command
        for name in variables:
            assert name in text.split("environment:\n", 1)[1], (command, name)
        if command[0] == "break-glass":  # the actions have descriptions, not only a one-line help
            description = text.split("\n\n", 2)[1]
            assert len(description) > 80 and not description.startswith("  -"), command


def test_run_help_does_not_offer_repo() -> None:
    text = writeback("run", "--help").stdout
    assert "--repo-url" in text and "--repo " not in text and "--repo DIR" not in text
    assert "--exit-code" in text


def test_bash_completion_script_completes_commands_and_flags() -> None:
    result = writeback("completion", "bash")
    assert result.returncode == 0 and "complete" in result.stdout
    probe = (
        "source /dev/stdin\n"
        "complete -p writeback\n"
        'COMP_WORDS=(writeback br); COMP_CWORD=1; _shtab_writeback; echo "commands: ${COMPREPLY[*]}"\n'
        'COMP_WORDS=(writeback diff --li); COMP_CWORD=2; _shtab_writeback; echo "flags: ${COMPREPLY[*]}"\n'
        'COMP_WORDS=(writeback break-glass st); COMP_CWORD=2; _shtab_writeback; echo "actions: ${COMPREPLY[*]}"\n'
    )
    shell = subprocess.run(["bash", "-c", probe], input=result.stdout, capture_output=True, text=True, timeout=60)
    assert shell.returncode == 0, shell.stderr
    lines = dict(line.split(": ", 1) for line in shell.stdout.splitlines() if ": " in line)
    assert "break-glass" in lines["commands"].split()
    assert "--live" in lines["flags"].split()
    assert {"start", "status"} <= set(lines["actions"].split())


def test_zsh_completion_script_is_a_compdef_for_writeback() -> None:
    result = writeback("completion", "zsh")
    assert result.returncode == 0
    assert result.stdout.startswith("#compdef writeback")
    for word in ("diff", "plan", "run", "break-glass", "--live", "--exit-code", "validate"):
        assert word in result.stdout
    assert writeback("completion", "fish").returncode == 0  # fish too (tests/cli/test_flags.py)


def test_kubectl_plugin_is_installed_and_names_itself_kubectl_writeback(tmp_path: Path) -> None:
    plugin = script("kubectl-writeback")
    assert os.access(plugin, os.X_OK)
    result = writeback("diff", "--help", name="kubectl-writeback")
    assert result.returncode == 0 and result.stdout.startswith("usage: kubectl writeback diff ")
    piped = writeback("diff", "--live", "-", *GIT_SIDE, "--output", "json", stdin=LIVE, name="kubectl-writeback")
    assert piped.returncode == 0 and json.loads(piped.stdout)["drifts"]


def test_kubectl_finds_the_plugin(kustomize_bin: Path) -> None:
    kubectl = kustomize_bin.parent / "kubectl"  # the real kubectl of the test control plane
    env = environment(HOME=str(kustomize_bin.parent))
    found = subprocess.run([str(kubectl), "plugin", "list"], env=env, capture_output=True, text=True, timeout=60)
    assert "kubectl-writeback" in found.stdout, found.stdout + found.stderr
    args = [str(kubectl), "writeback", "diff", "--live", "-", *GIT_SIDE, "--output", "json"]
    result = subprocess.run(args, input=LIVE, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["drifts"]
    usage = subprocess.run([str(kubectl), "writeback", "--bogus"], env=env, capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: kubectl writeback ")
