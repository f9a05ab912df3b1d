"""``detect``: Git manifests at the applied revision + a live snapshot + dry-runs -> the engine's DriftReport.

Revision order: ``--revision`` (explicit), else the Argo CD Application's ``status.sync.revision``, else the
Flux Kustomization's ``status.lastAppliedRevision``, else HEAD. When the working tree (HEAD) differs from the
compared revision, its objects are passed along so that fields the head changed are "pending sync".

Desired objects come from ONE place for ``diff``, ``plan`` and ``run``: ``pipeline.git_side`` (its ``Loader``
reads the YAML files under the path, or renders them, at the compared revision and at the head alike).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from writeback.adapters.dumps import read_live, with_default_namespace
from writeback.adapters.files import (
    NamespaceDefaults,
    Problem,
    crd_scopes,
    with_crds,
)
from writeback.drift.engine import (
    DriftReport,
    EngineOptions,
    ObjectOutcome,
    PreparedObject,
    compute_drift,
    judge,
    settle_context,
)
from writeback.errors import InputError
from writeback.gitops import registry as controllers
from writeback.gitops.base import ControllerState, Getter
from writeback.kube.kinds import dump_scopes
from writeback.kube.refs import Identity
from writeback.model import DesiredObject, DryRun, LiveObject
from writeback.pipeline import compared, snapshots
from writeback.pipeline.collector import collector_paused
from writeback.pipeline.dryruns import dry_runs
from writeback.pipeline.git_side import Loader, git_side, namespaced_fn
from writeback.pipeline.settled import GitTimes, PageSettler, settle_after
from writeback.pipeline.targets import Edges, TargetSpec
from writeback.pipeline.warming import Warm, kept_git_changes
from writeback.sources import registry as sources
from writeback.sources.base import ControllerObject, Source
from writeback.sources.plain import SOURCE as PLAIN

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Detection:
    """The report plus what produced it."""

    report: DriftReport
    # the Git objects compared; a one-shot run against a cluster released the bodies of those its managers settled
    # (``DesiredObject.released``: ``pipeline.settled``)
    desired: tuple[DesiredObject, ...]
    live: tuple[LiveObject, ...]
    problems: tuple[Problem, ...] = ()
    revision_source: str = ""
    source: Source = PLAIN  # how the desired objects were obtained
    controller: ControllerObject | None = None  # the GitOps controller object the target follows, as read live


def detect(*, spec: TargetSpec, repo: Path, edges: Edges) -> Detection:
    """Compare live (``edges.cluster``, or the dump at ``edges.live_path`` offline) with Git in ``repo``."""
    with collector_paused():
        return _detect(spec=spec, repo=repo, edges=edges)


def _detect(*, spec: TargetSpec, repo: Path, edges: Edges) -> Detection:
    cluster, live_path, live_text = edges.cluster, edges.live_path, edges.live_text
    if (cluster is None) == (live_path is None and live_text is None):
        raise ValueError("detect needs exactly one of a cluster or a live dump")
    step = edges.on_step or (lambda _: None)
    dump: tuple[LiveObject, ...] = ()
    problems: list[Problem] = []
    if cluster is None:
        step("read the live dump")
        loaded = read_live(path=live_path, text=live_text)
        if loaded.problems:  # a dump that cannot be read is no snapshot: stop before any report
            listed = "\n  ".join(str(p) for p in loaded.problems)
            raise InputError(f"--live {live_path or '-'}: the dump cannot be used:\n  {listed}")
        dump = loaded.objects
        get: Getter = _dump_getter(dump)
    else:
        c = cluster
        get = lambda ref: c.get_object(ref=ref)  # noqa: E731
    state, followed = _controller_state(spec=spec, get=get, offline=cluster is None)
    namespaced = namespaced_fn(cluster)
    if cluster is None:  # offline: a CRD in the dump scopes its kind, else how the dump shows it (a namespace or none)
        namespaced = with_crds(namespaced, crd_scopes(o.body for o in dump))
        namespaced = with_crds(namespaced, dump_scopes((o.ref.api_version, o.ref.kind, o.ref.namespace) for o in dump))
    source = resolve_source(repo=repo, path=spec.path, source=spec.source, controller=followed)
    memo = edges.memo if cluster is not None else None  # kept results: service cycles only
    # a one-shot run against a cluster packs Git's bodies as read: the page settler (``pipeline.settled``) unpacks
    # each as its live object arrives
    one_shot = cluster is not None and memo is None
    load = Loader(repo=repo, path=spec.path, source=source, tools=edges.tools, controller=followed,
                   exclude=compared.excluded(live_path, repo=repo), pack=one_shot)  # fmt: skip
    step("read Git")
    if memo is not None:
        memo.begin_cycle()
    git = git_side(spec=spec, load=load, state=state, namespaced=namespaced, memo=memo)
    declared = bool(git.desired)
    problems.extend(git.problems)
    desired = git.desired
    # a resource Git declares twice is left out on both sides: its live object is no "new" resource
    ambiguous = {p.resource.identity for p in git.problems if p.resource is not None}
    if cluster is None:  # dumped objects without a namespace get the one Git's get (CRDs in Git scope theirs)
        fallback = NamespaceDefaults(application=state.namespace, flag=spec.default_namespace).fallback
        scoped = with_crds(namespaced, crd_scopes(d.body for d in desired))
        dump = with_default_namespace(dump, namespaced=scoped, fallback=fallback)
    if memo is not None:  # online: what follows depends on the Git side and the spec alone
        compare = partial(_compared, spec=spec, desired=desired, dump=dump, offline=False)
        desired, dump, scopes, more = memo.derived(git.desired, spec, compare)
    else:
        desired, dump, scopes, more = _compared(spec=spec, desired=desired, dump=dump, offline=cluster is None)
    git = replace(git, desired=(), notes=(*git.notes, *more))  # from here on ``desired`` holds the compared objects
    options = EngineOptions(
        policy=spec.policy,
        ignore=spec.ignore,
        offline=cluster is None,
        argocd_ignore=state.ignore_differences,
        flux_ignore=state.path_ignores,
        fingerprint_key=spec.fingerprint_key,
        explain=spec.explain,
    )
    notes = list(git.notes)
    dry_run: dict[Identity, DryRun] | None = None
    prepared: dict[Identity, PreparedObject] | None = None
    warm: Warm | None = None
    known: dict[Identity, ObjectOutcome] | None = None
    times = GitTimes(repo=repo, commit=git.commit, scope=git.scope, rendered=source.renders)
    pages: PageSettler | None = None
    if cluster is None:
        live = tuple(o for o in snapshots.filter_dump(objects=dump, scopes=scopes) if o.ref.identity not in ambiguous)
        if not live and desired and not edges.empty_live_ok:
            raise InputError(_empty_dump(live_path, dumped=len(dump), declared=len(desired)))
    else:
        # a one-shot run settles objects as their pages arrive and keeps no body of theirs (``pipeline.settled``);
        # the service keeps whole objects (its watch cache holds them anyway, and its kept results compare them)
        pages = PageSettler(desired=desired, options=options, times=times, head=git.head) if memo is None else None
        if pages is not None:  # the settler holds them now, and lets each settled object's Git body go
            desired = ()
        step("snapshot")
        snap = snapshots.snapshot(cluster=cluster, scopes=scopes, page_size=spec.page_size,
                                  desired=pages.declared if pages is not None else desired,
                                  keep=pages.keep if pages is not None else None)  # fmt: skip
        if pages is not None:
            desired = pages.finish()
        live = tuple(o for o in snap.objects if o.ref.identity not in ambiguous) if ambiguous else snap.objects
        problems.extend(snap.problems)
        unusable = {p.resource.identity for p in snap.problems if p.resource is not None}
        if unusable:
            desired = tuple(d for d in desired if d.ref.identity not in unusable)
    if cluster is not None and memo is not None:
        server = cluster.server_version()
        rnd = memo.objects(options=options, revision=git.revision, head_given=git.head is not None, server=server)
        index = memo.index(live=live, desired=desired, head=git.head, include_secrets=spec.policy.include_secrets,
                           rnd=rnd)  # fmt: skip
        warm = Warm(memo=memo, round=rnd, scalers=index.scalers, head=git.head, server=server, index=index)
        settle = None  # nothing to decide, nothing to settle
        if index.changed is None or index.changed:
            settle = settle_context(kept_git_changes(memo, repo=repo, commit=git.commit, scope=git.scope, live=live,
                                                     index=index, rendered=source.renders), head=git.head)  # fmt: skip
    elif pages is not None:
        settle = pages.context()
    else:
        settle = settle_after(times, live=live, head=git.head)
    if cluster is not None:
        step("dry-run")
        settled, decide = None, None
        if pages is not None:  # one-shot: each object decided once its evidence is there, its preparation let go
            settled = pages.prepared(live)
            decide = judge(options=options, live=live, desired=desired, head=git.head, revision=git.revision)
        evidence = dry_runs(cluster=cluster, live=live, desired=desired, options=options, kept=warm, settle=settle,
                             settled=settled, decide=decide)  # fmt: skip
        dry_run, prepared, notes = evidence.dry_run, evidence.prepared, [*notes, *evidence.notes]
        settled = pages = None  # each object is decided (``known``): its preparation goes before the comparison
        if decide is not None:
            known = evidence.known
    step("compare")
    report = compute_drift(
        live=live,
        desired=desired,
        options=options,
        dry_run=dry_run,
        head=git.head,
        revision=git.revision,
        prepared=prepared,
        known=warm.round.known if warm is not None else known,
        record=warm.round.record if warm is not None else None,
        scalers=warm.scalers if warm is not None else None,
        settle=settle,
        index=warm.index if warm is not None else None,
        keep=warm.memo.keep_index if warm is not None else None,
    )
    if warm is not None:
        warm.memo.finished(warm.round)
    if notes:
        report = replace(report, notes=(*notes, *report.notes))
    if not declared and not git.problems:  # never a silent "no drift"
        empty = f"{spec.path!r} in {repo} holds no Kubernetes manifests: nothing was compared with it"
        report = replace(report, warnings=(*report.warnings, empty))
    return Detection(
        report=report,
        desired=desired,
        live=tuple(live),
        problems=tuple(problems),
        revision_source=git.source,
        source=source,
        controller=followed,
    )


def _compared(
    *, spec: TargetSpec, desired: tuple[DesiredObject, ...], dump: tuple[LiveObject, ...], offline: bool
) -> tuple[tuple[DesiredObject, ...], tuple[LiveObject, ...], list[snapshots.Scope], tuple[str, ...]]:
    """Git's objects compared (no Secret unless included, ``--kinds``, the selectors), the dump's, the snapshot's
    scopes and the notes to add to the Git side's."""
    notes: list[str] = []
    if not spec.policy.include_secrets:
        desired = tuple(d for d in desired if not d.ref.is_secret)
    desired, dump, kinds_note = _compared_kinds(spec=spec, desired=desired, dump=dump, offline=offline)
    if kinds_note:
        notes.append(kinds_note)
    scopes = snapshots.scopes_for(
        desired=desired,
        selectors=spec.selectors,
        namespaces=spec.namespaces,
        include_secrets=spec.policy.include_secrets,
    )
    if spec.all_namespaces:
        scopes = snapshots.in_all_namespaces(scopes)
    if spec.selectors:
        kept = snapshots.filter_desired(objects=desired, scopes=scopes)
        if len(kept) < len(desired):
            notes.append(f"{len(desired) - len(kept)} Git resource(s) outside the selectors not compared")
        desired = kept
    return desired, dump, list(scopes), tuple(notes)


