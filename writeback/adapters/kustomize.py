"""The real kustomize CLI (v5): render an overlay (Git's desired objects), and verify a patched repo.

The binary is ``$WRITEBACK_KUSTOMIZE`` if set, else ``kustomize`` on PATH, else ``kubectl`` on PATH (run as
``kubectl kustomize``, the Kustomize built into kubectl, as Argo CD users have it); none -> ToolMissing (exit 2).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from writeback.adapters.confinement import escape, shown
from writeback.adapters.files import (
    LoadResult,
    NamespaceDefaults,
    NamespacedFn,
    Problem,
    builtin_namespaced,
    read_documents,
    read_stream,
)
from writeback.adapters.tools import find_tool
from writeback.errors import PatchError, ToolMissing
from writeback.kube.manifests import KUSTOMIZATION_FILES
from writeback.model import DesiredObject
from writeback.yaml.reading import load_all

ENV_VAR = "WRITEBACK_KUSTOMIZE"
TIMEOUT_SECONDS = 120.0


def find_kustomize() -> Path:
    """The kustomize binary (or kubectl, whose ``kustomize`` subcommand is the same), or ToolMissing naming what was
    tried."""
    return find_tool(
        env_var=ENV_VAR,
        names=("kustomize", "kubectl"),
        missing=f"neither kustomize nor kubectl is on PATH: install kustomize v5 (https://kubectl.docs.kubernetes.io/"
        f"installation/kustomize/) or kubectl, or set ${ENV_VAR} to the path of either",
    )


def is_kubectl(binary: Path) -> bool:
    """Whether ``binary`` is kubectl (``kubectl kustomize DIR``) rather than kustomize (``kustomize build DIR``)."""
    return binary.name.split(".")[0].startswith("kubectl")


def command(binary: Path, directory: Path) -> list[str]:
    """The command line that renders ``directory``."""
    return [str(binary), "kustomize" if is_kubectl(binary) else "build", str(directory)]


def build(directory: Path, *, binary: Path | None = None) -> str:
    """``kustomize build DIRECTORY`` (or ``kubectl kustomize DIRECTORY``): the rendered YAML stream; a failure
    raises PatchError with its stderr."""
    exe = binary or find_kustomize()
    try:
        proc = subprocess.run(
            command(exe, directory),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except OSError as e:
        raise ToolMissing(f"{exe}: cannot run: {e.strerror}") from e
    except subprocess.TimeoutExpired as e:
        raise PatchError(f"{_name(exe)} {directory}: timed out after {TIMEOUT_SECONDS:.0f}s") from e
    if proc.returncode != 0:
        raise PatchError(f"{_name(exe)} {directory} failed: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout


def _name(binary: Path) -> str:
    return "kubectl kustomize" if is_kubectl(binary) else "kustomize build"


def render(directory: Path, *, binary: Path | None = None) -> list[dict[str, Any]]:
    """The objects ``kustomize build`` produces for ``directory`` (bounded reading: raises YamlError)."""
    text = build(directory, binary=binary)
    return [d for d in load_all(text, source=f"kustomize build {directory}") if isinstance(d, dict)]


def build_patched(repo: Path, *, path: str, changes: Mapping[str, str], binary: Path | None = None) -> str:
    """``kustomize build`` of ``repo/path`` in a temporary copy of the repo with ``changes`` (path -> text) written."""
    with tempfile.TemporaryDirectory(prefix="writeback-kustomize-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".git"), symlinks=True)  # links stay links
        for rel, text in changes.items():
            target = copy / rel
            why = escape(copy, target)
            if why is not None:  # never written through a link that leaves the (copied) repository
                raise PatchError(f"refusing to write {rel}: {why}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", newline="")
        unsafe = unsafe_inputs(root=copy, top=copy / path)
        if unsafe:
            raise PatchError(f"kustomize build {path} not run: " + "; ".join(str(p) for p in unsafe))
        return build(copy / path, binary=binary)


def kustomization_file(directory: Path) -> Path | None:
    """The kustomization file of ``directory`` (kustomization.yaml, .yml or Kustomization), if any."""
    for name in KUSTOMIZATION_FILES:
        if (directory / name).is_file():
            return directory / name
    return None


# What a kustomization may make ``kustomize build`` load: folders (other kustomizations) and files, by key.
_ROOT_KEYS = ("resources", "bases", "components", "generators", "transformers", "validators", "configurations",
              "crds")  # fmt: skip
_PATH_ITEM_KEYS = ("patches", "patchesJson6902", "replacements")  # a list of {path: FILE, ...}


def _local(entry: object) -> str | None:
    """A reference to a local file or folder (not a remote one, not an inline patch)."""
    if not isinstance(entry, str) or not entry or "\n" in entry or "://" in entry:
        return None
    return entry


def _list(spec: Mapping[str, Any], key: str) -> list[Any]:
    value = spec.get(key)
    return value if isinstance(value, list) else []


def _references(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every local path a kustomization names, as (its key, the path): ``resources``, ``components``, generators'
    ``files``/``envs``, patch files, ``openapi.path``, ..."""
    out: list[tuple[str, str]] = []

    def add(where: str, entry: object) -> None:
        if (path := _local(entry)) is not None:
            out.append((where, path))

    for key in _ROOT_KEYS:
        for e in _list(spec, key):
            add(key, e)
    for key in _PATH_ITEM_KEYS:
        for e in _list(spec, key):
            add(f"{key}[].path", e.get("path") if isinstance(e, Mapping) else None)
    for e in _list(spec, "patchesStrategicMerge"):
        add("patchesStrategicMerge", e)
    for key in ("configMapGenerator", "secretGenerator"):
        for g in (g for g in _list(spec, key) if isinstance(g, Mapping)):
            for f in _list(g, "files"):
                add(f"{key}[].files", f.partition("=")[2] or f if isinstance(f, str) else None)  # KEY=PATH or PATH
            for f in _list(g, "envs"):
                add(f"{key}[].envs", f)
            add(f"{key}[].env", g.get("env"))
    openapi = spec.get("openapi")
    if isinstance(openapi, Mapping):
        add("openapi.path", openapi.get("path"))
    return out


