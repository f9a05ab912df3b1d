"""Security: canaries never leave the process; refusals; YAML never builds Python objects.

Three canaries are planted: a live Secret's value (policy.include_secrets on), a live value at a
``policy.sensitive_paths`` field, and the forge token in its environment variable. A full offline cycle runs
(diff text and JSON with --explain, plan text and JSON, run --once with --debug), then every output is scanned for
any canary, in plain text or base64: stdout and stderr (the log lines and error messages), every request body the
fake forge got (PR bodies, comments), every object and ref of the pushed remote (commits, branches), and every file
the bot left in its work directory (clones, state). The service-mode scan (metric labels) runs on the control plane
in test_cluster_faults.py.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.world import TOKEN_ENV, World, live_object, manifest

SECRET_CANARY = "wbcanary-secret-4f1d2a9e"
SENSITIVE_CANARY = "wbcanary-apikey-8c3b7e10"
TOKEN_CANARY = "ghp_wbcanaryToken5e6f7a8b9c0d1e2f3a4b"
CANARIES = (SECRET_CANARY, SENSITIVE_CANARY, TOKEN_CANARY)


def encodings(text: str) -> set[str]:
    """The canary as plain text and as it reads inside any base64 (standard or URL-safe), at all 3 alignments."""
    raw = text.encode()
    out = {text}
    for pad in range(3):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            coded = enc(b"\0" * pad + raw).decode().rstrip("=")
            out.add(coded[(pad * 4 + 2) // 3 + 1 : -2])  # only characters that depend on the canary alone
    return {e for e in out if len(e) >= 12}


def assert_clean(where: str, text: str) -> None:
    for canary in CANARIES:
        for form in encodings(canary):
            assert form not in text, f"{where} holds the canary {canary!r} (as {form!r})"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(password: str, *, live: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "db", "namespace": "ns-alpha"}
    if live:
        meta = {**live_object("db", "x")["metadata"], "namespace": "ns-alpha"}
        meta["managedFields"][1]["fieldsV1"] = {"f:data": {"f:password": {}}}
    data = {"password": b64(password)}
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": meta, "data": data}


@pytest.fixture
def canary_world(tmp_path: Path) -> Iterator[World]:
    git_secret = "apiVersion: v1\nkind: Secret\ntype: Opaque\nmetadata:\n  name: db\n  namespace: ns-alpha\n"
    git_secret += f"data:\n  password: {b64('old-password')}\n"
    files = {"alpha": {"apps/alpha.yaml": manifest("alpha").replace("data:\n", "data:\n  apiKey: old-key\n"),
                       "apps/db.yaml": git_secret}}  # fmt: skip
    w = World.make(tmp_path, files=files)
    for fake in w.fakes.values():
        fake.tokens = {TOKEN_CANARY}
    w.target_overrides["alpha"] = {"policy": {"include_secrets": True, "sensitive_paths": ["data.apiKey"]}}
    cm = live_object("alpha", "v2")
    cm["data"]["apiKey"] = SENSITIVE_CANARY
    cm["metadata"]["managedFields"][1]["fieldsV1"] = {"f:data": {"f:setting": {}, "f:apiKey": {}}}
    w.live_bodies["alpha"] = cm
    w.extra_live = [secret(SECRET_CANARY, live=True)]
    w.write_inputs()
    try:
        yield w
    finally:
        w.stop()


def _cli(world: World, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, TOKEN_ENV: TOKEN_CANARY}
    done = subprocess.run([sys.executable, "-m", "writeback.cli", *args], capture_output=True, text=True, env=env)
    return done.returncode, done.stdout, done.stderr


def _git_everything(git_dir: Path) -> str:
    """Every object (commits, trees, blobs) and ref of a repository, as text."""
    objects = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout  # fmt: skip
    refs = subprocess.run(["git", "--git-dir", str(git_dir), "for-each-ref"], capture_output=True, text=True).stdout
    return objects.decode("utf-8", "replace") + refs


def test_canaries_never_leave_the_process(canary_world: World) -> None:
    w = canary_world
    checkout = w.root / "alpha-seed"  # a local clone of alpha's repo for diff and plan
    source = ["--config", str(w.config_path), "--target", "alpha", "--repo", str(checkout), "--live", str(w.dump)]
    outputs = []
    for args in (["diff", *source, "--explain"], ["diff", *source, "-o", "json", "--explain"], ["plan", *source],
                 ["plan", *source, "-o", "json"]):  # fmt: skip
        code, out, err = _cli(w, *args)
        assert code in (0, 1, 2), (args, err)
        outputs.append((" ".join(args[:1]), out + err))
    assert "redacted" in outputs[1][1]  # the secret and the sensitive field are there, redacted
    # run --once, at debug level, writing the live dump's values through the whole pipeline
    code, out, err = _cli(w, "--debug", *w.argv()[3:])
    assert code == 0, err[-3000:]
    outputs.append(("run --debug", out + err))
    [pr] = w.fakes["alpha"].prs.values()
    assert "setting: v2" in w.show("alpha", f"refs/heads/{pr['head']}", "apps/alpha.yaml")
    for where, text in outputs:
        assert_clean(f"`writeback {where}` output", text)
    for name, fake in w.fakes.items():
        for rec in fake.requests:
            body = json.dumps(rec.body) if rec.body is not None else ""
            assert_clean(f"{name}'s forge request {rec.method} {rec.path}", rec.path + body)
            headers = {k: v for k, v in rec.headers.items() if k.lower() != "authorization"}
            assert_clean(f"{name}'s forge request headers", json.dumps(headers))
        assert_clean(f"{name}'s PRs and comments", json.dumps([fake.prs, fake.comments]))
        assert_clean(f"{name}'s remote (commits, branches)", _git_everything(w.bares[name]))
    for path in sorted(p for p in w.workdir.rglob("*") if p.is_file()):
        if "/objects/" not in str(path):
            assert_clean(f"work file {path}", path.read_bytes().decode("utf-8", "replace"))
    for clone in (w.workdir / n / ".git" for n in w.names):
        assert_clean(f"the clone {clone}", _git_everything(clone))


def test_the_bot_never_pushes_to_the_base_or_a_protected_branch(world: World) -> None:
    world.target_overrides["beta"] = {"pull_request": {"branch_template": "release/{changeset}"}}
    world.target_overrides["alpha"] = {
        "pull_request": {"branch_template": "hotfix-{target}-{changeset}"},
        "git": {"protected_branches": ["hotfix-*"]},
    }
    before = {n: world.fakes[n].bare.refs() for n in world.names}
    done = world.run()
    assert done.code == 3, done.stderr[-2000:]
    for n, pattern in (("alpha", "hotfix-*"), ("beta", "release/*")):
        [result] = done.of(n)
        assert result["outcome"] == "failed" and f"matches the protected pattern '{pattern}'" in result["detail"]
        assert world.fakes[n].bare.refs() == before[n], "nothing was pushed"
        assert world.fakes[n].prs == {}


@pytest.mark.parametrize("where", ["git", "live", "config"])
def test_yaml_never_builds_python_objects(tmp_path: Path, where: str) -> None:
    marker = tmp_path / "pwned"
    payload = f'!!python/object/apply:os.system ["touch {marker}"]'
    repo, live, config = tmp_path / "repo", tmp_path / "live.yaml", tmp_path / "c.yaml"
    (repo / "apps").mkdir(parents=True)
    good = manifest("alpha")
    (repo / "apps" / "a.yaml").write_text(good.replace("v1  #", f"{payload}  #") if where == "git" else good)
    item = live_object("alpha", "v2")
    live.write_text(json.dumps(item) if where != "live" else f"apiVersion: v1\nkind: ConfigMap\nmetadata: {payload}\n")
    config.write_text(f"targets:\n- name: a\n  repo_url: {repo}\n  path: {payload}\n")
    args = ["diff", "--repo", str(repo), "--path", "apps", "--live", str(live)]
    if where == "config":
        args = ["config", "validate", str(config)]
    done = subprocess.run([sys.executable, "-m", "writeback.cli", *args], capture_output=True, text=True)
    assert not marker.exists(), "a YAML tag ran code"
    assert "Traceback" not in done.stderr, done.stderr
    if where == "git":  # the tagged node is read as the plain data it spells, and compared as such
        assert done.returncode == 0 and f'git ["touch {marker}"] -> live "v2"' in done.stdout, done.stdout
    else:  # a dump or a config whose node is no mapping: a clear error naming the file
        assert done.returncode == 2 and str(live if where == "live" else config) in done.stderr, done.stderr
