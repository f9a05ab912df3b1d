"""The Git side of a detection: which revision is compared (``--revision``, else the controller's applied revision,
else HEAD), and Git's desired objects there, read once through the target's source kind (:class:`Loader`); the head's
objects too when the head is ahead of it or the working tree has uncommitted changes (their fields are pending).

Desired objects come from ONE place, :class:`Loader`, for ``diff``, ``plan`` and ``run``: the YAML files under the
path (plain, markers), or the real ``kustomize build`` of the path (kustomize), at the compared revision and at
the head alike. A Kustomize overlay is built in a checkout of the whole repo, since it reaches ``../../base``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from writeback.adapters.files import LoadResult, NamespaceDefaults, NamespacedFn, Problem, builtin_namespaced
from writeback.adapters.git import revisions
from writeback.adapters.kube.cluster import Cluster
from writeback.errors import ClusterError, ClusterUnreachable, InputError
from writeback.gitops.base import ControllerState
from writeback.model import DesiredObject
from writeback.pipeline.targets import TargetSpec
from writeback.pipeline.warming import WarmState, git_key
from writeback.sources.base import ControllerObject, LoadRequest, Source, Tools
from writeback.yaml.reading import keeps_documents, parse_scope

__all__ = ["GitSide", "Loader", "git_side", "namespaced_fn"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GitSide:
    """Git's side of one detection: the desired objects at the compared revision, the head's when it is ahead, and
    what was compared and said about it."""

    desired: tuple[DesiredObject, ...]
    head: tuple[DesiredObject, ...] | None
    revision: str
    source: str
    problems: tuple[Problem, ...]
    notes: tuple[str, ...]
    commit: str | None = None  # the compared commit, when Git has one (None: the files as they are)
    scope: str = "."  # what the desired objects are read or rendered from


@dataclass(frozen=True, slots=True, kw_only=True)
class Loader:
    """Git's desired objects in a tree, as the target's source kind reads or renders them."""

    repo: Path
    path: str
    source: Source
    tools: Tools
    controller: ControllerObject | None = None
    exclude: frozenset[str] = frozenset()  # a --live dump inside the repository
    pack: bool = False  # bodies packed as read (``LoadRequest.pack``) when nothing keeps the parsed documents

    def __call__(
        self, root: Path, *, namespaces: NamespaceDefaults, namespaced: NamespacedFn, where: str = ""
    ) -> LoadResult[DesiredObject]:
        request = LoadRequest(root=root, path=self.path, namespaces=namespaces, namespaced=namespaced,
                              tools=self.tools, where=where, controller=self.controller, exclude=self.exclude,
                              pack=self.pack and not keeps_documents())  # fmt: skip
        return self.source.load(request)


def namespaced_fn(cluster: Cluster | None) -> NamespacedFn:
    """Whether a kind is namespaced: the cluster's discovery when there is a cluster (the built-in table when it
    cannot tell), else the built-in table."""
    if cluster is None:
        return builtin_namespaced

    def ask(api_version: str, kind: str) -> bool | None:
        try:
            return cluster.resource_for(api_version=api_version, kind=kind).namespaced
        except ClusterUnreachable:
            raise
        except ClusterError:
            return builtin_namespaced(api_version, kind)

    return ask


def git_side(
    *, spec: TargetSpec, load: Loader, state: ControllerState, namespaced: NamespacedFn, memo: WarmState | None = None
) -> GitSide:
    """Git's side for ``spec``: the revision to compare (``--revision``, else what the controller applied, else HEAD),
    its objects read through ``load``, and the head's when the head is ahead or the tree is dirty. A service cycle
    (``memo``) reuses the last cycle's side when the compared trees are the same."""
    ns = NamespaceDefaults(application=state.namespace, flag=spec.default_namespace)

    def read(root: Path, where: str = "") -> tuple[tuple[DesiredObject, ...], tuple[Problem, ...]]:
        res = load(root, namespaces=ns, namespaced=namespaced, where=where)
        return res.objects, res.problems

    repo = load.repo
    wanted, source = (spec.revision, "--revision") if spec.revision else (state.revision, state.source)
    is_repo = revisions.is_git_repo(repo)
    head = revisions.head_commit(repo) if is_repo else None
    if head is None:
        what = "a git repository with no commits" if is_repo else "not a git repository"
        if wanted:
            raise InputError(f"{repo}: {what}, cannot compare at revision {wanted!r}")
        objs, problems = read(repo)
        note = f"{repo} is {what}: compared with the files as they are"
        return GitSide(desired=objs, head=None, revision="worktree", source="", problems=problems, notes=(note,))
    rendered = load.source.renders  # a rendering may reach anywhere in the repo (a Kustomize ../../base)
    scope = "." if rendered else spec.path
    commit = revisions.resolve_commit(repo, wanted) if wanted else head
    if not wanted:
        source = "HEAD (no applied revision known)"
    key = None
    if memo is not None and not load.source.renders and not load.exclude:
        key = git_key(repo, path=spec.path, source=load.source.name, namespaces=ns, head=head, commit=commit)
    dirty = key is None and revisions.is_dirty(repo, path=scope)
    if key is not None and memo is not None:
        kept = memo.git_side(key)
        if isinstance(kept, GitSide):  # the same trees: the same objects, nothing read
            return replace(kept, revision=commit, source=source)
    side = _read_git(spec=spec, load=load, read=read, head=head, commit=commit, source=source, scope=scope,
                     dirty=dirty)  # fmt: skip
    if key is not None and memo is not None:
        memo.keep_git_side(key, side)
    return side


def _read_git(
    *, spec: TargetSpec, load: Loader, read: Callable[..., tuple[tuple[DesiredObject, ...], tuple[Problem, ...]]],
    head: str, commit: str, source: str, scope: str, dirty: bool,
) -> GitSide:  # fmt: skip
    """The objects at ``commit``: read in the repo itself when it is the clean head, else in a checkout of it, with
    the head's objects beside them (their changes pending)."""
    repo, rendered = load.repo, load.source.renders
    if commit == head and not dirty:
        objs, problems = read(repo)
        return GitSide(desired=objs, head=None, revision=commit, source=source, problems=problems, notes=(),
                        commit=commit, scope=scope)  # fmt: skip
    with parse_scope():  # a text read in both trees (the compared revision and the head) parses once
        with revisions.checkout(repo, commit, path=scope) as tree:
            objs, problems = read(tree, f" (at the compared revision {commit[:12]})")
        head_objs, head_problems = read(repo)  # the head's problems would repeat or are about unapplied commits
    # the head's bodies are compared as they are (pending changes), never met by the page settler: not kept packed
    head_objs = tuple(o.unpacked() for o in head_objs)
    notes: list[str] = []
    if rendered and head_problems:
        why = "; ".join(str(p) for p in head_problems)
        notes.append(f"{load.source.render_name} of {spec.path} at the head failed ({why}): its resources count as "
                     "pending")  # fmt: skip
    if commit != head:
        notes.append(f"Git head {head[:12]} is ahead of the applied revision {commit[:12]}: its changes are pending")
    if dirty:
        notes.append(f"uncommitted changes under {scope} are treated as the head (pending)")
    return GitSide(desired=objs, head=head_objs, revision=commit, source=source, problems=problems, notes=tuple(notes),
                    commit=commit, scope=scope)  # fmt: skip
