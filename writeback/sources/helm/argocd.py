"""An Argo CD Application's Helm sources as releases, with the semantics of Argo CD's repo-server. Pure.

- The release name is ``helm.releaseName``, else the Application's name; the namespace ``helm.namespace``, else
  ``spec.destination.namespace``; ``helm.kubeVersion`` and ``helm.apiVersions`` override the cluster's.
- ``helm.valueFiles`` are relative to the source's ``path`` (absolute: to the repo root); ``$ref/...`` is relative
  to the root of the source whose ``ref`` is ``ref``; URLs are not read. For a chart of a Helm repository they are
  files of the chart.
- ``helm.valuesObject`` wins over ``helm.values``; either is one more ``-f`` after the value files.
- ``helm.parameters`` are ``--set`` (``forceString``: ``--set-string``), ``helm.fileParameters`` ``--set-file``:
  above every file.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from writeback.charts import ChartRef
from writeback.kube.pathtypes import FieldPath, Index, Key, Select
from writeback.kube.refs import ObjectRef
from writeback.sources.helm.claiming import is_helm_source, repo_relative
from writeback.sources.helm.model import Form, Layer, LayerKind, Release, Where

__all__ = ["normalize_repo_url", "releases_from_application"]

_HELM_KEYS = ("chart",)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def normalize_repo_url(url: str) -> str:
    """A repository URL compared as Argo CD compares them: lower case, no scheme user, no ``.git``, no ``/``."""
    u = url.strip().lower()
    u = re.sub(r"^[a-z+]+://", "", u)
    u = re.sub(r"^[^@/]+@", "", u)
    u = u.replace(":", "/", 1) if re.match(r"^[^/]+:[^0-9]", u) else u
    return u.rstrip("/").removesuffix(".git")


def _is_url(text: str) -> bool:
    return re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", text) is not None


def _envsubst(text: str, env: Mapping[str, str]) -> str | None:
    """``$VAR`` and ``${VAR}`` of Argo CD's build environment; None when one is not known."""
    missing = False

    def sub(m: re.Match[str]) -> str:
        nonlocal missing
        name = m.group(1) or m.group(2)
        if name not in env:
            missing = True
            return m.group(0)
        return env[name]

    out = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", sub, text)
    return None if missing else out


def releases_from_application(
    app: Mapping[str, Any],
    *,
    files: Mapping[str, str],
    where: Where | None = None,
    repo_urls: Collection[str] | None = None,
    kube_version: str | None = None,
    api_versions: Sequence[str] = (),
    revision: str | None = None,
) -> tuple[Release, ...]:
    """One release per Helm source of ``app``. ``where``: the Application's document in the repo (file and
    document), if it is there; ``repo_urls``: the URLs that mean the repo at hand (None: every source is it);
    ``kube_version``/``api_versions``: the cluster's, used unless the source sets its own."""
    meta = _mapping(app.get("metadata"))
    spec = _mapping(app.get("spec"))
    name = str(meta.get("name", ""))
    owner = ObjectRef(
        api_version=str(app.get("apiVersion", "argoproj.io/v1alpha1")),
        kind="Application",
        namespace=str(meta.get("namespace") or "") or None,
        name=name,
    )
    dest = _mapping(spec.get("destination"))
    many = isinstance(spec.get("sources"), list)
    sources: list[Any] = list(spec.get("sources") or []) if many else [spec.get("source") or {}]
    refs = {f"${s['ref']}": s for s in sources if isinstance(s, Mapping) and isinstance(s.get("ref"), str)}
    ours = {normalize_repo_url(u) for u in repo_urls} if repo_urls is not None else None

    def in_repo(url: Any) -> bool:
        return ours is None or (isinstance(url, str) and normalize_repo_url(url) in ours)

    out: list[Release] = []
    for i, source in enumerate(sources):
        if not isinstance(source, Mapping) or not is_helm_source(source, files.__contains__):
            continue
        base: FieldPath = (Key("spec"), Key("sources"), Index(i)) if many else (Key("spec"), Key("source"))
        env = {
            "ARGOCD_APP_NAME": name,
            "ARGOCD_APP_NAMESPACE": str(dest.get("namespace") or ""),
            "ARGOCD_APP_PROJECT_NAME": str(spec.get("project") or ""),
            "ARGOCD_APP_SOURCE_REPO_URL": str(source.get("repoURL") or ""),
            "ARGOCD_APP_SOURCE_PATH": str(source.get("path") or ""),
            "ARGOCD_APP_SOURCE_TARGET_REVISION": str(source.get("targetRevision") or ""),
        }
        if revision:
            env |= {
                "ARGOCD_APP_REVISION": revision,
                "ARGOCD_APP_REVISION_SHORT": revision[:7],
                "ARGOCD_APP_REVISION_SHORT_8": revision[:8],
            }
        out.append(
            _release(
                source,
                base=base,
                owner=owner,
                dest=dest,
                env=env,
                refs=refs,
                in_repo=in_repo,
                where=where,
                kube_version=kube_version,
                api_versions=api_versions,
                files=files,
            )
        )
    return tuple(out)


