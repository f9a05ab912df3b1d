"""Reading YAML from disk: live dumps for offline mode, and the Git manifests of a directory tree.

A bad file never stops the others: each loader returns the objects it could read plus a ``Problem``
per file, document or resource it could not (naming the file and, where known, the line).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from writeback.adapters.confinement import escape
from writeback.adapters.walking import entry_name, is_link, walk
from writeback.bodies import PackedBody
from writeback.errors import InputError, YamlError
from writeback.kube.kinds import NamespacedFn, builtin_namespaced, crd_scopes, with_crds
from writeback.kube.manifests import KUSTOMIZATION_FILES, list_items
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import DesiredObject
from writeback.yaml.reading import MAX_CHARS, load_all

T = TypeVar("T")

__all__ = [
    "LoadResult",
    "NamespaceDefaults",
    "NamespacedFn",
    "Problem",
    "builtin_namespaced",
    "crd_scopes",
    "is_object",
    "named_items",
    "parse_documents",
    "read_documents",
    "read_manifests",
    "read_stream",
    "read_text",
    "ref_of",
    "with_crds",
    "yaml_files",
]

_KUSTOMIZE_GROUP = "kustomize.config.k8s.io"
_YAML_SUFFIXES = (".yaml", ".yml")
DUMP_SUFFIXES = (*_YAML_SUFFIXES, ".json")  # `kubectl get -o yaml` and `-o json` dumps


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """Something in the input that could not be used; the rest still loads."""

    file: str
    message: str
    line: int | None = None
    resource: ObjectRef | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        where += f":{self.column}" if self.line and self.column else ""
        what = f" ({self.resource})" if self.resource else ""
        return f"{where}{what}: {self.message}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadResult(Generic[T]):
    objects: tuple[T, ...] = ()
    problems: tuple[Problem, ...] = field(default_factory=tuple)


# ---------------------------------------------------------------- YAML


def parse_documents(*, text: str, file: str) -> tuple[list[Any], Problem | None]:
    """All documents of a YAML stream (empty ones as None), as the patcher numbers them (YAML 1.2).

    On a syntax error, or a file past the loading limits (a YAML bomb): no documents and a problem naming the
    file (and the line). The data is shared with the parse cache: do not modify it.
    """
    try:
        return load_all(text, source=file), None
    except YamlError as e:
        message = e.problem if e.limit else f"not valid YAML: {e.problem}"
        return [], Problem(file=file, line=e.line, column=e.column, message=message)


def read_text(path: Path | str, *, file: str) -> tuple[str | None, Problem | None]:
    """A YAML file's text: UTF-8, universal newlines (as ``Path.read_text``: ``\\r\\n`` and ``\\r`` read as
    ``\\n``); a problem naming ``file`` if it is larger than ``MAX_CHARS`` (refused before it is read), cannot be
    read or is not UTF-8. Read through the file descriptor (one open, one stat, the bytes decoded at once): a repo's
    every manifest comes through here, and a text stream's layers cost as much as the read itself."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if size > MAX_CHARS:  # refused before it is read into memory
                limit = f"the {MAX_CHARS // 2**20} MiB that writeback reads from one YAML file"
                return None, Problem(file=file, message=f"{size / 2**20:.1f} MiB, more than {limit}; split it")
            chunks = [os.read(fd, size + 1)]
            while chunks[-1]:  # to the end, should the file have grown since the stat
                chunks.append(os.read(fd, 1 << 16))
        finally:
            os.close(fd)
        text = b"".join(chunks).decode("utf-8") if len(chunks) > 2 else chunks[0].decode("utf-8")
    except UnicodeDecodeError as e:
        return None, Problem(file=file, message=f"not UTF-8 text: {e.reason}")
    except OSError as e:
        return None, Problem(file=file, message=f"cannot read: {e.strerror}")
    return (text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text), None


def read_documents(path: Path | str, *, file: str) -> tuple[list[Any], list[Problem]]:
    """The documents of one YAML file, and a problem if it cannot be read or parsed (none of it then)."""
    text, problem = read_text(path, file=file)
    if problem is not None or text is None:
        return [], [problem or Problem(file=file, message="cannot read")]
    docs, problem = parse_documents(text=text, file=file)
    return docs, [] if problem is None else [problem]


