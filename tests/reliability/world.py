"""A small world for the fault matrix: several targets, each a real bare remote with one ConfigMap and its own
fake GitHub, one offline live dump where a person changed every ConfigMap, and the real `writeback run --once`
process (a subprocess: the product gets no test hooks).

    world = World.make(tmp_path, names=("alpha", "beta", "gamma"))
    done = world.run()                      # one cycle of the real CLI; done.results is its JSON output
    world.assert_converged()                # exactly one open, correct PR per target, nothing else

Faults are applied from outside: the fakes' ``inject``/``hold``, a pre-receive hook in a bare remote
(``PushGate``), the remote moved away, a tmpfs under a target's clone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.github_fake import (
    TOKEN,  # the fakes' token
    GitHubFake,
)
from tests.support.gitrepos import git, seed_bare
from tests.support.polling import wait_until

TOKEN_ENV = "WB_RELIABILITY_TOKEN"

T_GIT, T_EDIT = "2026-11-30T01:00:00Z", "2026-11-30T03:07:00Z"


def manifest(name: str, setting: str = "v1", *, extra: str = "") -> str:
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: ns-{name}\n{extra}"
        f"data:\n  setting: {setting}  # reviewed value\n"
    )


def live_object(name: str, setting: str) -> dict[str, Any]:
    """The ConfigMap as `kubectl get -o yaml --show-managed-fields` prints it after a person's kubectl edit."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": f"ns-{name}",
            "uid": f"00000000-0000-4000-8000-{abs(hash(name)) % 10**12:012d}",
            "resourceVersion": "4242",
            "creationTimestamp": T_GIT,
            "managedFields": [
                {"manager": "argocd-controller", "operation": "Update", "apiVersion": "v1", "time": T_GIT,
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}},
                {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1", "time": T_EDIT,
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:setting": {}}}},
            ],
        },
        "data": {"setting": setting},
    }  # fmt: skip


@dataclass
class Done:
    """One finished `writeback run --once`."""

    code: int
    results: list[dict[str, Any]]
    stderr: str

    def of(self, target: str) -> list[dict[str, Any]]:
        return [r for r in self.results if r["target"] == target]

    def outcomes(self, target: str) -> list[str]:
        return [r["outcome"] for r in self.of(target)]


@dataclass
class PushGate:
    """A pre-receive hook in a bare remote that holds every push (while armed) until released, from outside.

    Armed by the file ``armed``; each held push writes ``arrived-<pid>``; ``release`` lets them all through.
    A push whose new commits are not by the bot passes (a person's push is never held)."""

    bare: Path
    bot_email: str = "writeback@users.noreply.localhost"

    def __post_init__(self) -> None:
        self.dir = self.bare / "gate"
        self.dir.mkdir(exist_ok=True)
        hook = self.bare / "hooks" / "pre-receive"
        hook.write_text(
            "#!/bin/sh\n"
            f'gate="{self.dir}"\n'
            '[ -e "$gate/armed" ] || exit 0\n'
            "bot=0\n"
            "while read old new ref; do\n"
            f'  git log --format=%ae "$new" --not --all 2>/dev/null | grep -qx "{self.bot_email}" && bot=1\n'
            "done\n"
            '[ "$bot" = 1 ] || exit 0\n'
            'touch "$gate/arrived-$$"\n'
            'while [ ! -e "$gate/released" ]; do sleep 0.05; done\n'
            "exit 0\n"
        )
        hook.chmod(0o755)

    def arm(self) -> None:
        for p in self.dir.iterdir():
            p.unlink()
        (self.dir / "armed").touch()

    def arrived(self) -> int:
        return len(list(self.dir.glob("arrived-*")))

    def wait(self, count: int = 1, timeout: float = 60.0) -> None:
        what = f"{count} bot push(es) reaching the pre-receive hook of {self.bare}"
        wait_until(what, lambda: self.arrived() >= count, timeout=timeout, step=0.05)

    def release(self) -> None:
        (self.dir / "released").touch()

    def disarm(self) -> None:
        for p in self.dir.iterdir():
            p.unlink()


