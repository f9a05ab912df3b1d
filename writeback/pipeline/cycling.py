"""One full cycle for a target: clone/fetch, plan, render, push, ensure the PRs.

``run_cycle`` is what ``writeback run --once`` calls per target and what the service's scheduler calls
forever. ``run_targets`` isolates targets: one target's hard error never blocks the others.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from writeback import config
from writeback.adapters.cluster import Cluster
from writeback.adapters.forges.base import Forge, RetryPolicy
from writeback.adapters.forges.opening import git_token, open_forge, read_secret
from writeback.adapters.gitrepo import GitAuth, GitRepo, Identity
from writeback.adapters.templating import load_templates
from writeback.core.rendering import RenderInput, render
from writeback.errors import ConfigError, InputError, RateLimited, WritebackError
from writeback.model import CapturedHotfix, ChangeSet, EnsureResult, Outcome
from writeback.pipeline.drift import DriftRequest
from writeback.pipeline.plan import PlanOptions, PlanOutcome, plan_target
from writeback.pipeline.publishing import Publication, Publisher, PublishSettings, publish
from writeback.pipeline.verifying import dry_run_verifier

log = logging.getLogger(__name__)

Verifier = Callable[[ChangeSet], str | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class CycleOptions:
    """How to run a cycle; the target's own settings come from ``config.Target``."""

    workdir: Path  # clones live in workdir/<target>
    dry_run: bool = False
    live_path: Path | None = None  # offline: a dump of live objects instead of the cluster
    cluster: Cluster | None = None
    cluster_name: str = ""
    incident: str | None = None
    policy: RetryPolicy | None = None  # None: from the target's forge.max_wait_seconds
    forge: Forge | None = None  # None: opened from the target's forge config
    verifier: Verifier | None = None  # the server-side dry-run line for a change set's PR body
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    # service mode (writeback.service): captured hotfixes the controller reverted, a hook for metrics, and
    # the safe-point check (False once shutting down or the target's Lease was lost: nothing is pushed)
    hotfixes: Callable[[], tuple[CapturedHotfix, ...]] | None = None
    on_plan: Callable[[PlanOutcome], None] | None = None
    keep_going: Callable[[], bool] | None = None
    on_stage: Callable[[str], None] | None = None  # progress: "clone", "snapshot and plan", "publish"


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


def _request(target: config.Target, repo: Path) -> DriftRequest:
    return DriftRequest(
        repo=repo,
        path=target.path,
        namespaces=(target.namespace,) if target.namespace else (),
        selectors=target.selectors,
        revision=target.revision,
        argocd_application=target.argocd_application,
        flux_kustomization=target.flux_kustomization,
        policy=target.policy,
        ignore=target.ignore,
    )


def _fingerprint_key(target: config.Target, environ: Mapping[str, str]) -> bytes | None:
    ref = target.pull_request.fingerprint_key
    if ref is None:
        return None
    return read_secret(ref, key=f"targets[{target.name}].pull_request.fingerprint_key", environ=environ).encode()


def target_forge(target: config.Target, *, options: CycleOptions) -> Forge:
    """The target's forge: ``options.forge``, else opened from its config (a ConfigError when it has none)."""
    if options.forge is not None:
        return options.forge
    if target.forge is None:
        raise ConfigError(f"targets[{target.name}].forge: run needs a forge (github or gitlab)")
    return open_forge(
        target.forge, repo_url=target.repo_url, key=f"targets[{target.name}].forge", policy=options.policy,
        environ=options.environ,
    )  # fmt: skip