def is_object(doc: Any) -> bool:
    return (
        (type(doc) is dict or isinstance(doc, Mapping))
        and type(doc.get("apiVersion")) is str
        and type(doc.get("kind")) is str
    )


def named_items(
    doc: Mapping[str, Any], *, file: str, document: int, problems: list[Problem]
) -> Iterator[tuple[int | None, Any]]:
    """``_items`` that have a name; for each that has none, a problem is appended to ``problems`` (in order)."""
    for i, body in list_items(doc):
        msg = _name_problem(body, document=document, item=i)
        if msg:
            problems.append(Problem(file=file, message=msg))
        else:
            yield i, body


def ref_of(body: Mapping[str, Any], *, namespace: str | None) -> ObjectRef:
    meta = body.get("metadata") or {}
    return ObjectRef(
        api_version=str(body["apiVersion"]), kind=str(body["kind"]), namespace=namespace, name=str(meta["name"])
    )


def _half_manifest(doc: Any, *, document: int) -> str | None:
    """A document that starts a manifest but is not one: it has ``metadata`` and only one of apiVersion and kind
    (other YAML, such as Helm values or a Chart.yaml, has no ``metadata``)."""
    if not isinstance(doc, Mapping) or is_object(doc) or not isinstance(doc.get("metadata"), Mapping):
        return None
    has = [k for k in ("apiVersion", "kind") if isinstance(doc.get(k), str)]
    if len(has) != 1:
        return None
    missing = "kind" if has == ["apiVersion"] else "apiVersion"
    return f"document {document + 1}: a manifest without {missing} (it has {has[0]})"


def _name_problem(body: Any, *, document: int, item: int | None) -> str | None:
    if not is_object(body):
        return None if item is None else "a List item without apiVersion and kind"
    meta = body.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        where = f"document {document + 1}" + (f", item {item}" if item is not None else "")
        return f"{where}: {body['kind']} without metadata.name"
    return None


def yaml_files(base: Path, *, suffixes: tuple[str, ...] = _YAML_SUFFIXES) -> Iterator[Path]:
    if base.is_file():
        yield base
        return
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if "Chart.yaml" in filenames and Path(dirpath) != base:
            dirnames[:] = []  # a Helm chart: its templates are not plain manifests
            continue
        for name in sorted(filenames):
            if name.endswith(suffixes) and name not in KUSTOMIZATION_FILES and name != "Chart.yaml":
                yield Path(dirpath) / name


def _repo_yaml_files(top: Path, *, root: Path, problems: list[Problem]) -> list[tuple[str, str, str]]:
    """``yaml_files`` of a repository (``top`` under its real top level ``root``), confined to it: a symbolic link
    (to a file or a folder) that resolves outside the repository is not read, and a problem names it; a link to a
    file inside is read under its own name, unless the file it resolves to is read under ``top`` anyway. Each as
    (its path, its POSIX path relative to ``root``, its folder): plain strings, as a repository of 10,000 manifests
    is read in every run."""
    if top.is_file():
        return [(str(top), top.relative_to(root).as_posix(), str(top.parent))]
    base = str(root)
    found: list[tuple[str, str, str, bool]] = []  # path, relative path, folder, a link?
    for dirpath, dirs, files in walk(str(top)):
        prefix = "" if dirpath == base else dirpath[len(base) :].lstrip(os.sep).replace(os.sep, "/") + "/"
        for d in dirs:
            why = escape(root, Path(d.path)) if not d.name.startswith(".") and is_link(d) else None
            if why is not None:
                problems.append(Problem(file=prefix + d.name, message=f"not read: {why}"))
        dirs[:] = sorted((d for d in dirs if not d.name.startswith(".")), key=entry_name)
        if dirpath != str(top) and any(f.name == "Chart.yaml" for f in files):
            dirs[:] = []  # a Helm chart: its templates are not plain manifests
            continue
        for f in sorted(files, key=entry_name):
            n = f.name
            if n.endswith(_YAML_SUFFIXES) and n not in KUSTOMIZATION_FILES and n != "Chart.yaml":
                found.append((f.path, prefix + n, dirpath, is_link(f)))
    regular = {full for full, _, _, link in found if not link}
    out: list[tuple[str, str, str]] = []
    for full, rel, folder, link in found:
        if link:
            why = escape(root, Path(full))
            if why is not None:
                problems.append(Problem(file=rel, message=f"not read: {why}"))
                continue
            if os.path.realpath(full) in regular:  # realpath, not Path.resolve: a link loop is refused by reading
                continue  # the file it resolves to is read under its real name
        out.append((full, rel, folder))
    return out


