"""``plan``: detect drift, find each drifted field's source, and build the change sets (nothing is committed).

detect (pipeline.drift) -> repo texts (adapters.repotexts) -> locate (core.locating) -> plan_changesets
(sources.changesets) -> for a rendered source (Kustomize), rendering a patched copy must give the live values.
``detect`` obtains the desired objects exactly as ``writeback diff`` does (for Kustomize: the real build of the
overlay at the applied revision, the head's build marking pending fields); the patches go into the head.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from writeback.adapters.confinement import OutsideRepository, real_relative
from writeback.adapters.git import revisions
from writeback.gitops.registry import app_of
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import ChangeSet, Drift, Unresolved
from writeback.pipeline.collector import collector_paused
from writeback.pipeline.detecting import Detection, detect
from writeback.pipeline.targets import Edges, TargetSpec
from writeback.sources import registry as sources
from writeback.sources.base import ControllerObject, LocateRequest, Patched, Source, Tools
from writeback.sources.documents import declared_names, normdir
from writeback.sources.locations import Located, Location
from writeback.yaml.reading import keeps_documents, parse_scope

if TYPE_CHECKING:
    from writeback.sources.changesets import Plan

log = logging.getLogger(__name__)

__all__ = ["PlanOutcome", "plan_files", "plan_target"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanOutcome:
    plan: Plan
    source: Source
    detection: Detection | None = None  # its report and problems (a one-shot plan's without its objects)
    # the live resourceVersion of each drifted object (a service cycle keeps its verification lines by them)
    versions: Mapping[Identity, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    # Each change set's patched manifests, rendered once (Kustomize: ``kustomize build``), by change set id: the
    # abort check used them, and the PR's verification line uses them (or the source's own proof).
    rendered: Mapping[str, Patched] = field(default_factory=dict)
    request: LocateRequest | None = None  # what locating and rendering were given (a change set renders with it)


def plan_files(
    *,
    files: Mapping[str, str],
    drifts: Sequence[Drift],
    spec: TargetSpec,
    source: Source | None = None,
    live_refs: Collection[ObjectRef] | None = None,
    apps: Mapping[Identity, str] | None = None,
    repo: Path | None = None,
    tools: Tools | None = None,
    controller: ControllerObject | None = None,
    links: Mapping[str, str] | None = None,
) -> PlanOutcome:
    """Locate and plan ``spec``'s drifts over given repo texts; with ``repo``, a rendered source (Kustomize) is
    verified by rendering each change set again (``tools``: the programs' paths; ``controller``: the GitOps
    controller object the target follows). ``source``: as detected, else the spec's, else the first kind that
    claims the path in ``files`` (``sources.registry.resolve``, as detecting resolves it in the checkout).
    ``links``: the symbolic links among ``files``, each to the real path it reads; an edit goes to the real path,
    and one that would leave ``repo`` is unresolved (``confined``)."""
    # the plan's own stage (locating, the YAML editor, the change sets) is imported when it runs: after detection,
    # into the memory detection's objects leave (a one-shot plan peaks at its end; issue 23)
    from writeback.pipeline.verification import check_rendered
    from writeback.sources.changesets import plan_changesets
    from writeback.sources.locating import locate

    path = spec.path
    tools = tools or Tools()
    if source is None:
        source = sources.resolve(spec.source, exists=files.__contains__, path=path, controller=controller)
    request = LocateRequest(files=files, root=normdir(path), edit_base=spec.edit_base,
                            default_namespace=spec.default_namespace, repo=repo, tools=tools,
                            controller=controller, links=links or {})  # fmt: skip
    located = locate(
        files=files,
        root=request.root,
        source=source,
        drifts=drifts,
        edit_base=spec.edit_base,
        default_namespace=spec.default_namespace,
        live_refs=live_refs,
        request=request,
    )
    located = confined(located, files=files, links=links or {}, repo=repo)
    plan = plan_changesets(
        target=spec.name,
        files=files,
        drifts=drifts,
        located=located,
        apps=apps,
        fingerprint_key=spec.fingerprint_key,
    )
    rendered: dict[str, Patched] = {}
    if source.renders and repo is not None:
        kind = source

        def render(cs: ChangeSet) -> Patched:
            return kind.render_patched(cs, request)

        plan, rendered = check_rendered(plan, render=render, source=source)
    return PlanOutcome(plan=plan, source=source, rendered=rendered, request=request)


def plan_target(*, spec: TargetSpec, repo: Path, edges: Edges) -> PlanOutcome:
    """Detect drift for one target and plan its change sets over the repo's working tree."""
    # a one-shot plan keeps the names each parsed file declares, not its documents: locating parses again only the
    # files that declare a drifted object (a service's cache keeps the documents anyway)
    with collector_paused(), parse_scope(summary=declared_names):
        return _plan_target(spec=spec, repo=repo, edges=edges)