def unsafe_inputs(*, root: Path, top: Path) -> list[Problem]:
    """Why ``kustomize build top`` must not run: the inputs it may read that leave the repository, and the local
    YAML files it may read that writeback's bounded loader refuses.

    Outside the repository (``adapters.confinement``): kustomize's own load restrictor keeps the files a
    kustomization loads under its folder (after following links), but it follows a folder reference (``resources:
    [../../../../srv]``, or a link to a folder) anywhere. So every local path a kustomization names (resources,
    bases, components, generators and transformers, patch and generator files, ...), the kustomization files
    themselves and the overlay are checked first, folder by folder through the whole tree of kustomizations, and
    none of them is read when it leaves the repository.

    YAML bombs: kustomize expands YAML aliases without a bound: a billion-laughs file among its inputs makes it grow
    by gigabytes for minutes. So the files it may read (under the overlay and the local folders it refers to) are
    read here first. Only files with an anchor (``&``) can expand, so only those are parsed. Remote references are
    kustomize's own.
    """
    problems: list[Problem] = []
    seen: set[Path] = set()
    base = root.resolve()
    why = escape(root, top)
    if why is not None:
        return [Problem(file=shown(root, top), message=why)]
    pending = [top]
    while pending:
        d = Path(os.path.realpath(pending.pop()))  # not Path.resolve: a link loop must not raise
        if d in seen or not d.is_dir() or (d != base and base not in d.parents):
            continue
        seen.add(d)
        kfile = kustomization_file(d)
        if kfile is not None and (why := escape(base, kfile)) is not None:
            problems.append(Problem(file=kfile.relative_to(base).as_posix(), message=why))
            continue
        for p in sorted(d.rglob("*")):
            if p.name.endswith((".yaml", ".yml")) or p.name == "Kustomization":
                if p.is_symlink() and escape(base, p) is not None:
                    continue  # never read; kustomize refuses it too, and a reference to it is named below
                if not p.is_file() or "&" not in p.read_text(encoding="utf-8", errors="replace"):
                    continue
                _, bad = read_documents(p, file=p.relative_to(base).as_posix())
                problems.extend(bad)
        docs, _ = read_documents(kfile, file=kfile.relative_to(base).as_posix()) if kfile is not None else ([], [])
        spec = docs[0] if docs and isinstance(docs[0], dict) else {}
        for where, entry in _references(spec):
            why = escape(base, d / entry)
            if why is not None and kfile is not None:
                problems.append(Problem(file=kfile.relative_to(base).as_posix(), message=f"{where} {entry}: {why}"))
            elif (d / entry).is_dir():
                pending.append(d / entry)
    return problems


def read_rendered(
    *,
    root: Path,
    path: str,
    namespaces: NamespaceDefaults | None = None,
    namespaced: NamespacedFn = builtin_namespaced,
    binary: Path | None = None,
    where: str = "",
) -> LoadResult[DesiredObject]:
    """The objects ``kustomize build root/path`` renders, each attributed to the overlay's kustomization file.

    ``root`` is the repo's root (bases outside ``path`` are read from it); file names are relative to it.
    A missing kustomization or a failed build is a Problem (``where`` says which revision); a missing
    kustomize binary raises ToolMissing.
    """
    exe = binary or find_kustomize()
    top = root / path
    why = escape(root, top)
    if why is not None:
        return LoadResult(problems=(Problem(file=shown(root, top), message=f"{why}: not read{where}"),))
    found = kustomization_file(top)
    if found is None:
        rel = Path(path).as_posix().rstrip("/") or "."
        names = ", ".join(KUSTOMIZATION_FILES)
        return LoadResult(problems=(Problem(file=rel, message=f"no kustomization ({names}){where}"),))
    file = found.relative_to(root).as_posix()
    unsafe = unsafe_inputs(root=root, top=top)
    if unsafe:
        not_run = f"; kustomize build not run{where}"
        return LoadResult(problems=tuple(replace(p, message=p.message + not_run) for p in unsafe))
    try:
        text = build(top, binary=exe)
    except PatchError as e:
        message = str(e)
        for prefix in {str(root.resolve()), str(root)}:
            message = message.replace(prefix + "/", "")
        return LoadResult(problems=(Problem(file=file, message=f"{message}{where}"),))
    return read_stream(text=text, file=file, namespaces=namespaces or NamespaceDefaults(), namespaced=namespaced)