# ---------------------------------------------------------------- Git manifests


@dataclass(frozen=True, slots=True, kw_only=True)
class NamespaceDefaults:
    """Where a namespaced object's namespace comes from when its manifest has none (after Kustomize's)."""

    application: str | None = None  # the Argo CD Application's destination (or Flux targetNamespace)
    flag: str | None = None  # --namespace

    @property
    def fallback(self) -> str:
        return self.application or self.flag or "default"


class _KustomizeNamespaces:
    def __init__(self, *, top: Path, root: Path) -> None:
        self.top = top
        self.root = root
        self.cache: dict[Path, str | None] = {}
        self.problems: list[Problem] = []

    def _own(self, directory: Path) -> str | None:
        for name in KUSTOMIZATION_FILES:
            p = directory / name
            if p.is_symlink() and escape(self.root, p) is not None:
                continue  # never read outside the repository (_repo_yaml_files names it)
            if p.is_file():
                docs, unread = read_documents(p, file=str(p))
                self.problems.extend(unread)
                doc = docs[0] if docs else None
                ns = doc.get("namespace") if isinstance(doc, Mapping) else None
                return str(ns) if isinstance(ns, str) and ns else None
        return None

    def lookup(self, directory: Path) -> str | None:
        if directory not in self.cache:
            ns = self._own(directory)
            if ns is None and directory != self.top and self.top in directory.parents:
                ns = self.lookup(directory.parent)
            self.cache[directory] = ns
        return self.cache[directory]


def read_manifests(
    *,
    root: Path,
    path: str = ".",
    namespaces: NamespaceDefaults = NamespaceDefaults(),
    namespaced: NamespacedFn = builtin_namespaced,
    exclude: frozenset[str] = frozenset(),
    pack: bool = False,
) -> LoadResult[DesiredObject]:
    """The Kubernetes objects declared in ``root/path`` (files named relative to ``root``), as plain manifests.

    ``exclude``: files (or directories) relative to ``root`` that are no manifests, such as a ``--live`` dump saved
    in the repository. ``pack``: each body is packed as soon as its file is read (``bodies.PackedBody``), so the
    parsed files are never all held at once.

    Overlays are not rendered here: Kustomize targets go through ``adapters.kustomize.read_rendered``.

    Skips non-Kubernetes YAML (kustomization files, Helm values, documents without apiVersion and kind).
    A namespaced object without ``metadata.namespace`` gets the Kustomize ``namespace:`` of its directory
    (or a parent up to ``path``), else the Application's destination namespace, else ``--namespace``.
    A resource declared twice is left out, with a problem for each place.
    """
    top = Path(os.path.realpath(root / path))  # not Path.resolve, which raises on a link loop
    root = root.resolve()
    if not top.exists():
        link = " (a broken symbolic link or a link loop)" if (root / path).is_symlink() else ""
        raise InputError(f"{path}: no such directory in the repository {root}{link}")
    if top != root and root not in top.parents:
        raise InputError(f"--path {path}: outside the repository {root}")
    kns = _KustomizeNamespaces(top=top if top.is_dir() else top.parent, root=root)
    # per object, what naming and scoping read (``_Names``: not the body, which may be packed by then) and the body;
    # a CRD's whole body besides, since it scopes its kind for every object
    read: list[tuple[str, str, int, int | None, _Names, Mapping[str, Any]]] = []
    crds: list[Mapping[str, Any]] = []
    problems: list[Problem] = []
    for p, file, folder in _repo_yaml_files(top, root=root, problems=problems):
        if exclude and any(file == x or file.startswith(x.rstrip("/") + "/") for x in exclude):
            continue
        docs, unread = read_documents(p, file=file)
        problems.extend(unread)
        for d, doc in enumerate(docs):
            half = _half_manifest(doc, document=d)
            if half is not None:  # apiVersion without kind, or kind without apiVersion: a broken manifest
                problems.append(Problem(file=file, message=half))
            if not is_object(doc) or str(doc["apiVersion"]).startswith(_KUSTOMIZE_GROUP + "/"):
                continue
            for i, body in named_items(doc, file=file, document=d, problems=problems):
                if body.get("kind") == "CustomResourceDefinition":
                    crds.append(body)
                read.append((folder, file, d, i, _names(body), PackedBody.of(body) if pack else body))
    namespaced = with_crds(namespaced, crd_scopes(crds))  # a CRD in the tree scopes its kind
    found: list[DesiredObject] = []
    folders: dict[str, Path] = {}
    read.reverse()
    while read:  # each entry let go as its object is made: the two lists are never both whole
        folder, file, d, i, (api_version, kind, name, declared), body = read.pop()
        directory = folders.get(folder) or folders.setdefault(folder, Path(folder))
        ns: str | None = None
        if namespaced(api_version, kind) is not False:
            ns = declared if isinstance(declared, str) and declared else kns.lookup(directory) or namespaces.fallback
        ref = ObjectRef(api_version=api_version, kind=kind, namespace=ns, name=name)
        found.append(DesiredObject(ref=ref, body=body, file=file, document=d, item=i))
    problems.extend(Problem(file=_rel(Path(q.file), root), line=q.line, message=q.message) for q in kns.problems)
    objects, dupes = _unique(found)
    return LoadResult(objects=tuple(objects), problems=(*problems, *dupes))


