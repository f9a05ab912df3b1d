"""Fixtures for the forge lifecycle tests: a real bare git remote, a fake forge over HTTP, the real adapters."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.forge_server import FakeForge
from tests.fakes.github_fake import GitHubFake
from tests.fakes.gitlab_fake import GitLabFake
from tests.support.gitrepos import git, seed_bare
from writeback.adapters.forges import github, gitlab
from writeback.adapters.forges.base import Forge, RetryPolicy
from writeback.adapters.forges.github_api import github_forge
from writeback.adapters.forges.gitlab_api import gitlab_forge
from writeback.adapters.git.repo import GitRepo, Identity
from writeback.adapters.templating import load_templates
from writeback.kube.pathtypes import Key
from writeback.kube.refs import ObjectRef
from writeback.model import CapturedHotfix, ChangeSet, Drift, EnsureResult, FilePatch, ManagerOperation, Op, Review
from writeback.pipeline.publish_settings import PublishSettings
from writeback.pipeline.publishing import Publication, Publisher, publish
from writeback.pipeline.pull_requests import PullRequestText
from writeback.pr.text import reverted_for

BOT = Identity(name="writeback[bot]", email="writeback@users.noreply.localhost")
TEST_POLICY = RetryPolicy(max_retries=3, max_wait_seconds=5.0, backoff_factor=0.0, throttle=False)
WEB_V1 = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web  # the shop\nspec:\n  replicas: 2\n"
WEB = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="shop", name="web")


@dataclass
class Remote:
    """A real bare repository with branch main holding apps/web.yaml, and a person's clone to push from."""

    bare: Path
    person: Path

    def refs(self) -> dict[str, str]:
        out = git("--git-dir", str(self.bare), "for-each-ref", "--format=%(refname) %(objectname)")
        return dict(line.split(" ", 1) for line in out.splitlines())

    def sha(self, branch: str) -> str:
        return git("--git-dir", str(self.bare), "rev-parse", f"refs/heads/{branch}")

    def show(self, branch: str, path: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(self.bare), "show", f"refs/heads/{branch}:{path}"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip

    def person_commit(self, branch: str, path: str, text: str, *, email: str = "alice@example.com") -> str:
        """A person pushes a commit to ``branch`` (the bot's branch, or main)."""
        git("fetch", "-q", "origin", cwd=self.person)
        git("checkout", "-q", "-B", branch, f"origin/{branch}", cwd=self.person)
        (self.person / path).parent.mkdir(parents=True, exist_ok=True)
        (self.person / path).write_text(text)
        git("add", path, cwd=self.person)
        git("-c", f"user.email={email}", "-c", "user.name=Alice", "commit", "-q", "-m", "person edit", cwd=self.person)
        git("push", "-q", "origin", f"HEAD:refs/heads/{branch}", cwd=self.person)
        return git("rev-parse", "HEAD", cwd=self.person)


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    bare, person = tmp_path / "remote.git", tmp_path / "person"
    seed_bare(bare, person, {"apps/web.yaml": WEB_V1}, name="Alice", email="alice@example.com")
    return Remote(bare=bare, person=person)


def change_set(
    *, replicas: int, cs_id: str = "web-1", review: Review = Review.STANDARD, before: str = WEB_V1
) -> ChangeSet:
    after = before.replace("replicas: 2", f"replicas: {replicas}")
    drift = Drift(
        resource=WEB, path=(Key("spec"), Key("replicas")), op=Op.CHANGE, live=replicas, git=2,
        manager="kubectl-edit", operation=ManagerOperation.UPDATE, time="2026-11-30T03:00:00Z",
    )  # fmt: skip
    return ChangeSet(
        id=cs_id, target="prod", review=review, fingerprint=f"f{replicas:04d}{review.value[:3]}".encode().hex(),
        files=(FilePatch(path="apps/web.yaml", before=before, after=after),), drifts=(drift,),
    )  # fmt: skip


def gone(cs_id: str = "web-1") -> ChangeSet:
    return ChangeSet(id=cs_id, target="prod", review=Review.STANDARD, fingerprint="0")


@dataclass
class Env:
    """One forge (fake + adapter), the bot's git clone and the publishing settings."""

    kind: str
    fake: Any
    forge: Forge
    remote: Remote
    workdir: Path
    settings: PublishSettings
    templates: dict[str, str] = field(default_factory=load_templates)

    def cycle(
        self,
        *change_sets: ChangeSet,
        dry_run: bool = False,
        hotfixes: tuple[CapturedHotfix, ...] = (),
        after_sync: Callable[[], None] | None = None,
        **settings: Any,
    ) -> list[EnsureResult]:
        """One publishing cycle as ``run`` does it: sync the clone, render, publish (``hotfixes``: the captured
        changes the controller reverted, as the service passes them; ``after_sync``: what happens meanwhile)."""
        repo = GitRepo(url=str(self.remote.bare), workdir=self.workdir, bot=BOT)
        base_sha = repo.sync(base="main")
        if after_sync is not None:
            after_sync()
        s = dataclasses.replace(self.settings, dry_run=dry_run, **settings)
        text = PullRequestText(
            templates=self.templates, cluster="prod-eu", forge=self.forge.kind, security_labels=s.security_labels
        )
        pubs = [
            Publication(change_set=cs, rendered=text.render(cs, hotfixes=hotfixes), reverted=reverted_for(cs, hotfixes))
            for cs in change_sets
        ]
        return publish(
            publisher=Publisher(forge=self.forge, repo=repo, base_sha=base_sha, settings=s), publications=pubs
        )


def make_fake(kind: str, bare: Path, **kwargs: Any) -> FakeForge:
    return (GitHubFake if kind == "github" else GitLabFake)(bare=bare, **kwargs).start()


def make_forge(kind: str, fake: FakeForge, *, policy: RetryPolicy = TEST_POLICY) -> Forge:
    if kind == "github":
        return github_forge(
            project="octo-org/gitops", base_url=fake.url, token="ghp_test_token", policy=policy, kind=github.KIND
        )
    return gitlab_forge(
        project="platform/gitops", url=fake.url, token="glpat-test-token", policy=policy, kind=gitlab.KIND
    )


@pytest.fixture(params=["github", "gitlab"])
def env(request: pytest.FixtureRequest, remote: Remote, tmp_path: Path) -> Iterator[Env]:
    kind = request.param
    fake = make_fake(kind, remote.bare)
    settings = PublishSettings(
        target="prod", base="main", labels=("writeback",), security_labels=("security-review",),
        reviewers=("alice",), assignees=("bob",),
    )  # fmt: skip
    try:
        yield Env(kind=kind, fake=fake, forge=make_forge(kind, fake), remote=remote, workdir=tmp_path / "clone",
                  settings=settings)  # fmt: skip
        assert fake.violations == [], "the bot sent requests the official API description rejects"
    finally:
        fake.stop()
