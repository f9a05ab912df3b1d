"""Helm: the objects ``helm template`` renders of the chart of the Argo CD Application or Flux HelmRelease the target
follows, as the controller renders them; each drifted field traced to the values key that produces it and written
to the values layer a reviewer would edit; every change set proven by rendering the edited values again.

The release is read from the controller object as read live (the cluster, or the dump offline); without one, the
target's path must declare exactly one Helm release. Renders run through the real helm CLI
(``writeback.adapters.helm``) and are shared by the runs of one process: a cycle whose charts and values did not
change renders nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from writeback.sources.base import OptionKind, SourceOption
from writeback.sources.helm.claiming import claims

if TYPE_CHECKING:  # the engine is imported when a Helm target runs (``running``), not by the source registry
    from writeback.adapters.files import LoadResult
    from writeback.model import ChangeSet, DesiredObject, Drift
    from writeback.sources.base import ControllerObject, Found, LoadRequest, LocateRequest, Patched

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
        from writeback.sources.helm import running

        return running.load(request)

    def locate(self, request: LocateRequest, drifts: Sequence[Drift]) -> list[Found]:
        from writeback.sources.helm import running

        return running.locate(request, drifts)

    def render_patched(self, cs: ChangeSet, request: LocateRequest) -> Patched:
        from writeback.sources.helm import running

        return running.render_patched(cs, request)


SOURCE = Helm()