def read_stream(
    *,
    text: str,
    file: str,
    namespaces: NamespaceDefaults = NamespaceDefaults(),
    namespaced: NamespacedFn = builtin_namespaced,
) -> LoadResult[DesiredObject]:
    """The objects of one rendered YAML stream (e.g. ``kustomize build`` output), each attributed to ``file``.

    A namespaced object without ``metadata.namespace`` gets the Application's namespace, else ``--namespace``.
    """
    docs, problem = parse_documents(text=text, file=file)
    problems: list[Problem] = [problem] if problem is not None else []
    read = [
        (d, i, body)
        for d, doc in enumerate(docs)
        if is_object(doc)
        for i, body in named_items(doc, file=file, document=d, problems=problems)
    ]
    namespaced = with_crds(namespaced, crd_scopes(body for *_, body in read))
    found: list[DesiredObject] = []
    for d, i, body in read:
        ns: str | None = None
        if namespaced(str(body["apiVersion"]), str(body["kind"])) is not False:
            own = (body.get("metadata") or {}).get("namespace")
            ns = own if isinstance(own, str) and own else namespaces.fallback
        found.append(DesiredObject(ref=ref_of(body, namespace=ns), body=body, file=file, document=d, item=i))
    objects, dupes = _unique(found)
    return LoadResult(objects=tuple(objects), problems=(*problems, *dupes))


def _rel(p: Path, root: Path) -> str:
    try:
        return Path(os.path.realpath(p)).relative_to(root).as_posix()
    except ValueError:
        return str(p)


_Names = tuple[str, str, str, Any]  # apiVersion, kind, metadata.name, metadata.namespace (as declared)


def _names(body: Mapping[str, Any]) -> _Names:
    """What naming and scoping read of an object's body (``named_items`` checked that it has a name)."""
    meta = body.get("metadata") or {}
    return str(body["apiVersion"]), str(body["kind"]), str(meta["name"]), meta.get("namespace")


def _unique(found: list[DesiredObject]) -> tuple[list[DesiredObject], list[Problem]]:
    by_id: dict[Identity, list[DesiredObject]] = {}
    for obj in found:
        by_id.setdefault(obj.ref.identity, []).append(obj)
    objects: list[DesiredObject] = []
    problems: list[Problem] = []
    for objs in by_id.values():
        if len(objs) == 1:
            objects.append(objs[0])
            continue
        places = ", ".join(f"{o.file} (document {o.document + 1})" for o in objs)
        for o in objs:
            problems.append(Problem(file=o.file, resource=o.ref, message=f"declared more than once: {places}"))
    return objects, problems
