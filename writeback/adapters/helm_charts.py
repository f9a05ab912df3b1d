"""Charts for ``helm template``: a directory of the repo (refused when it, or a symlink in it, leads outside the
repo: a repo is untrusted input), a packaged chart in a chart cache directory (what ``helm pull`` writes:
``NAME-VERSION.tgz``), or, in cluster mode, the artifact Flux's source-controller serves for a HelmChart or
OCIRepository (``status.artifact.url``, fetched over HTTP as Flux's controllers fetch it, checked against its
digest). A chart that cannot be had raises ChartUnavailable with the reason.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import threading
import urllib.error
import urllib.request
from collections import OrderedDict
from pathlib import Path

from writeback.adapters.helm_versions import pick
from writeback.charts import Artifact, ChartInfo, ChartRef, ChartUnavailable
from writeback.errors import YamlError
from writeback.yaml.reading import load_all

__all__ = ["Charts"]

MAX_ARTIFACT_BYTES = 64 * 2**20
MAX_FILE_BYTES = 8 * 2**20
FETCH_TIMEOUT = 30.0
_TOP_FILES = (".yaml", ".yml", ".json")
FETCHED_ENTRIES = 16
# Artifacts fetched by this process, by (URL, digest): a service cycle does not fetch an unchanged chart again.
_FETCHED: OrderedDict[tuple[str, str], bytes] = OrderedDict()
_FETCHED_LOCK = threading.Lock()


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class Charts:
    def __init__(self, *, repo: Path, chart_cache: Path | None, work: Path, fetch_artifacts: bool) -> None:
        self.repo = repo.resolve()
        self.cache = chart_cache.resolve() if chart_cache is not None else None
        self.work = work
        self.fetch_artifacts = fetch_artifacts
        self._digests: dict[Path, tuple[tuple[int, int, int], str]] = {}
        self._fetched: dict[str, Path] = {}

    # ------------------------------------------------------------ where a chart is

    def path(self, ref: ChartRef) -> tuple[Path, str]:
        """The chart's directory or .tgz, and a digest of its content."""
        if ref.path is not None:
            return self._repo_chart(ref.path)
        if ref.artifact is not None and self.fetch_artifacts:
            p = self._artifact(ref.artifact, ref)
            return p, _file_digest(p)
        if self.cache is not None and ref.name:
            p = self._cached(ref)
            return p, _file_digest(p)
        if ref.artifact is not None:
            raise ChartUnavailable(f"{ref}: its artifact is only fetched in cluster mode, and no chart cache has it")
        raise ChartUnavailable(
            f"{ref}: not in the repo and no chart cache given (--chart-cache DIR, filled by `helm pull`)"
        )

    def _repo_chart(self, rel: str) -> tuple[Path, str]:
        p = self.repo / rel
        try:
            resolved = p.resolve(strict=True)
        except OSError:
            raise ChartUnavailable(f"chart {rel}: no such directory in the repo") from None
        if not _inside(resolved, self.repo):
            raise ChartUnavailable(f"chart {rel}: leads outside the repository (a symlink); refused")
        if not (resolved / "Chart.yaml").is_file():
            raise ChartUnavailable(f"chart {rel}: no Chart.yaml")
        files: list[Path] = []
        signature = [0, 0, 0]
        for dirpath, dirnames, filenames in os.walk(resolved):
            for name in [*dirnames, *filenames]:
                q = Path(dirpath) / name
                if not q.is_symlink():
                    continue
                shown = q.relative_to(resolved).as_posix()
                if not _inside(Path(os.path.realpath(q)), self.repo):  # realpath: a loop must not raise here
                    raise ChartUnavailable(
                        f"chart {rel}: {shown} is a symlink that leads outside the repository; refused"
                    )
                if not q.exists():
                    raise ChartUnavailable(f"chart {rel}: {shown} is a broken symlink or a symlink loop; refused")
            for name in filenames:
                q = Path(dirpath) / name
                st = q.stat()
                signature = [signature[0] + 1, signature[1] + st.st_size, max(signature[2], st.st_mtime_ns)]
                files.append(q)
        sig = (signature[0], signature[1], signature[2])
        known = self._digests.get(resolved)
        if known is None or known[0] != sig:
            h = hashlib.sha256()
            for q in sorted(files):
                h.update(q.relative_to(resolved).as_posix().encode() + b"\0" + q.read_bytes() + b"\0")
            known = (sig, h.hexdigest())
            self._digests[resolved] = known
        return resolved, known[1]

    def _cached(self, ref: ChartRef) -> Path:
        assert self.cache is not None and ref.name
        prefix = f"{ref.name}-"
        versions = {p.name[len(prefix) : -len(".tgz")]: p for p in self.cache.glob(f"{prefix}*.tgz") if p.is_file()}
        version = pick(versions, ref.version)
        if version is None:
            have = ", ".join(sorted(versions)) or "none"
            raise ChartUnavailable(
                f"{ref}: not in the chart cache {self.cache} (versions there: {have}); fill it with `helm pull`"
            )
        return versions[version]

    def _artifact(self, artifact: Artifact, ref: ChartRef) -> Path:
        if artifact.url in self._fetched:
            return self._fetched[artifact.url]
        if not artifact.url.startswith(("http://", "https://")):
            raise ChartUnavailable(f"{ref}: artifact URL {artifact.url!r} is not HTTP")
        key = (artifact.url, artifact.digest or "")
        with _FETCHED_LOCK:
            data = _FETCHED.get(key) if artifact.digest else None  # one with a digest is the same bytes again
        if data is None:
            data = _fetch(artifact, ref)
        sha = hashlib.sha256(data).hexdigest()
        if artifact.digest and artifact.digest.startswith("sha256:") and artifact.digest != f"sha256:{sha}":
            raise ChartUnavailable(f"{ref}: its artifact's digest is sha256:{sha}, not {artifact.digest}")
        with _FETCHED_LOCK:
            _FETCHED[key] = data
            _FETCHED.move_to_end(key)
            while len(_FETCHED) > FETCHED_ENTRIES:
                _FETCHED.popitem(last=False)
        self.work.mkdir(parents=True, exist_ok=True)
        p = self.work / f"{sha}.tgz"
        p.write_bytes(data)
        self._fetched[artifact.url] = p
        return p

    # ------------------------------------------------------------ what is in it

    def info(self, ref: ChartRef) -> ChartInfo:
        p, digest = self.path(ref)
        files = _dir_files(p) if p.is_dir() else _tgz_files(p, ref)
        meta = _parse(files.get("Chart.yaml", ""), source=f"{ref} Chart.yaml")
        return ChartInfo(
            name=str(meta.get("name") or ref.name or p.name),
            version=str(meta.get("version") or ""),
            digest=digest,
            values=files.get("values.yaml", ""),
            schema=files.get("values.schema.json"),
            files={k: v for k, v in files.items() if k not in ("Chart.yaml", "values.schema.json")},
        )

    def copy_with_values(self, chart: Path, values: str, dest: Path) -> Path:
        """A copy of ``chart`` whose ``values.yaml`` is ``values`` (Flux: the chart's valuesFiles, merged)."""
        if chart.is_dir():
            shutil.copytree(chart, dest, symlinks=False)
            top = dest
        else:
            dest.mkdir(parents=True)
            with tarfile.open(chart, "r:gz") as tar:
                tar.extractall(dest, filter="data")
            dirs = [d for d in dest.iterdir() if d.is_dir()]
            if len(dirs) != 1:
                raise ChartUnavailable(f"{chart.name}: not a packaged chart (one top directory expected)")
            top = dirs[0]
        (top / "values.yaml").write_text(values, encoding="utf-8")
        return top


