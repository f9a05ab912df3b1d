"""``plan``: detect drift, find each drifted field's source, and build the change sets (nothing is committed).

detect (pipeline.drift) -> repo texts (adapters.repotexts) -> locate (core.locating) -> plan_changesets
(core.planning) -> for Kustomize targets, ``kustomize build`` of a patched copy must render the live values.
``detect`` obtains the desired objects exactly as ``writeback diff`` does (for Kustomize: the real build of the
overlay at the applied revision, the head's build marking pending fields); the patches go into the head.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from writeback.adapters.git.texts import read_texts
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import ChangeSet, Drift
from writeback.pipeline.collector import collector_paused
from writeback.pipeline.detecting import Detection, detect
from writeback.pipeline.targets import Edges, TargetSpec
from writeback.pipeline.verification import Rendered, check_rendered, render_change_set
from writeback.sources.changesets import Plan, plan_changesets, tracked_app
from writeback.sources.documents import normdir
from writeback.sources.kustomize.model import find_kustomization
from writeback.sources.locating import SourceKind, locate

log = logging.getLogger(__name__)

__all__ = ["PlanOutcome", "plan_files", "plan_target", "source_kind"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanOutcome:
    plan: Plan
    source: SourceKind
    detection: Detection | None = None
    notes: tuple[str, ...] = ()
    # Each change set's patched manifests, rendered once (Kustomize: ``kustomize build``), by change set id: the
    # abort check used them, and the PR's verification line uses them.
    rendered: Mapping[str, Rendered] = field(default_factory=dict)


def source_kind(files: Mapping[str, str], path: str) -> SourceKind:
    return "kustomize" if find_kustomization(files, normdir(path)) is not None else "plain"


def plan_files(
    *,
    files: Mapping[str, str],
    drifts: Sequence[Drift],
    spec: TargetSpec,
    source: SourceKind | None = None,
    live_refs: Collection[ObjectRef] | None = None,
    apps: Mapping[Identity, str] | None = None,
    repo: Path | None = None,
    kustomize: Path | None = None,
) -> PlanOutcome:
    """Locate and plan ``spec``'s drifts over given repo texts; with ``repo``, a Kustomize source is verified by
    rendering each change set with the real kustomize (``kustomize``: the binary). ``source``: as detected, else
    the spec's, else kustomize when the path holds a kustomization."""
    path = spec.path
    source = source or spec.source or source_kind(files, path)
    located = locate(
        files=files,
        root=normdir(path),
        source=source,
        drifts=drifts,
        edit_base=spec.edit_base,
        default_namespace=spec.default_namespace,
        live_refs=live_refs,
    )
    plan = plan_changesets(
        target=spec.name,
        files=files,
        drifts=drifts,
        located=located,
        apps=apps,
        fingerprint_key=spec.fingerprint_key,
    )
    rendered: dict[str, Rendered] = {}
    if source == "kustomize" and repo is not None:
        kind = source

        def render(cs: ChangeSet) -> Rendered:
            return render_change_set(cs, repo=repo, path=path, source=kind, binary=kustomize)

        plan, rendered = check_rendered(plan, render=render)
    return PlanOutcome(plan=plan, source=source, rendered=rendered)


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
        apps={o.ref.identity: app for o in detection.live if (app := tracked_app(o.body)) is not None},
        repo=repo,
        kustomize=edges.kustomize,
    )
    return replace(outcome, detection=detection)