def _compared_kinds(
    *, spec: TargetSpec, desired: tuple[DesiredObject, ...], dump: tuple[LiveObject, ...], offline: bool
) -> tuple[tuple[DesiredObject, ...], tuple[LiveObject, ...], str | None]:
    """``--kinds``, else (offline) the kinds a partial dump holds: see ``pipeline.compared``."""
    if spec.kinds:
        chosen = compared.by_kinds(spec.kinds, desired=desired, live=dump)
        return chosen.desired, chosen.live if offline else dump, None
    if offline:
        partial = compared.partial_dump(desired=desired, dump=dump)
        return partial.desired, dump, partial.note
    return desired, dump, None


def _dump_getter(objects: Sequence[LiveObject]) -> Getter:
    """Look a controller object up in a live dump (offline mode): same group, kind, namespace, name."""
    by_id = {o.ref.identity: o.body for o in objects}
    return lambda ref: by_id.get(ref.identity)


def _empty_dump(path: Path | None, *, dumped: int, declared: int) -> str:
    """An empty snapshot would report every Git object as deleted: that is a wrong input, not drift."""
    held = "holds no object" if not dumped else f"holds {dumped} object(s), none of the kinds and namespaces compared"
    return (
        f"--live {path or '-'}: the dump {held}, while Git declares {declared} resource(s): every one would read as "
        "deleted. Dump the right namespaces, or pass --allow-empty-live if an empty cluster is expected"
    )


def resolve_source(
    *, repo: Path, path: str, source: str | None = None, controller: ControllerObject | None = None
) -> Source:
    """The named source kind, else the first that claims ``repo/path`` (Kustomize: it holds a kustomization) or the
    controller object the target follows (a Helm release)."""
    return sources.resolve(source, exists=lambda rel: (repo / rel).is_file(), path=path, controller=controller)


def _controller_state(
    *, spec: TargetSpec, get: Getter, offline: bool
) -> tuple[ControllerState, ControllerObject | None]:
    """What the first controller object the target follows says, and the object (nothing when it follows none)."""
    if not spec.controllers:
        return ControllerState(), None
    followed = spec.controllers[0]
    ref = followed.ref()
    body = get(ref)
    if body is None:
        raise controllers.not_found(followed.controller, ref, offline=offline)
    obj = ControllerObject(controller=followed.controller, ref=ref, body=body, get=get, cluster=not offline)
    return followed.controller.state(body, ref=ref), obj
