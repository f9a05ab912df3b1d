"""``plan``: detect drift, find each drifted field's source, and build the change sets (nothing is committed).

detect (pipeline.drift) -> repo texts (adapters.repotexts) -> locate (core.locating) -> plan_changesets
(sources.changesets) -> for a rendered source (Kustomize), rendering a patched copy must give the live values.
``detect`` obtains the desired objects exactly as ``writeback diff`` does (for Kustomize: the real build of the
overlay at the applied revision, the head's build marking pending fields); the patches go into the head.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from writeback.adapters.git.texts import read_texts
from writeback.gitops.registry import app_of
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import ChangeSet, Drift
from writeback.pipeline.collector import collector_paused
from writeback.pipeline.detecting import Detection, detect
from writeback.pipeline.targets import Edges, TargetSpec
from writeback.pipeline.verification import check_rendered
from writeback.sources import registry as sources
from writeback.sources.base import ControllerObject, LocateRequest, Patched, Source, Tools
from writeback.sources.changesets import Plan, plan_changesets
from writeback.sources.documents import normdir
from writeback.sources.locating import locate

log = logging.getLogger(__name__)

__all__ = ["PlanOutcome", "plan_files", "plan_target"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanOutcome:
    plan: Plan
    source: Source
    detection: Detection | None = None
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
) -> PlanOutcome:
    """Locate and plan ``spec``'s drifts over given repo texts; with ``repo``, a rendered source (Kustomize) is
    verified by rendering each change set again (``tools``: the programs' paths; ``controller``: the GitOps
    controller object the target follows). ``source``: as detected, else the spec's, else the first kind that
    claims the path in ``files`` (``sources.registry.resolve``, as detecting resolves it in the checkout)."""
    path = spec.path
    tools = tools or Tools()
    if source is None:
        source = sources.resolve(spec.source, exists=files.__contains__, path=path, controller=controller)
    request = LocateRequest(files=files, root=normdir(path), edit_base=spec.edit_base,
                            default_namespace=spec.default_namespace, repo=repo, tools=tools,
                            controller=controller)  # fmt: skip
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
    with collector_paused():
        return _plan_target(spec=spec, repo=repo, edges=edges)


def _plan_target(*, spec: TargetSpec, repo: Path, edges: Edges) -> PlanOutcome:
    detection = detect(spec=spec, repo=repo, edges=edges)
    if edges.on_step is not None:
        edges.on_step("locate and patch")
    outcome = plan_files(
        files=read_texts(repo),
        drifts=detection.report.drifts,
        spec=spec,
        source=detection.source,
        live_refs=[o.ref for o in detection.live],
        apps={o.ref.identity: app for o in detection.live if (app := app_of(o.body)) is not None},
        repo=repo,
        tools=edges.tools,
        controller=detection.controller,
    )
    return replace(outcome, detection=detection)