def _release(
    source: Mapping[str, Any],
    *,
    base: FieldPath,
    owner: ObjectRef,
    dest: Mapping[str, Any],
    env: Mapping[str, str],
    refs: Mapping[str, Any],
    in_repo: Any,
    where: Where | None,
    kube_version: str | None,
    api_versions: Sequence[str],
    files: Mapping[str, str],
) -> Release:
    helm = _mapping(source.get("helm"))
    problems: list[str] = []
    path = source.get("path") if isinstance(source.get("path"), str) else None
    remote = bool(source.get("chart"))
    if remote:
        chart = ChartRef(
            repo_url=str(source.get("repoURL") or ""),
            name=str(source["chart"]),
            version=str(source.get("targetRevision") or "") or None,
        )
        chart_dir = None
    else:
        chart_dir = repo_relative(path or ".")
        if chart_dir is None:
            problems.append(f"source path {path!r} leaves the repository")
        elif not in_repo(source.get("repoURL")):
            problems.append(f"the chart is in another repository ({source.get('repoURL')})")
        chart = ChartRef(path=chart_dir or ".")
    layers: list[Layer] = [
        Layer(
            kind=LayerKind.CHART, name=f"{chart.name or chart_dir}/values.yaml", chart_file="values.yaml", shared=True
        )
    ]
    own_values = posixpath.normpath(posixpath.join(chart_dir, "values.yaml")) if chart_dir else None
    ignore_missing = bool(helm.get("ignoreMissingValueFiles"))
    for raw in helm.get("valueFiles") or ():
        layer = _values_file(str(raw), chart_dir=chart_dir, remote=remote, env=env, refs=refs, in_repo=in_repo)
        if layer.where is not None and layer.where.file not in files:
            if ignore_missing:
                continue
            layer = Layer(
                kind=layer.kind, name=layer.name, unreadable=f"values file {layer.where.file} is not in the repo"
            )
        if layer.where is not None and layer.where.file == own_values:
            layer = Layer(kind=LayerKind.VALUES_FILE, name=layer.name, where=layer.where, shared=True)
        layers.append(layer)
    helm_path: FieldPath = (*base, Key("helm"))
    inline_where = (
        Where(file=where.file, document=where.document, path=(*helm_path, Key("valuesObject"))) if where else None
    )
    obj = helm.get("valuesObject")
    if isinstance(obj, Mapping):
        layers.append(Layer(kind=LayerKind.INLINE, name="helm.valuesObject", where=inline_where, data=dict(obj)))
    elif isinstance(helm.get("values"), str) and helm["values"].strip():
        text_where = (
            Where(file=where.file, document=where.document, path=(*helm_path, Key("values")), form=Form.TEXT)
            if where
            else None
        )
        layers.append(Layer(kind=LayerKind.INLINE, name="helm.values", where=text_where, data=helm["values"]))
    elif inline_where is not None:  # none yet: where they would be created (read back once an edit creates them)
        layers.append(Layer(kind=LayerKind.INLINE, name="helm.valuesObject", where=inline_where))
    for param in helm.get("parameters") or ():
        if not isinstance(param, Mapping) or not isinstance(param.get("name"), str):
            continue
        kind = LayerKind.STRING_PARAMETER if param.get("forceString") else LayerKind.PARAMETER
        value = param.get("value")
        text = (
            ""
            if value is None
            else value
            if isinstance(value, str)
            else str(value).lower()
            if isinstance(value, bool)
            else str(value)
        )
        pwhere = (
            Where(
                file=where.file,
                document=where.document,
                form=Form.SCALAR,
                path=(*helm_path, Key("parameters"), Select((("name", param["name"]),)), Key("value")),
            )
            if where
            else None
        )
        layers.append(Layer(kind=kind, name=f"parameter {param['name']}", key=param["name"], where=pwhere, data=text))
    for param in helm.get("fileParameters") or ():
        if not isinstance(param, Mapping) or not isinstance(param.get("name"), str):
            continue
        target = _values_file(
            str(param.get("path") or ""), chart_dir=chart_dir, remote=remote, env=env, refs=refs, in_repo=in_repo
        )
        fwhere = Where(file=target.where.file, form=Form.FILE) if target.where is not None else None
        layers.append(
            Layer(
                kind=LayerKind.FILE_PARAMETER,
                name=f"file parameter {param['name']}",
                key=param["name"],
                where=fwhere,
                unreadable=target.unreadable if fwhere is None else None,
            )
        )
    namespace = str(helm.get("namespace") or dest.get("namespace") or "")
    own = inline_where
    if not isinstance(obj, Mapping) and isinstance(helm.get("values"), str) and helm["values"].strip() and where:
        own = Where(file=where.file, document=where.document, path=(*helm_path, Key("values")), form=Form.TEXT)
    return Release(
        owner=owner,
        chart=chart,
        name=str(helm.get("releaseName") or owner.name),
        namespace=namespace,
        layers=tuple(layers),
        manifest=where,
        own=own,
        kube_version=str(helm.get("kubeVersion") or "") or kube_version,
        api_versions=tuple(str(v) for v in helm.get("apiVersions") or ()) or tuple(api_versions),
        include_crds=not helm.get("skipCrds"),
        skip_tests=bool(helm.get("skipTests")),
        skip_schema_validation=bool(helm.get("skipSchemaValidation")),
        problems=tuple(problems),
    )