def _fetch(artifact: Artifact, ref: ChartRef) -> bytes:
    try:
        with urllib.request.urlopen(artifact.url, timeout=FETCH_TIMEOUT) as resp:
            data: bytes = resp.read(MAX_ARTIFACT_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise ChartUnavailable(f"{ref}: cannot fetch its artifact {artifact.url}: {e}") from e
    if len(data) > MAX_ARTIFACT_BYTES:
        raise ChartUnavailable(f"{ref}: its artifact is larger than {MAX_ARTIFACT_BYTES // 2**20} MiB")
    return data


def _file_digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _parse(text: str, *, source: str) -> dict[str, object]:
    try:
        docs = load_all(text, source=source) if text else []
    except YamlError as e:
        raise ChartUnavailable(f"{source}: does not parse: {e}") from e
    return dict(docs[0]) if docs and isinstance(docs[0], dict) else {}


def _dir_files(p: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for q in sorted(p.iterdir()):
        if q.is_file() and q.name.endswith(_TOP_FILES) and q.stat().st_size <= MAX_FILE_BYTES:
            out[q.name] = q.read_text(encoding="utf-8", errors="replace")
    return out


def _tgz_files(p: Path, ref: ChartRef) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        with tarfile.open(p, "r:gz") as tar:
            for m in tar.getmembers():
                parts = m.name.split("/")
                if len(parts) != 2 or not m.isfile() or not parts[1].endswith(_TOP_FILES) or m.size > MAX_FILE_BYTES:
                    continue
                f = tar.extractfile(m)
                if f is not None:
                    out[parts[1]] = io.TextIOWrapper(f, encoding="utf-8", errors="replace").read()
    except (tarfile.TarError, OSError) as e:
        raise ChartUnavailable(f"{ref}: {p.name} is not a readable chart archive: {e}") from e
    if "Chart.yaml" not in out:
        raise ChartUnavailable(f"{ref}: {p.name} has no Chart.yaml")
    return out
