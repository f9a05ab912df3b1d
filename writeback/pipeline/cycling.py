"""One full cycle for a target: clone/fetch, plan, render, push, ensure the PRs.

``run_cycle`` is what ``writeback run --once`` calls per target and what the service's scheduler calls
forever. ``run_targets`` isolates targets: one target's hard error never blocks the others.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Protocol, TypeVar

from writeback import config
from writeback.adapters.forges.base import Forge
from writeback.adapters.forges.opening import git_token, open_forge, read_secret
from writeback.adapters.git.locking import clone_lock
from writeback.adapters.git.repo import GitAuth, GitRepo, Identity
from writeback.adapters.kube.cluster import Cluster
from writeback.errors import ConfigError, InputError, RateLimited, WritebackError
from writeback.kube.refs import Identity as ObjectIdentity
from writeback.model import CapturedHotfix, ChangeSet, EnsureResult, Outcome, ProblemKind, ResultReason
from writeback.pipeline.planning import PlanOutcome, plan_target
from writeback.pipeline.publish_settings import PublishSettings
from writeback.pipeline.publishing import Publication, Publisher, publish
from writeback.pipeline.pull_requests import PullRequestText
from writeback.pipeline.targets import Edges, TargetSpec
from writeback.pipeline.verification import NOT_VERIFIED_LINE, PREFIX, Verified, verify_live
from writeback.pr.text import reverted_for
from writeback.sources.base import LocateRequest, Patched
from writeback.sources.documents import normdir

log = logging.getLogger(__name__)

Verifier = Callable[[ChangeSet], str | None]


class _Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=_Named)


@dataclass(frozen=True, slots=True, kw_only=True)
class CycleOptions:
    """How to run one cycle; what to read and write is the ``TargetSpec``, the adapters are the ``Edges``."""

    workdir: Path  # clones live in workdir/<target>
    dry_run: bool = False
    verifier: Verifier | None = None  # the server-side dry-run line for a change set's PR body (default: built in)
    # service mode (writeback.service): captured hotfixes the controller reverted, a hook for metrics, and
    # the safe-point check (False once shutting down or the target's Lease was lost: nothing is pushed)
    hotfixes: Callable[[], tuple[CapturedHotfix, ...]] | None = None
    on_plan: Callable[[PlanOutcome], None] | None = None
    keep_going: Callable[[], bool] | None = None
    on_stage: Callable[[str], None] | None = None  # progress: "clone", the steps of detect and plan, "publish"


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetRun:
    """One target's cycle, ready to run: its spec, its edges and the cycle's options (the service and break-glass
    hand these around)."""

    spec: TargetSpec
    edges: Edges
    options: CycleOptions

    def run(self) -> list[EnsureResult]:
        return run_cycle(self.spec, edges=self.edges, options=self.options)

    def with_incident(self, text: str) -> TargetRun:
        """The same run with ``text`` added to the PR's incident field (break-glass records)."""
        given = self.spec.incident
        return replace(self, spec=replace(self.spec, incident=f"{given}; {text}" if given else text))


@contextmanager
def git_auth(target: config.Target, forge: Forge, environ: Mapping[str, str]) -> Iterator[GitAuth]:
    key = target.git.ssh_key
    if key is not None and key.file:
        yield GitAuth(ssh_key_file=key.file)
        return
    if key is not None:  # a key held in an environment variable: a private temp file for ssh
        text = read_secret(key, key=f"targets[{target.name}].git.ssh_key", environ=environ)
        with tempfile.TemporaryDirectory(prefix="writeback-ssh-") as tmp:
            path = Path(tmp) / "id"
            path.write_text(text + "\n", encoding="utf-8")
            path.chmod(0o600)
            yield GitAuth(ssh_key_file=str(path))
        return
    cred = git_token(forge) if target.repo_url.startswith("https://") else None
    yield GitAuth(username=cred[0], token=cred[1]) if cred else GitAuth()


def target_forge(spec: TargetSpec, *, edges: Edges) -> Forge:
    """The target's forge: ``edges.forge``, else opened from its settings (a ConfigError naming the key, or the flag
    for a target built from flags, when it has none)."""
    if edges.forge is not None:
        return edges.forge
    target = spec.target
    if target is None or target.forge is None:
        raise ConfigError(f"{spec.key('forge')}: run needs a forge (github or gitlab)")
    return open_forge(
        target.forge, repo_url=target.repo_url, key=spec.key("forge"), policy=edges.retry,
        environ=edges.environ, names={k: spec.key(f"forge.{k}") for k in ("project", "token")},
    )  # fmt: skip