def _plan_target(*, spec: TargetSpec, repo: Path, edges: Edges) -> PlanOutcome:
    detection = detect(spec=spec, repo=repo, edges=edges)
    from writeback.adapters.git.texts import read_repo  # as in plan_files: imported after detection
    from writeback.sources.changesets import with_held_back

    if edges.on_step is not None:
        edges.on_step("locate and patch")
    drifts = detection.report.drifts
    drifted = {d.resource.identity for d in drifts}  # change sets are grouped by the apps of drifted objects only
    live_refs = [o.ref for o in detection.live]
    apps = {o.ref.identity: app for o in detection.live
            if o.ref.identity in drifted and (app := app_of(o.body)) is not None}  # fmt: skip
    versions = {o.ref.identity: _resource_version(o.body) for o in detection.live if o.ref.identity in drifted}
    if not keeps_documents():
        # a one-shot plan (the parse cache off: ``cli.common.one_shot``) keeps none of detection's objects: their
        # bodies (live and Git's) go before the repository's texts are read, and what the plan's own stage allocates
        # reuses their memory (its peak is at its end). A service cycle keeps them: its watch cache holds them anyway.
        detection = replace(detection, desired=(), live=())
    memo = edges.memo if edges.cluster is not None else None
    key = _plan_key(spec=spec, repo=repo, detection=detection, live_refs=live_refs, apps=apps) if memo else None
    if key is not None and memo is not None:
        kept = memo.plan(key)
        kept = kept if isinstance(kept, PlanOutcome) else None
        # the same written and whole-object drifts over the same repository: the same change sets, with this
        # cycle's held-back drifts (neither located nor patched) in their "not written back" lists
        plan = with_held_back(kept.plan, target=spec.name, drifts=drifts, apps=apps) if kept is not None else None
        if kept is not None and plan is not None:
            return replace(kept, plan=plan, detection=detection, versions=versions)
    texts = read_repo(repo)
    outcome = plan_files(
        files=texts.files,
        links=texts.links,
        drifts=drifts,
        spec=spec,
        source=detection.source,
        live_refs=live_refs,
        apps=apps,
        repo=repo,
        tools=edges.tools,
        controller=detection.controller,
    )
    if key is not None and memo is not None:
        memo.keep_plan(key, outcome)
    return replace(outcome, detection=detection, versions=versions)


def _resource_version(body: Mapping[str, Any]) -> str:
    meta = body.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""


def _plan_key(
    *, spec: TargetSpec, repo: Path, detection: Detection, live_refs: list[ObjectRef], apps: Mapping[Identity, str]
) -> tuple[object, ...] | None:
    """What a service cycle's change sets are kept by (``pipeline.warming``), or None when they must be built: the
    written and whole-object drifts that produce them (their full text; the held-back ones are only listed), the apps
    of all drifted objects, the spec, the repository's tree (pristine: no change, no untracked
    or ignored file, no symbolic link), the live objects' refs and apps, the controller object's ref; for a source
    kind that does not render (a rendering reaches beyond the repository)."""
    if detection.source.renders or not revisions.pristine(repo):
        return None
    tree = revisions.tree_ids(repo, ("HEAD",), path=".")
    if tree is None or revisions.has_links(repo, tree[0]):
        return None
    acted = [d for d in detection.report.drifts if not d.decision.held_back]
    drifts = hashlib.sha256(repr(acted).encode()).hexdigest()
    groups = frozenset(apps.values())  # the apps of all drifted objects: how change sets are grouped
    acting = {d.resource.identity for d in acted}
    followed = detection.controller.ref if detection.controller is not None else None
    return (tree, drifts, groups, {i: a for i, a in apps.items() if i in acting}, spec, detection.source.name,
            tuple(live_refs), followed)  # fmt: skip


def confined(located: Located, *, files: Mapping[str, str], links: Mapping[str, str], repo: Path | None) -> Located:
    """Every edit at its real path: a location in a symbolic link inside the repository goes to the file the link
    resolves to (the PR shows that path); one that would leave the repository (``adapters.confinement``), or that
    reaches a new file through a link, is unresolved with the reason, and so is the rest of its drift."""
    refused: dict[int, str] = {}
    moved: list[Location] = []
    for loc in located.locations:
        why = _refusal(loc, files=files, links=links, repo=repo)
        if isinstance(why, str):
            refused.setdefault(id(loc.drift), why)
        else:
            moved.append(why)
    if not refused and all(a is b for a, b in zip(moved, located.locations, strict=True)):
        return located
    kept: dict[tuple[object, ...], Location] = {}
    for loc in moved:  # one place, reached by its real path and through a link, is edited once
        if id(loc.drift) not in refused:
            kept.setdefault((id(loc.drift), loc.file, loc.document, loc.path, loc.transform, loc.key, loc.inline), loc)
    drifts = {id(loc.drift): loc.drift for loc in located.locations}
    unresolved = [Unresolved(resource=d.resource, path=d.path, reason=refused[i]) for i, d in drifts.items()
                  if i in refused]  # fmt: skip
    return replace(located, locations=tuple(kept.values()), unresolved=(*located.unresolved, *unresolved))


def _refusal(loc: Location, *, files: Mapping[str, str], links: Mapping[str, str], repo: Path | None) -> Location | str:
    """``loc`` at its real path, or why it is not written."""
    real: dict[str, str] = {}
    for f in (loc.file, *((loc.new_patch.kustomization, loc.new_patch.file) if loc.new_patch else ())):
        try:
            real[f] = real_relative(repo, f) if repo is not None else links.get(f, f)
        except OutsideRepository as e:
            return f"{e}: not written"
    if loc.new_patch is not None and any(r != f for f, r in real.items()):
        return f"{loc.new_patch.file} would be created through a symbolic link: not written; add the patch by hand"
    file = real[loc.file]
    if file == loc.file:
        return loc
    if files.get(file) != files.get(loc.file):
        return f"{loc.file} is a symbolic link to {file}, which writeback does not read: not written"
    return replace(loc, file=file, via=f"{loc.via} (through the link {loc.file})")
