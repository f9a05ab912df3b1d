"""Plain manifests: every Kubernetes object declared in the YAML files under the target's path, written back in the
one document that declares it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from writeback.adapters.files import LoadResult, read_manifests
from writeback.errors import PatchError
from writeback.kube.manifests import expand_lists
from writeback.kube.refs import ObjectRef
from writeback.model import ChangeSet, DesiredObject, Drift
from writeback.sources.base import (
    ControllerObject,
    Found,
    LoadRequest,
    LocateRequest,
    Patched,
    Rendered,
    SourceOption,
    sops_encrypted,
)
from writeback.sources.documents import Manifest, is_yaml, manifests_in, may_declare, under
from writeback.sources.locations import Location, NotFound
from writeback.yaml.reading import load_all


class Declared:
    """The manifests under a path, indexed by group, kind and name; with ``wanted``, only those of these (group,
    kind, name) keys are kept (issue 23: a plan's locator holds the drifted objects' manifests, not the repo's)."""

    def __init__(
        self,
        files: Mapping[str, str],
        root: str,
        links: Mapping[str, str] | None = None,
        *,
        wanted: Collection[tuple[str, str, str]] | None = None,
    ) -> None:
        self.by_identity: dict[tuple[str, str, str], list[Manifest]] = defaultdict(list)
        self.bad: list[str] = []
        links = links or {}
        names = None if wanted is None else {name for _, _, name in wanted}
        for file in sorted(files):
            if not is_yaml(file) or not under(file, root):
                continue
            if file in links and links[file] in files and under(links[file], root):
                continue  # a link to a file read under its real name here: the same manifests, not a second copy
            if names is not None and not may_declare(files[file], file=file, names=names):
                continue  # parsed by this run already: it declares none of the wanted names
            try:
                for m in manifests_in(files[file], file=file):
                    group, kind, _, name = m.identity
                    if wanted is None or (group, kind, name) in wanted:
                        self.by_identity[(group, kind, name)].append(m)
            except PatchError as e:
                self.bad.append(str(e))

    def find(self, ref: ObjectRef, *, default_namespace: str | None) -> Manifest | NotFound:
        group, kind, namespace, name = ref.identity
        cands = self.by_identity.get((group, kind, name), [])
        exact = [m for m in cands if (m.identity[2] or "") == namespace]
        unset = [m for m in cands if m.identity[2] is None and (default_namespace in (None, namespace))]
        found = exact or unset
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            where = ", ".join(f"{m.file} (document {m.document + 1})" for m in found)
            return NotFound(f"declared more than once: {where}; edit one of them by hand")
        reason = "no manifest declares this resource"
        if self.bad:
            reason += "; unreadable files: " + "; ".join(self.bad)
        return NotFound(reason)


def render_files(cs: ChangeSet) -> Rendered:
    """The documents of a change set's patched files: what merging it would apply for sources read as they are."""
    return tuple(expand_lists(d for f in cs.files for d in load_all(f.after, source=f.path)))


@dataclass(frozen=True, slots=True)
class Plain:
    name: str = "plain"
    help: str = "the YAML manifests under the path, as they are"
    renders: bool = False
    render_name: str = "the patched manifests"
    render_failure: str = "the patched manifests do not read"
    verified_live: bool = True
    options: tuple[SourceOption, ...] = ()

    def claims(self, exists: Callable[[str], bool], path: str, controller: ControllerObject | None) -> bool:
        return True  # the fallback: registered last

    def load(self, request: LoadRequest) -> LoadResult[DesiredObject]:
        return read_manifests(root=request.root, path=request.path, namespaces=request.namespaces,
                              namespaced=request.namespaced, exclude=request.exclude, pack=request.pack)  # fmt: skip

    def locate(self, request: LocateRequest, drifts: Sequence[Drift]) -> list[Found]:
        wanted = {(group, kind, name) for group, kind, _, name in (d.resource.identity for d in drifts)}
        declared = Declared(request.files, request.root, request.links, wanted=wanted)

        def one(drift: Drift) -> Found:
            found = declared.find(drift.resource, default_namespace=request.default_namespace)
            if isinstance(found, NotFound):
                return found
            if sops_encrypted(found, request.files):
                return NotFound(f"{found.file} is SOPS-encrypted: report-only")
            return (Location(drift=drift, file=found.file, document=found.document, path=found.prefix + drift.path,
                             via="manifest"),)  # fmt: skip

        return [one(d) for d in drifts]

    def render_patched(self, cs: ChangeSet, request: LocateRequest) -> Patched:
        return Patched(objects=render_files(cs))


SOURCE = Plain()
