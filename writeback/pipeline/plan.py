"""``plan``: detect drift, find each drifted field's source, and build the change sets (nothing is committed).

detect (pipeline.drift) -> repo texts (adapters.repotexts) -> locate (core.locating) -> plan_changesets
(core.planning) -> for Kustomize targets, ``kustomize build`` of a patched copy must render the live values.
``detect`` obtains the desired objects exactly as ``writeback diff`` does (for Kustomize: the real build of the
overlay at the applied revision, the head's build marking pending fields); the patches go into the head.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from writeback.adapters import kustomize as kustomize_cli
from writeback.adapters.cluster import Cluster
from writeback.adapters.repotexts import read_texts
from writeback.core.documents import normdir
from writeback.core.kustomizing import find_kustomization
from writeback.core.locating import SourceKind, locate
from writeback.core.planning import Plan, plan_changesets, tracked_app
from writeback.core.verifying import mismatches
from writeback.errors import PatchError, ToolMissing, YamlError
from writeback.model import ChangeSet, Drift, ObjectRef
from writeback.pipeline.drift import Detection, DriftRequest, detect
from writeback.yamlreading import load_all

log = logging.getLogger(__name__)

__all__ = ["PlanOptions", "PlanOutcome", "plan_files", "plan_target", "source_kind"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanOptions:
    target: str
    source: SourceKind | None = None  # None: kustomize if the path has a kustomization, else plain
    edit_base: bool = False
    fingerprint_key: bytes | None = None
    verify: bool = True  # Kustomize targets: render the patched overlay with the real kustomize
    kustomize: Path | None = None  # the binary (default: $WRITEBACK_KUSTOMIZE or PATH)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanOutcome:
    plan: Plan
    source: SourceKind
    detection: Detection | None = None
    notes: tuple[str, ...] = ()


def source_kind(files: Mapping[str, str], path: str) -> SourceKind:
    return "kustomize" if find_kustomization(files, normdir(path)) is not None else "plain"


def plan_files(
    *,
    files: Mapping[str, str],
    path: str,
    drifts: Sequence[Drift],
    options: PlanOptions,
    default_namespace: str | None = None,
    live_refs: Collection[ObjectRef] | None = None,
    apps: Mapping[tuple[str, str, str, str], str] | None = None,
    repo: Path | None = None,
) -> PlanOutcome:
    """Locate and plan over given repo texts; with ``repo`` and a Kustomize source, verify by rendering."""
    source = options.source or source_kind(files, path)
    located = locate(
        files=files,
        root=normdir(path),
        source=source,
        drifts=drifts,
        edit_base=options.edit_base,
        default_namespace=default_namespace,
        live_refs=live_refs,
    )
    plan = plan_changesets(
        target=options.target,
        files=files,
        drifts=drifts,
        located=located,
        apps=apps,
        fingerprint_key=options.fingerprint_key,
    )
    if source == "kustomize" and options.verify and repo is not None:
        plan = verify_kustomize(plan, repo=repo, path=path, binary=options.kustomize)
    return PlanOutcome(plan=plan, source=source)


def verify_kustomize(plan: Plan, *, repo: Path, path: str, binary: Path | None = None) -> Plan:
    """Abort a change set whose patched overlay does not render the live values of its located drifts."""
    out: list[ChangeSet] = []
    errors = list(plan.errors)
    for cs in plan.changesets:
        if not cs.files:
            out.append(cs)
            continue
        try:
            text = kustomize_cli.build_patched(
                repo, path=path, changes={f.path: f.after for f in cs.files}, binary=binary
            )
        except ToolMissing:
            raise
        except PatchError as e:
            errors.append(f"change set {cs.id} aborted: the patched overlay does not build: {e}")
            out.append(replace(cs, files=()))
            continue
        try:
            objects = [d for d in load_all(text, source=f"kustomize build {path}") if isinstance(d, dict)]
        except YamlError as e:
            errors.append(f"change set {cs.id} aborted: the patched overlay renders unreadable YAML: {e}")
            out.append(replace(cs, files=()))
            continue
        unresolved = {(u.resource.identity, u.path) for u in cs.unresolved}
        checked = [d for d in cs.drifts if (d.resource.identity, d.path) not in unresolved]
        wrong = mismatches(objects, checked)
        if wrong:
            errors.append(f"change set {cs.id} aborted: kustomize build of the patch disagrees: " + "; ".join(wrong))
            out.append(replace(cs, files=()))
        else:
            out.append(cs)
    return Plan(changesets=tuple(out), errors=tuple(errors))


def plan_target(
    *,
    request: DriftRequest,
    options: PlanOptions,
    cluster: Cluster | None = None,
    live_path: Path | None = None,
) -> PlanOutcome:
    """Detect drift for one target and plan its change sets over the repo's working tree."""
    request = replace(
        request, source=options.source or request.source, kustomize=options.kustomize or request.kustomize
    )
    if options.fingerprint_key is not None and request.fingerprint_key is None:
        request = replace(request, fingerprint_key=options.fingerprint_key)
    detection = detect(request=request, cluster=cluster, live_path=live_path)
    files = read_texts(request.repo)
    outcome = plan_files(
        files=files,
        path=request.path,
        drifts=detection.report.drifts,
        options=replace(options, source=detection.source),
        default_namespace=request.namespaces[0] if request.namespaces else None,
        live_refs=[o.ref for o in detection.live],
        apps={o.ref.identity: app for o in detection.live if (app := tracked_app(o.body)) is not None},
        repo=request.repo,
    )
    return replace(outcome, detection=detection)
