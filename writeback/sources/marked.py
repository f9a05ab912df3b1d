"""Markers only: manifests read as they are, but every drifted field is written only where a ``$writeback`` marker binds
it (chart values, for example); a field no marker binds is not written. Markers win under every source kind: this
kind is for targets whose objects carry nothing else to edit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from writeback.adapters.files import LoadResult, Problem
from writeback.gitops import registry as controllers
from writeback.kube.paths import format_path
from writeback.model import ChangeSet, DesiredObject, Drift
from writeback.sources.base import ControllerObject, Found, LoadRequest, LocateRequest, Patched, SourceOption
from writeback.sources.locations import NotFound
from writeback.sources.plain import SOURCE as PLAIN
from writeback.sources.plain import render_files


@dataclass(frozen=True, slots=True)
class Markers:
    name: str = "markers"
    help: str = "only the values that `$writeback` comment markers bind (for example Helm values)"
    renders: bool = False
    render_name: str = "the patched files"
    render_failure: str = "the patched files do not read"
    verified_live: bool = False  # it edits chart values, not manifests
    options: tuple[SourceOption, ...] = ()

    def claims(self, exists: Callable[[str], bool], path: str, controller: ControllerObject | None) -> bool:
        return False  # chosen explicitly only

    def load(self, request: LoadRequest) -> LoadResult[DesiredObject]:
        loaded = PLAIN.load(request)
        followed = request.controller
        if followed is None or not loaded.objects or any(controllers.find(o.ref) is None for o in loaded.objects):
            return loaded
        # Only controller objects here (a HelmRelease and its values): what they apply is rendered, never compared
        # as it is; say so, instead of a comparison of the HelmRelease itself that finds "no drift".
        kinds = ", ".join(sorted({controllers.describe(o.ref) for o in loaded.objects}))
        why = (
            f"{request.path} declares only GitOps controller objects ({kinds}): the objects "
            f"{followed.controller.where(followed.ref)} applies are rendered, and source {self.name} compares "
            "manifests as they are; leave `source` unset so that the kind that renders them is chosen"
        )
        return replace(loaded, problems=(*loaded.problems, Problem(file=request.path, message=why)))

    def locate(self, request: LocateRequest, drifts: Sequence[Drift]) -> list[Found]:
        return [
            NotFound(
                f"no $writeback marker binds {format_path(d.path)} of this resource: it is rendered "
                "(for example by Helm), so its source cannot be found"
            )
            for d in drifts
        ]

    def render_patched(self, cs: ChangeSet, request: LocateRequest) -> Patched:
        return Patched(objects=render_files(cs))


SOURCE = Markers()