def run_cycle(target: config.Target, *, options: CycleOptions) -> list[EnsureResult]:
    """Snapshot, plan, push and ensure the PRs of one target. Raises WritebackError on a target-wide failure."""
    forge = target_forge(target, options=options)
    bot = Identity(name=target.git.author_name, email=target.git.author_email)
    with git_auth(target, forge, options.environ) as auth:
        repo = GitRepo(url=target.repo_url, workdir=options.workdir / target.name, auth=auth, bot=bot)
        if options.on_stage is not None:
            options.on_stage("clone")
        base_sha = repo.sync(base=target.base)
        if options.on_stage is not None:
            options.on_stage("snapshot and plan")
        plan_options = PlanOptions(
            target=target.name, source=target.source, edit_base=target.edit_base,
            fingerprint_key=_fingerprint_key(target, options.environ),
        )  # fmt: skip
        outcome = plan_target(
            request=_request(target, repo.workdir), options=plan_options, cluster=options.cluster,
            live_path=options.live_path,
        )  # fmt: skip
        if options.on_plan is not None:
            options.on_plan(outcome)
        if options.keep_going is not None and not options.keep_going():  # a safe point: nothing pushed yet
            log.info("target %s: stopping before publishing (shutdown or lost lease)", target.name)
            return [EnsureResult(outcome=Outcome.SKIPPED, target=target.name, detail="stopped before publishing")]
        hotfixes = options.hotfixes() if options.hotfixes is not None else ()
        problems = [str(p) for p in (outcome.detection.problems if outcome.detection else ())]
        problems += list(outcome.plan.errors)
        for p in problems:
            log.warning("target %s: %s", target.name, p)
        if options.on_stage is not None:
            options.on_stage("publish")
        templates = load_templates(override_dir=target.pull_request.templates_dir)
        verifier = options.verifier
        if verifier is None and options.cluster is not None:
            verifier = dry_run_verifier(
                cluster=options.cluster, repo=repo.workdir, path=target.path, source=outcome.source,
                default_namespace=target.namespace,
            )  # fmt: skip
        pubs = []
        for cs in outcome.plan.changesets:
            data = RenderInput(
                change_set=cs, cluster=options.cluster_name or target.cluster or "", base=target.base,
                platform=forge.kind, body_limit=forge.body_limit,
                incident=options.incident or target.pull_request.incident,
                verification=verifier(cs) if verifier and cs.files else None,
                security_labels=target.pull_request.security_labels, hotfixes=hotfixes,
            )  # fmt: skip
            pubs.append(Publication(change_set=cs, rendered=render(templates=templates, data=data)))
        settings = PublishSettings.from_target(target, dry_run=options.dry_run)
        publisher = Publisher(forge=forge, repo=repo, base_sha=base_sha, settings=settings)
        results = publish(publisher=publisher, publications=pubs, retire=not problems)
    if problems:
        detail = "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
        bad_input = {"input_error": True} if not outcome.plan.errors else {}  # only unusable files or resources
        results.append(EnsureResult(outcome=Outcome.FAILED, target=target.name, detail=f"plan problems: {detail}",
                                    extra=bad_input))  # fmt: skip
    return results


def run_targets(
    targets: Sequence[config.Target], *, cycle: Callable[[config.Target], list[EnsureResult]]
) -> list[EnsureResult]:
    """Run every target; a hard error becomes a FAILED result, a rate limit a SKIPPED one, and the rest go on.

    A FAILED result caused by bad input (config, flags, files) has ``extra["input_error"]``.
    """
    results: list[EnsureResult] = []
    for target in targets:
        try:
            results.extend(cycle(target))
        except RateLimited as e:
            results.append(EnsureResult(outcome=Outcome.SKIPPED, target=target.name, detail=str(e),
                                        extra={"rate_limited": True}))  # fmt: skip
        except WritebackError as e:
            log.error("target %s failed: %s", target.name, e)
            extra = {"input_error": True} if isinstance(e, InputError) else {}
            results.append(EnsureResult(outcome=Outcome.FAILED, target=target.name, detail=str(e), extra=extra))
        except Exception as e:  # a bug or an unwrapped library error in one target never stops the others
            log.error("target %s failed unexpectedly: %s: %s", target.name, type(e).__name__, e,
                      exc_info=log.isEnabledFor(logging.DEBUG))  # fmt: skip
            detail = f"unexpected error: {type(e).__name__}: {e}"
            results.append(EnsureResult(outcome=Outcome.FAILED, target=target.name, detail=detail))
    return results
