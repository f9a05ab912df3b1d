"""Helm: the objects ``helm template`` renders of the chart of the Argo CD Application or Flux HelmRelease the target
follows, as the controller renders them; each drifted field traced to the values key that produces it and written
to the values layer a reviewer would edit; every change set proven by rendering the edited values again.

The release is read from the controller object as read live (the cluster, or the dump offline); without one, the
target's path must declare exactly one Helm release. Renders run through the real helm CLI
(``writeback.adapters.helm``) and are shared by the runs of one process: a cycle whose charts and values did not
change renders nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from writeback.adapters.files import LoadResult, Problem
from writeback.adapters.git.texts import read_texts
from writeback.adapters.helm import SHARED, HelmCLI
from writeback.charts import HelmError
from writeback.errors import PatchError
from writeback.model import ChangeSet, DesiredObject, Drift, Unresolved
from writeback.sources.base import (
    ControllerObject,
    Found,
    LoadRequest,
    LocateRequest,
    OptionKind,
    Patched,
    SourceOption,
    Tools,
)
from writeback.sources.documents import normdir
from writeback.sources.helm.capabilities import ClusterFacts
from writeback.sources.helm.engine import HelmEngine
from writeback.sources.helm.errors import ReleaseError
from writeback.sources.helm.model import Release
from writeback.sources.helm.repo import Followed, claims, from_repo, locations, releases
from writeback.sources.helm.verifying import Proof
from writeback.sources.locations import NotFound

TOOL = "helm"
KUSTOMIZE = "kustomize"  # Flux's post-renderers run the real kustomize
CHART_CACHE = SourceOption(
    name="chart-cache",
    flag="--chart-cache",
    config_key="chart_cache",
    help="Helm: a directory of packaged charts as `helm pull` writes them (NAME-VERSION.tgz), for charts that are "
    "not in the repository (offline; in cluster mode Flux's artifacts are fetched too)",
)
KUBE_VERSION = SourceOption(
    name="kube-version",
    flag="--kube-version",
    config_key="kube_version",
    kind=OptionKind.TEXT,
    metavar="VERSION",
    help="Helm: the Kubernetes version charts render for (.Capabilities.KubeVersion, as `helm template "
    "--kube-version`), e.g. v1.31.2; default: the cluster's, offline helm's own",
)
API_VERSIONS = SourceOption(
    name="api-versions",
    flag="--api-versions",
    config_key="api_versions",
    kind=OptionKind.LIST,
    metavar="GROUP/VERSION[/KIND]",
    help="Helm: the API versions charts render for (.Capabilities.APIVersions, as `helm template --api-versions`; "
    "repeat the flag or separate with commas), e.g. monitoring.coreos.com/v1/ServiceMonitor; default: what the "
    "cluster serves, offline helm's own",
)
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


@dataclass(frozen=True, slots=True)
class Helm:
    name: str = "helm"
    help: str = (
        "what `helm template` renders of the chart of the Argo CD Application or Flux HelmRelease the target follows "
        "(the default for one); drifted fields are written to its values"
    )
    renders: bool = True
    render_name: str = "helm template"
    render_failure: str = "the values edit is not proven by re-rendering"
    verified_live: bool = False  # it edits values: the PR shows the re-render's proof instead
    options: tuple[SourceOption, ...] = (CHART_CACHE, KUBE_VERSION, API_VERSIONS)

    def claims(self, exists: Callable[[str], bool], path: str, controller: ControllerObject | None) -> bool:
        return controller is not None and claims(controller.controller, controller.body, exists)

    def load(self, request: LoadRequest) -> LoadResult[DesiredObject]:
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

    def locate(self, request: LocateRequest, drifts: Sequence[Drift]) -> list[Found]:
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

    def render_patched(self, cs: ChangeSet, request: LocateRequest) -> Patched:
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


SOURCE = Helm()