@dataclass
class World:
    root: Path
    names: tuple[str, ...]
    bares: dict[str, Path]
    fakes: dict[str, GitHubFake]
    live: dict[str, str]  # name -> the live value of data.setting
    target_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    config_overrides: dict[str, Any] = field(default_factory=dict)
    extra_live: list[dict[str, Any]] = field(default_factory=list)  # more dumped objects
    live_bodies: dict[str, dict[str, Any]] = field(default_factory=dict)  # a target's own dumped object, replaced
    cluster_mode: bool = False  # live from the targets' clusters (config ``clusters``), not from the dump

    @classmethod
    def make(
        cls, root: Path, *, names: Sequence[str] = ("alpha", "beta"), files: Mapping[str, Mapping[str, str]] = {}
    ) -> World:
        """``files``: more files of a target's repository (path -> text)."""
        bares = {}
        for n in names:
            bares[n] = root / f"{n}.git"
            seed_bare(bares[n], root / f"{n}-seed", {f"apps/{n}.yaml": manifest(n), **files.get(n, {})},
                      name="Alice", email="alice@example.com")  # fmt: skip
        fakes = {n: GitHubFake(bare=bares[n]).start() for n in names}
        return cls(root=root, names=tuple(names), bares=bares, fakes=fakes, live={n: "v2" for n in names})

    # ------------------------------------------------------------ inputs

    @property
    def workdir(self) -> Path:
        return self.root / "work"

    @property
    def dump(self) -> Path:
        return self.root / "live.json"

    @property
    def config_path(self) -> Path:
        return self.root / "writeback.yaml"

    def target(self, name: str) -> dict[str, Any]:
        t: dict[str, Any] = {
            "name": name,
            "repo_url": str(self.bares[name]),
            "path": "apps",
            "forge": {"kind": "github", "url": self.fakes[name].url, "project": "octo-org/gitops",
                      "token": {"env": TOKEN_ENV}, "max_retries": 2, "backoff_seconds": 0, "throttle": False,
                      "max_wait_seconds": 2, "timeout_seconds": 20},
            "pull_request": {"labels": ["writeback"], "reviewers": ["alice"], "assignees": ["bob"]},
        }  # fmt: skip
        for key, value in self.target_overrides.get(name, {}).items():
            if isinstance(value, dict) and isinstance(t.get(key), dict):
                t[key] = {**t[key], **value}
            else:
                t[key] = value
        return t

    def write_inputs(self) -> None:
        items = [self.live_bodies.get(n) or live_object(n, self.live[n]) for n in self.names] + self.extra_live
        self.dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        config = {"targets": [self.target(n) for n in self.names], **self.config_overrides}
        self.config_path.write_text(json.dumps(config))  # JSON is YAML

    def argv(self, *extra: str, workdir: Path | None = None) -> list[str]:
        live = [] if self.cluster_mode else ["--live", str(self.dump)]
        return [sys.executable, "-m", "writeback.cli", "run", "--once", "--config", str(self.config_path), *live,
                "--workdir", str(workdir or self.workdir), "--output", "json", *extra]  # fmt: skip

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {**os.environ, TOKEN_ENV: TOKEN, **(extra or {})}

    # ------------------------------------------------------------ running the real process

    def start(
        self, *extra: str, env: Mapping[str, str] | None = None, workdir: Path | None = None
    ) -> subprocess.Popen[str]:
        """The real CLI in a session of its own (so a SIGKILL of its group takes its git children too)."""
        self.write_inputs()
        argv = self.argv(*extra, workdir=workdir)
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env(env),
                                start_new_session=True)  # fmt: skip

    def run(self, *extra: str, env: Mapping[str, str] | None = None, timeout: float = 120.0) -> Done:
        proc = self.start(*extra, env=env)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill(proc)
            raise
        results = json.loads(out)["results"] if out.strip() else []
        return Done(code=proc.returncode, results=results, stderr=err)

    # ------------------------------------------------------------ checks

    def bot_branches(self, name: str) -> dict[str, str]:
        refs = self.fakes[name].bare.refs()
        return {r.removeprefix("refs/heads/"): sha for r, sha in refs.items() if r.startswith("refs/heads/writeback/")}

    def show(self, name: str, ref: str, path: str) -> str:
        return git("--git-dir", str(self.bares[name]), "show", f"{ref}:{path}")

    def assert_converged(self, *names: str, labels: bool = True) -> None:
        """Exactly one PR ever (open), on one bot branch whose file holds the live value; labels and people set."""
        for n in names or self.names:
            fake = self.fakes[n]
            prs = list(fake.prs.values())
            assert len(prs) == 1, f"{n}: {len(prs)} pull requests: {[(p['number'], p['state']) for p in prs]}"
            [pr] = prs
            assert pr["state"] == "open", f"{n}: the PR is {pr['state']}"
            branches = self.bot_branches(n)
            assert list(branches) == [pr["head"]], f"{n}: bot branches {sorted(branches)}, PR head {pr['head']}"
            text = self.show(n, f"refs/heads/{pr['head']}", f"apps/{n}.yaml")
            assert f"setting: {self.live[n]}  # reviewed value" in text, f"{n}: the branch holds\n{text}"
            if labels:
                assert pr["labels"] == ["writeback"], f"{n}: labels {pr['labels']}"
                assert pr["reviewers"] == ["alice"] and pr["assignees"] == ["bob"], f"{n}: {pr}"
            assert fake.violations == [], fake.violations

    def stop(self) -> None:
        problems = []
        for fake in self.fakes.values():
            try:
                fake.stop()
            except AssertionError as e:
                problems.append(str(e))
        if problems:
            raise AssertionError("\n".join(problems))


def kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the process and its whole group (git, ssh), then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
