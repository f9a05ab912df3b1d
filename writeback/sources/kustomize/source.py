"""Kustomize: the objects ``kustomize build`` renders of the target's path (an overlay that may reach
``../../base``), each drifted field written where the overlay produces it (a patch, an images entry, a generator
literal; the shared base only with ``--edit-base``), and every change set checked by building it again."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from writeback.adapters.files import LoadResult
from writeback.errors import PatchError
from writeback.kube.manifests import KUSTOMIZATION_FILES, expand_lists
from writeback.model import ChangeSet, DesiredObject, Drift, Unresolved
from writeback.sources.base import (
    ControllerObject,
    Found,
    LoadRequest,
    LocateRequest,
    Patched,
    SourceOption,
    sops_encrypted,
)
from writeback.sources.documents import join
from writeback.sources.locations import Location, NotFound
from writeback.yaml.reading import load_all

if TYPE_CHECKING:  # the Kustomize engine is imported when a Kustomize target runs, not by the source registry
    from writeback.sources.kustomize.model import Origin, Tree

TOOL = "kustomize"


def _origin_where(origin: Origin) -> str:
    if origin.manifest is not None:
        return origin.manifest.file
    return " ".join(f"{layer.file} {g.list_key}[{g.index}]" for layer, g in origin.generators)


@dataclass(frozen=True, slots=True)
class Kustomize:
    name: str = "kustomize"
    help: str = "what `kustomize build` renders of the path (the default when the path holds a kustomization)"
    renders: bool = True
    render_name: str = "kustomize build"
    render_failure: str = "the patched overlay does not build"
    verified_live: bool = True
    options: tuple[SourceOption, ...] = ()

    def claims(self, exists: Callable[[str], bool], path: str, controller: ControllerObject | None) -> bool:
        return any(exists(join(path, name)) for name in KUSTOMIZATION_FILES)

    def load(self, request: LoadRequest) -> LoadResult[DesiredObject]:
        from writeback.adapters import kustomize as kustomize_cli

        return kustomize_cli.read_rendered(
            root=request.root, path=request.path, namespaces=request.namespaces, namespaced=request.namespaced,
            binary=request.tools.get(TOOL), where=request.where,
        )  # fmt: skip

    def locate(self, request: LocateRequest, drifts: Sequence[Drift]) -> list[Found]:
        from writeback.sources.kustomize.model import KustomizeSourceError, load_tree
        from writeback.sources.kustomize.overlay import locate_in_overlay

        tree: Tree | NotFound
        try:
            tree = load_tree(request.files, request.root)
        except PatchError as e:
            tree = NotFound(f"the kustomization cannot be resolved: {e}")

        def one(drift: Drift) -> Location | Unresolved | NotFound:
            if isinstance(tree, NotFound):
                return tree
            ident, ns = drift.resource.identity, request.default_namespace
            origins = [o for o in tree.origins if o.matches(ident, default_namespace=ns)]
            if not origins:
                return NotFound(f"the kustomization in {request.root or '.'} does not produce this resource")
            if len(origins) > 1:
                where = ", ".join(_origin_where(o) for o in origins)
                return NotFound(f"produced more than once by the kustomization: {where}")
            origin = origins[0]
            if origin.manifest is not None and sops_encrypted(origin.manifest, request.files):
                return NotFound(f"{origin.manifest.file} is SOPS-encrypted: report-only")
            try:
                return locate_in_overlay(drift=drift, origin=origin, root=request.root, edit_base=request.edit_base,
                                         files=request.files)  # fmt: skip
            except KustomizeSourceError as e:
                return NotFound(str(e))

        return [(found,) if isinstance(found := one(d), Location) else found for d in drifts]

    def render_patched(self, cs: ChangeSet, request: LocateRequest) -> Patched:
        if request.repo is None:
            raise ValueError("render_patched needs the repository checkout")
        from writeback.adapters import kustomize as kustomize_cli

        path = request.root or "."
        changes = {f.path: f.after for f in cs.files}
        text = kustomize_cli.build_patched(request.repo, path=path, changes=changes, binary=request.tools.get(TOOL))
        return Patched(objects=tuple(expand_lists(load_all(text, source=f"kustomize build of {path} (patched)"))))


SOURCE = Kustomize()
