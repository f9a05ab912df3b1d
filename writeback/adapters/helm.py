"""The real helm CLI (v3): ``helm template`` as Argo CD's repo-server and Flux's helm-controller render a release,
Flux's Kustomize post-renderers through the real kustomize, and the chart a release names (see ``helm_charts``).

Implements :class:`writeback.sources.helm.model.Renderer`. The binary is ``$WRITEBACK_HELM`` if set, else ``helm``
on PATH; missing -> ToolMissing (exit 2). Values go to a private temporary directory outside the repo; helm runs
with its own empty home (no repositories, no kubeconfig: nothing reaches a cluster). Renders are cached by
(chart digest, request).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

from writeback.adapters import kustomize
from writeback.adapters.helm_charts import Charts
from writeback.adapters.tools import find_tool
from writeback.charts import ChartInfo, ChartRef, KustomizeStep, RenderFailed, RenderOutput, RenderRequest
from writeback.errors import PatchError, ToolMissing

__all__ = ["ENV_VAR", "SHARED", "HelmCLI", "RenderCache", "find_helm"]

ENV_VAR = "WRITEBACK_HELM"
TIMEOUT_SECONDS = 120.0
CACHE_ENTRIES = 256


def find_helm() -> Path:
    """The helm binary, or ToolMissing naming what was tried."""
    return find_tool(
        env_var=ENV_VAR,
        names=("helm",),
        missing=f"helm is not on PATH: install helm v3 (https://helm.sh/docs/intro/install/) or set ${ENV_VAR} to its "
        "path",
    )


def _escape(value: str) -> str:
    """A --set value as Argo CD passes it: commas escaped, unless it is a ``{a,b}`` list."""
    if value.startswith("{") and value.endswith("}"):
        return value
    out, prev = [], ""
    for ch in value:
        out.append("\\," if ch == "," and prev != "\\" else ch)
        prev = ch
    return "".join(out)


class RenderCache:
    """Renders by (chart digest, request), least recently used out first, and the helm runs and cache hits it saw.
    Safe to share between threads: the Helm source shares ``SHARED`` across the runs of one process, so that a
    cycle whose charts and values did not change renders nothing."""

    def __init__(self, entries: int = CACHE_ENTRIES) -> None:
        self._renders: OrderedDict[tuple[str, str], RenderOutput] = OrderedDict()
        self._entries = entries
        self._lock = threading.Lock()
        self.runs = 0
        self.hits = 0

    def get(self, key: tuple[str, str]) -> RenderOutput | None:
        with self._lock:
            hit = self._renders.get(key)
            if hit is not None:
                self.hits += 1
                self._renders.move_to_end(key)
            return hit

    def clear(self) -> None:
        """Forget every render and reset the counts (a benchmark's cold start)."""
        with self._lock:
            self._renders.clear()
            self.runs = self.hits = 0

    def put(self, key: tuple[str, str], output: RenderOutput) -> None:
        with self._lock:
            self.runs += 1
            self._renders[key] = output
            while len(self._renders) > self._entries:
                self._renders.popitem(last=False)


SHARED = RenderCache()  # the process's renders (the Helm source's; bench/helm_renders.py counts its runs)


class HelmCLI:
    """``helm template`` for the charts of one repo checkout (``repo``), with a chart cache directory (what
    ``helm pull`` writes) and, in cluster mode, Flux's artifacts. ``runs``: helm executions; ``hits``: renders
    answered from the cache (``cache``: a private one unless given, e.g. ``SHARED``)."""

    def __init__(
        self,
        *,
        repo: Path,
        binary: Path | None = None,
        kustomize_binary: Path | None = None,
        chart_cache: Path | None = None,
        fetch_artifacts: bool = False,
        cache_entries: int = CACHE_ENTRIES,
        cache: RenderCache | None = None,
    ) -> None:
        self.binary = binary or find_helm()
        self.kustomize_binary = kustomize_binary
        self.repo = repo.resolve()
        self._tmp = Path(tempfile.mkdtemp(prefix="writeback-helm-"))
        os.chmod(self._tmp, 0o700)
        self.charts = Charts(
            repo=self.repo, chart_cache=chart_cache, work=self._tmp / "charts", fetch_artifacts=fetch_artifacts
        )
        self._cache = cache or RenderCache(cache_entries)
        self.runs = 0
        self.hits = 0

    def close(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> HelmCLI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chart(self, ref: ChartRef) -> ChartInfo:
        return self.charts.info(ref)

    def _env(self, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE")}
        env |= {
            "HOME": str(home),
            "XDG_CACHE_HOME": str(home / "cache"),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
            "KUBECONFIG": str(home / "no-kubeconfig"),
        }
        return env

    def render(self, request: RenderRequest) -> RenderOutput:
        chart_path, digest = self.charts.path(request.chart)
        key = (digest, request.key())
        hit = self._cache.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        with tempfile.TemporaryDirectory(prefix="run-", dir=self._tmp) as run_dir:
            run = Path(run_dir)
            if request.chart_values is not None:
                chart_path = self.charts.copy_with_values(chart_path, request.chart_values, run / "chart")
            text = self._template(chart_path, request, run)
            post = self._post_render(text, request.post_render, run) if request.post_render else None
        out = RenderOutput(text=text, post_rendered=post)
        self._cache.put(key, out)
        return out

    def _args(self, chart_path: Path, request: RenderRequest, run: Path) -> list[str]:
        args = [str(self.binary), "template", str(chart_path), "--name-template", request.release_name]
        if request.namespace:
            args += ["--namespace", request.namespace]
        if request.kube_version:
            args += ["--kube-version", request.kube_version]
        args += [a for k, v in request.set for a in ("--set", f"{k}={_escape(v)}")]
        args += [a for k, v in request.set_string for a in ("--set-string", f"{k}={_escape(v)}")]
        for i, (k, content) in enumerate(request.set_file):
            p = run / f"file-{i}"
            p.write_text(content, encoding="utf-8")
            args += ["--set-file", f"{k}={_escape(str(p))}"]
        for i, values in enumerate(request.values):
            p = run / f"values-{i}.yaml"
            p.write_text(values.text, encoding="utf-8")
            args += ["--values", str(p)]
        args += [a for v in request.api_versions for a in ("--api-versions", v)]
        if request.include_crds:
            args.append("--include-crds")
        if request.skip_schema_validation:
            args.append("--skip-schema-validation")
        if request.skip_tests:
            args.append("--skip-tests")
        if request.no_hooks:
            args.append("--no-hooks")
        return args

    def _template(self, chart_path: Path, request: RenderRequest, run: Path) -> str:
        home = run / "home"
        home.mkdir()
        args = self._args(chart_path, request, run)
        self.runs += 1
        try:
            proc = subprocess.run(
                args,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_SECONDS,
                check=False,
                env=self._env(home),
                cwd=run,
                stdin=subprocess.DEVNULL,
            )
        except OSError as e:
            raise ToolMissing(f"{self.binary}: cannot run: {e.strerror}") from e
        except subprocess.TimeoutExpired as e:
            raise RenderFailed(f"helm template {request.chart}: timed out after {TIMEOUT_SECONDS:.0f}s") from e
        if proc.returncode != 0:
            raise RenderFailed(self._clean(proc.stderr.strip() or f"helm exited {proc.returncode}", run))
        return proc.stdout

    def _clean(self, message: str, run: Path) -> str:
        """helm's message with the private directories and the repo's absolute path taken out."""
        for prefix, shown in ((str(run), "<values>"), (str(self._tmp), "<charts>"), (str(self.repo) + "/", "")):
            message = message.replace(prefix, shown)
        return message.removeprefix("Error: ")

    def _post_render(self, text: str, steps: tuple[KustomizeStep, ...], run: Path) -> str:
        """Flux's Kustomize post-renderers, one after the other, through the real kustomize."""
        binary = self.kustomize_binary or kustomize.find_kustomize()
        current = text
        for i, step in enumerate(steps):
            d = run / f"post-{i}"
            d.mkdir()
            (d / "helm-output.yaml").write_text(current, encoding="utf-8")
            k: dict[str, object] = {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": ["helm-output.yaml"],
            }
            if step.patches:
                k["patches"] = [dict(p) for p in step.patches]
            if step.images:
                k["images"] = [dict(im) for im in step.images]
            (d / "kustomization.yaml").write_text(json.dumps(k), encoding="utf-8")
            try:
                current = kustomize.build(d, binary=binary)
            except PatchError as e:
                raise RenderFailed(f"post-renderer {i + 1} (kustomize): {self._clean(str(e), run)}") from e
        return current
