"""What the Helm source kind does (``source.Helm`` delegates here, so that the registry imports none of it until a
Helm target runs): load renders the release's Git values as the controller does, locate traces every drifted
field to its values key, render_patched proves a change set by rendering the edited values again."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from writeback.adapters.files import LoadResult, Problem
from writeback.adapters.git.texts import read_texts
from writeback.adapters.helm import SHARED, HelmCLI
from writeback.charts import HelmError
from writeback.errors import PatchError
from writeback.model import ChangeSet, DesiredObject, Drift, Unresolved
from writeback.sources.base import ControllerObject, Found, LoadRequest, LocateRequest, Patched, Tools
from writeback.sources.documents import normdir
from writeback.sources.helm.capabilities import ClusterFacts
from writeback.sources.helm.engine import HelmEngine
from writeback.sources.helm.errors import ReleaseError
from writeback.sources.helm.model import Release
from writeback.sources.helm.repo import Followed, from_repo, locations, releases
from writeback.sources.helm.source import API_VERSIONS, CHART_CACHE, KUBE_VERSION, KUSTOMIZE, TOOL
from writeback.sources.helm.verifying import Proof
from writeback.sources.locations import NotFound

__all__ = ["load", "locate", "render_patched"]

_FAILED = (HelmError, ReleaseError)


def _followed(controller: ControllerObject | None, files: Mapping[str, str], path: str) -> Followed | str:
    if controller is not None:
        return Followed(controller=controller.controller, ref=controller.ref, body=controller.body,
                        get=controller.get, cluster=controller.cluster)  # fmt: skip
    found, why = from_repo(files, normdir(path))
    return found if found is not None else why


@contextmanager
def _engine(repo: Path, tools: Tools, *, cluster: bool) -> Iterator[HelmEngine]:
    with HelmCLI(repo=repo, binary=tools.get(TOOL), kustomize_binary=tools.get(KUSTOMIZE),
                 chart_cache=tools.get(CHART_CACHE.name), fetch_artifacts=cluster, cache=SHARED) as cli:  # fmt: skip
        yield HelmEngine(cli)


def _facts(tools: Tools) -> ClusterFacts:
    """The cluster's capabilities as given, else as discovery says in cluster mode (read once per cycle; not read
    when both are given)."""
    kube_version, api_versions = tools.text(KUBE_VERSION.name), tools.values(API_VERSIONS.name)
    needed = tools.discovery is not None and not (kube_version and api_versions)
    discovery = tools.discovery() if needed and tools.discovery is not None else None
    return ClusterFacts(discovery=discovery, kube_version=kube_version, api_versions=api_versions)


def _file(release: Release, path: str) -> str:
    return release.manifest.file if release.manifest is not None else (release.chart.path or normdir(path) or ".")


def load(request: LoadRequest) -> LoadResult[DesiredObject]:
    files = read_texts(request.root)
    followed = _followed(request.controller, files, request.path)
    if isinstance(followed, str):
        return LoadResult(problems=(Problem(file=request.path, message=followed + request.where),))
    mine, _ = releases(followed, files, _facts(request.tools))
    if not mine:
        why = f"{followed.controller.where(followed.ref)} has no Helm source"
        return LoadResult(problems=(Problem(file=request.path, message=why),))
    objects: list[DesiredObject] = []
    problems: list[Problem] = []
    with _engine(request.root, request.tools, cluster=followed.cluster) as engine:
        for release in mine:
            try:
                desired = engine.desired(release, files)
            except _FAILED as e:
                why = f"{release.describe()}: unresolved, not rendered: {e}{request.where}"
                problems.append(Problem(file=_file(release, request.path), message=why))
                continue
            objects += desired.rendering.desired(file=_file(release, request.path))
    return LoadResult(objects=tuple(objects), problems=tuple(problems))


def locate(request: LocateRequest, drifts: Sequence[Drift]) -> list[Found]:
    if request.repo is None:
        why = "Helm values are traced by rendering the chart, which needs the repository checkout"
        return [NotFound(why) for _ in drifts]
    followed = _followed(request.controller, request.files, request.root)
    if isinstance(followed, str):
        return [NotFound(followed) for _ in drifts]
    mine, others = releases(followed, request.files, _facts(request.tools))
    found: dict[int, Found] = {}
    with _engine(request.repo, request.tools, cluster=followed.cluster) as engine:
        for release in mine:
            todo = [d for d in drifts if id(d) not in found]
            if len(mine) > 1:  # several Helm sources: each traces the objects it renders
                try:
                    rendering = engine.desired(release, request.files).rendering
                except _FAILED:
                    rendering = None
                todo = [d for d in todo if rendering is None or rendering.find(d.resource.identity) is not None]
            if not todo:
                continue
            located = engine.locate(release, request.files, todo, others=others)
            by_field = {(u.resource.identity, u.path): u for u in located.unresolved}
            placed = locations(located.edits, todo)
            for d in todo:
                unresolved = by_field.get((d.resource.identity, d.path))
                found[id(d)] = unresolved or placed.get(id(d)) or _not_traced(d)
    what = followed.controller.where(followed.ref)
    return [found.get(id(d), NotFound(f"no Helm release of {what} renders this resource")) for d in drifts]


def render_patched(cs: ChangeSet, request: LocateRequest) -> Patched:
    if request.repo is None:
        raise ValueError("render_patched needs the repository checkout")
    followed = _followed(request.controller, request.files, request.root)
    if isinstance(followed, str):
        raise PatchError(followed)
    mine, _ = releases(followed, request.files, _facts(request.tools))
    skipped = {(u.resource.identity, u.path) for u in cs.unresolved}
    drifts = [d for d in cs.drifts if (d.resource.identity, d.path) not in skipped]
    objects: list[Mapping[str, object]] = []
    proofs: list[Proof] = []
    with _engine(request.repo, request.tools, cluster=followed.cluster) as engine:
        for release in mine:
            try:
                rendering = engine.desired(release, request.files).rendering
                own = [d for d in drifts if rendering.find(d.resource.identity) is not None]
                result = engine.verify(release, request.files, cs.files, own)
            except _FAILED as e:
                raise PatchError(f"{release.describe()}: {e}") from e
            if result.proof is None:
                raise PatchError(result.reason())
            objects += result.objects
            proofs.append(result.proof)
    proof = Proof(fields=sum(p.fields for p in proofs), objects=sum(p.objects for p in proofs),
                  ignored=sum(p.ignored for p in proofs))  # fmt: skip
    return Patched(objects=tuple(objects), proof=proof.sentence() + ".")


def _not_traced(drift: Drift) -> Unresolved:
    return Unresolved(resource=drift.resource, path=drift.path, reason="no values key could be traced to it")