def _values_file(
    raw: str, *, chart_dir: str | None, remote: bool, env: Mapping[str, str], refs: Mapping[str, Any], in_repo: Any
) -> Layer:
    """A ``valueFiles`` (or ``fileParameters``) entry as a layer."""
    name = raw
    head, _, rest = raw.partition("/")
    if raw.startswith("$") and head in refs:
        ref = refs[head]
        if not in_repo(ref.get("repoURL")):
            return Layer(
                kind=LayerKind.VALUES_FILE,
                name=name,
                unreadable=f"values file {raw} is in another repository ({ref.get('repoURL')})",
            )
        path = _envsubst(rest, env)
        clean = repo_relative(path) if path is not None else None
        if clean is None:
            return Layer(kind=LayerKind.VALUES_FILE, name=name, unreadable=f"values file {raw} cannot be resolved")
        return Layer(kind=LayerKind.VALUES_FILE, name=name, where=Where(file=clean))
    path = _envsubst(raw, env)
    if path is None:
        return Layer(kind=LayerKind.VALUES_FILE, name=name, unreadable=f"values file {raw} names an unknown variable")
    if _is_url(path):
        return Layer(kind=LayerKind.VALUES_FILE, name=name, unreadable=f"values file {raw} is a URL (not read)")
    if remote:
        return Layer(kind=LayerKind.VALUES_FILE, name=name, chart_file=posixpath.normpath(path), shared=True)
    joined = path if path.startswith("/") else posixpath.join(chart_dir or ".", path)
    clean = repo_relative(joined)
    if clean is None:
        return Layer(kind=LayerKind.VALUES_FILE, name=name, unreadable=f"values file {raw} leaves the repository")
    return Layer(kind=LayerKind.VALUES_FILE, name=name, where=Where(file=clean))