def run_cycle(spec: TargetSpec, *, edges: Edges, options: CycleOptions) -> list[EnsureResult]:
    """Snapshot, plan, push and ensure the PRs of one target. Raises WritebackError on a target-wide failure."""
    target = spec.target
    if target is None:
        raise ConfigError(f"target {spec.name}: run needs a repository and a forge (repo_url, forge)")
    forge = target_forge(spec, edges=edges)
    stage = options.on_stage or (lambda _: None)
    bot = Identity(name=target.git.author_name, email=target.git.author_email)
    with git_auth(target, forge, edges.environ) as auth, clone_lock(options.workdir / target.name):  # one writer
        repo = GitRepo(url=target.repo_url, workdir=options.workdir / target.name, auth=auth, bot=bot,
                       protected=target.git.protected_branches)  # fmt: skip
        stage("clone")
        base_sha = repo.sync(base=target.base)
        outcome = plan_target(
            spec=spec, repo=repo.workdir, edges=replace(edges, on_step=options.on_stage or edges.on_step)
        )
        if options.on_plan is not None:
            options.on_plan(outcome)
        if options.keep_going is not None and not options.keep_going():  # a safe point: nothing pushed yet
            log.info("target %s: stopping before publishing (shutdown or lost lease)", target.name)
            return [EnsureResult(outcome=Outcome.SKIPPED, target=target.name, detail="stopped before publishing")]
        hotfixes = options.hotfixes() if options.hotfixes is not None else ()
        problems = [str(p) for p in (outcome.detection.problems if outcome.detection else ())]
        problems += [str(e) for e in outcome.plan.errors]
        for p in problems:
            log.warning("target %s: %s", target.name, p)
        stage("publish")
        text = PullRequestText.for_spec(spec, cluster_name=edges.cluster_name, forge=forge.kind)
        verify = options.verifier or _verifier(spec=spec, edges=edges, outcome=outcome, repo=repo.workdir)
        pubs = [
            Publication(
                change_set=cs,
                rendered=text.render(cs, verification=verify(cs) if verify and cs.files else None, hotfixes=hotfixes),
                reverted=reverted_for(cs, hotfixes),
            )
            for cs in outcome.plan.changesets
        ]
        settings = PublishSettings.from_target(target, dry_run=options.dry_run)
        publisher = Publisher(forge=forge, repo=repo, base_sha=base_sha, settings=settings)
        results = publish(publisher=publisher, publications=pubs, retire=not problems)
        if edges.memo is not None:
            edges.memo.lines_done()
    if problems:
        detail = "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
        aborted = any(e.kind is ProblemKind.ABORTED for e in outcome.plan.errors)
        results.append(EnsureResult(outcome=Outcome.FAILED, target=target.name, detail=f"plan problems: {detail}",
                                    reason=None if aborted else ResultReason.BAD_INPUT))  # fmt: skip
    return results


def _verifier(*, spec: TargetSpec, edges: Edges, outcome: PlanOutcome, repo: Path) -> Verifier | None:
    """The PR body's verification line, from the change set's one rendering: the server-side dry-run line, or the
    source's own proof where the dry-run does not apply to what it edits (None offline, unless the source proves)."""
    cluster = edges.cluster
    if cluster is None and outcome.source.verified_live:
        return None
    request = outcome.request or LocateRequest(files={}, root=normdir(spec.path), repo=repo, tools=edges.tools)

    def verify(cs: ChangeSet) -> str | None:
        patched = outcome.rendered.get(cs.id)
        if not outcome.source.verified_live:
            proof = patched.proof if patched is not None else None
            return proof or (NOT_VERIFIED_LINE if cluster is not None else None)
        assert cluster is not None
        if edges.memo is None or outcome.source.renders:
            return live_line(cs, patched, cluster).line
        # a source that does not render: the patched files in the change set's text are what is applied
        return edges.memo.line(
            _line_key(cs, cluster=cluster, versions=versions()), partial(live_line, cs, patched, cluster)
        )

    def live_line(cs: ChangeSet, patched: Patched | None, cluster: Cluster) -> Verified:
        if patched is None:
            try:
                patched = outcome.source.render_patched(cs, request)
            except WritebackError as e:
                log.warning("change set %s: cannot render the patched manifests: %s", cs.id, e)
                return Verified(line=f"{PREFIX}: failed ({type(e).__name__}); check the manifests by hand.",
                                answered=False)  # fmt: skip
        return verify_live(cluster=cluster, cs=cs, objects=patched.objects, default_namespace=spec.default_namespace)

    def versions() -> Mapping[ObjectIdentity | None, str]:
        """The live resourceVersions of the drifted objects (asked once per cycle)."""
        if not known:
            drifted = {d.resource.identity for cs in outcome.plan.changesets for d in cs.drifts}
            known.update((i, version) for i, version in outcome.versions.items() if i in drifted)
            known[None] = ""
        return known

    known: dict[ObjectIdentity | None, str] = {}
    return verify


def _line_key(cs: ChangeSet, *, cluster: Cluster, versions: Mapping[ObjectIdentity | None, str]) -> tuple[object, ...]:
    """What a verification line is kept by across service cycles (``pipeline.warming``): the change set's full
    text (its drifts, its patched files), the live resourceVersions of its objects, the server's version."""
    refs = sorted({d.resource.identity for d in cs.drifts})
    return (
        hashlib.sha256(repr(replace(cs, ignored=())).encode()).hexdigest(),  # what is not written back: not verified
        tuple((r, versions.get(r)) for r in refs),
        cluster.server_version(),
    )


def run_targets(targets: Sequence[T], *, cycle: Callable[[T], list[EnsureResult]]) -> list[EnsureResult]:
    """Run every target; a hard error becomes a FAILED result, a rate limit a SKIPPED one, and the rest go on.

    A FAILED result caused by bad input (config, flags, files) has the reason ``BAD_INPUT``.
    """
    results: list[EnsureResult] = []
    for target in targets:
        try:
            results.extend(cycle(target))
        except RateLimited as e:
            results.append(EnsureResult(outcome=Outcome.SKIPPED, target=target.name, detail=str(e),
                                        reason=ResultReason.RATE_LIMITED))  # fmt: skip
        except WritebackError as e:
            log.error("target %s failed: %s", target.name, e)
            reason = ResultReason.BAD_INPUT if isinstance(e, InputError) else None
            results.append(EnsureResult(outcome=Outcome.FAILED, target=target.name, detail=str(e), reason=reason))
        except Exception as e:  # a bug or an unwrapped library error in one target never stops the others
            log.error("target %s failed unexpectedly: %s: %s", target.name, type(e).__name__, e,
                      exc_info=log.isEnabledFor(logging.DEBUG))  # fmt: skip
            detail = f"unexpected error: {type(e).__name__}: {e}"
            results.append(EnsureResult(outcome=Outcome.FAILED, target=target.name, detail=detail))
    return results
