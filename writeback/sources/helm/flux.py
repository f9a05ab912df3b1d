"""A Flux HelmRelease as a release, with the semantics of helm-controller and source-controller. Pure.

- Release name: ``spec.releaseName``, else ``[targetNamespace-]name``, shortened past 53 characters to its first
  40, ``-`` and 12 hex characters of its SHA-256 (helm-controller's ``release.ShortenName``).
- Namespace: ``spec.targetNamespace``, else the HelmRelease's.
- Values: the chart's ``values.yaml`` (replaced by its ``valuesFiles``, merged, when given: source-controller
  packages them as the chart's values), then ``valuesFrom`` in order (ConfigMaps found in the repo; a Secret is
  never read), then ``spec.values``, merged with ``MergeMaps`` (a ``targetPath`` sets one key).
- Hooks are not part of the release's manifest; CRDs are, unless ``install.crds: Skip``.
- Post-rendering: ``postRenderers[].kustomize`` (patches, images), then ``commonMetadata`` and the labels
  ``helm.toolkit.fluxcd.io/name`` and ``.../namespace`` (the HelmRelease's) on every object; then what Helm's
  install adds to every object: the label ``app.kubernetes.io/managed-by: Helm`` and the annotations
  ``meta.helm.sh/release-name`` and ``meta.helm.sh/release-namespace``.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from writeback.charts import Artifact, ChartRef, KustomizeStep
from writeback.kube.pathtypes import FieldPath, Index, Key
from writeback.kube.refs import Identity, ObjectRef
from writeback.kube.wellknown import MANAGED_BY
from writeback.model import DesiredObject
from writeback.sources.helm.argocd import normalize_repo_url
from writeback.sources.helm.model import Form, Layer, LayerKind, PostRender, Release, Where

__all__ = ["GROUP", "artifact_of", "chart_object", "release_from_helmrelease", "release_name"]

GROUP = "helm.toolkit.fluxcd.io"
MAX_RELEASE_NAME = 53
Find = Callable[[Identity], DesiredObject | None]


def release_name(hr: Mapping[str, Any]) -> str:
    """The Helm release name helm-controller uses for ``hr``."""
    meta = _mapping(hr.get("metadata"))
    spec = _mapping(hr.get("spec"))
    name = str(spec.get("releaseName") or "")
    if not name:
        target = str(spec.get("targetNamespace") or "")
        name = f"{target}-{meta.get('name', '')}" if target else str(meta.get("name", ""))
    if len(name) <= MAX_RELEASE_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()
    return name[: MAX_RELEASE_NAME - 13] + "-" + digest[:12]


def chart_object(hr: Mapping[str, Any], *, namespace: str) -> tuple[str, str, str]:
    """(kind, namespace, name) of the source object whose ``status.artifact`` holds the chart: the HelmChart that
    helm-controller creates (``<namespace>-<name>`` in the source's namespace), or ``spec.chartRef``'s object."""
    meta = _mapping(hr.get("metadata"))
    spec = _mapping(hr.get("spec"))
    ref = spec.get("chartRef")
    if isinstance(ref, Mapping):
        return str(ref.get("kind", "")), str(ref.get("namespace") or namespace), str(ref.get("name", ""))
    chart = _mapping(spec.get("chart"))
    cspec = _mapping(chart.get("spec"))
    src = _mapping(cspec.get("sourceRef"))
    return "HelmChart", str(src.get("namespace") or namespace), f"{namespace}-{meta.get('name', '')}"


def artifact_of(source: Mapping[str, Any]) -> Artifact | None:
    """The chart artifact a HelmChart or OCIRepository object (read from the cluster) says source-controller
    serves: ``status.artifact`` (url, digest, revision); None when it has none (not ready yet)."""
    art = _mapping(_mapping(source.get("status")).get("artifact"))
    url = art.get("url")
    if not isinstance(url, str) or not url:
        return None
    digest, revision = art.get("digest"), art.get("revision")
    return Artifact(
        url=url,
        digest=digest if isinstance(digest, str) else None,
        revision=revision if isinstance(revision, str) else None,
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def release_from_helmrelease(
    hr: Mapping[str, Any],
    *,
    files: Mapping[str, str],
    where: Where | None = None,
    namespace: str = "",
    find: Find | None = None,
    repo_urls: Collection[str] | None = None,
    kube_version: str | None = None,
    api_versions: Sequence[str] = (),
    artifact: Artifact | None = None,
) -> Release:
    """The release of ``hr``. ``where``: its document in the repo; ``namespace``: its namespace when the
    manifest has none; ``find``: the repo's objects by identity (sources, ConfigMaps); ``repo_urls``: the URLs that
    mean the repo at hand (None: a GitRepository is it); ``artifact``: in cluster mode, the chart's artifact."""
    meta, spec = _mapping(hr.get("metadata")), _mapping(hr.get("spec"))
    ns = str(meta.get("namespace") or namespace or "")
    name = str(meta.get("name", ""))
    owner = ObjectRef(
        api_version=str(hr.get("apiVersion", f"{GROUP}/v2")), kind="HelmRelease", namespace=ns or None, name=name
    )
    find = find or (lambda _identity: None)
    ours = {normalize_repo_url(u) for u in repo_urls} if repo_urls is not None else None
    problems: list[str] = []
    layers: list[Layer] = []
    chart, files_base = _chart(spec, ns=ns, find=find, ours=ours, problems=problems, artifact=artifact)
    cspec = _mapping(_mapping(spec.get("chart")).get("spec"))
    listed = [str(cspec["valuesFile"])] if cspec.get("valuesFile") else []
    listed += [str(v) for v in cspec.get("valuesFiles") or ()]
    if listed:
        for raw in listed:
            vf = _chart_values_file(
                raw,
                chart=chart,
                base=files_base,
                files=files,
                ignore_missing=bool(cspec.get("ignoreMissingValuesFiles")),
            )
            if vf is not None:
                layers.append(vf)
    else:
        layers.append(
            Layer(
                kind=LayerKind.CHART,
                name=f"{chart.name or chart.path}/values.yaml",
                chart_file="values.yaml",
                shared=True,
            )
        )
    for ref in spec.get("valuesFrom") or ():
        if isinstance(ref, Mapping):
            layer = _values_from(ref, ns=ns, find=find, files=files)
            if layer is not None:
                layers.append(layer)
    own = Where(file=where.file, document=where.document, path=(Key("spec"), Key("values"))) if where else None
    if isinstance(spec.get("values"), Mapping):
        layers.append(Layer(kind=LayerKind.INLINE, name="spec.values", where=own, data=dict(spec["values"])))
    elif own is not None:  # none yet: where they would be created (read back once an edit creates them)
        layers.append(Layer(kind=LayerKind.INLINE, name="spec.values", where=own))
    install = _mapping(spec.get("install"))
    steps = []
    for post in spec.get("postRenderers") or ():
        kz = _mapping(_mapping(post).get("kustomize"))
        if kz:
            steps.append(
                KustomizeStep(
                    patches=tuple(p for p in kz.get("patches") or () if isinstance(p, Mapping)),
                    images=tuple(i for i in kz.get("images") or () if isinstance(i, Mapping)),
                )
            )
    common = _mapping(spec.get("commonMetadata"))
    labels = {str(k): str(v) for k, v in _mapping(common.get("labels")).items()}
    labels |= {f"{GROUP}/name": name, f"{GROUP}/namespace": ns}
    target = str(spec.get("targetNamespace") or "")
    release = release_name({"metadata": {"name": name}, "spec": spec})
    # What Helm's install and upgrade add to every object of the release (helm pkg/action setMetadataVisitor).
    labels |= {MANAGED_BY: "Helm"}
    annotations = {str(k): str(v) for k, v in _mapping(common.get("annotations")).items()}
    annotations |= {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": target or ns}
    return Release(
        owner=owner,
        chart=chart,
        name=release,
        namespace=target or ns,
        layers=tuple(layers),
        manifest=where,
        own=own,
        kube_version=kube_version,
        api_versions=tuple(api_versions),
        include_crds=str(install.get("crds") or "Create") != "Skip",
        no_hooks=True,
        skip_schema_validation=bool(install.get("disableSchemaValidation")),
        post_render=PostRender(kustomize=tuple(steps), labels=labels, annotations=annotations),
        storage_namespace=str(spec.get("storageNamespace") or ns),
        problems=tuple(problems),
        merged=True,
    )


def _chart(
    spec: Mapping[str, Any],
    *,
    ns: str,
    find: Find,
    ours: set[str] | None,
    problems: list[str],
    artifact: Artifact | None,
) -> tuple[ChartRef, str | None]:
    """The chart and, for a GitRepository source, the repo directory its paths are relative to ("" the root)."""
    ref = spec.get("chartRef")
    if isinstance(ref, Mapping):
        kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
        rns = str(ref.get("namespace") or ns)
        group = "source.toolkit.fluxcd.io"
        found = find(Identity(group, kind, rns, name))
        url = version = None
        if found is not None and kind == "OCIRepository":
            url = str(_mapping(found.body.get("spec")).get("url") or "") or None
            version = str(_mapping(_mapping(found.body.get("spec")).get("ref")).get("tag") or "") or None
        chart_name = url.rstrip("/").rpartition("/")[2] if url else None
        return ChartRef(
            repo_url=url, name=chart_name, version=version, artifact=artifact, source=f"{kind}/{rns}/{name}"
        ), None
    cspec = _mapping(_mapping(spec.get("chart")).get("spec"))
    src = _mapping(cspec.get("sourceRef"))
    kind, sname = str(src.get("kind", "")), str(src.get("name", ""))
    sns = str(src.get("namespace") or ns)
    chart_text = str(cspec.get("chart") or "")
    source = f"{kind}/{sns}/{sname}"
    found = find(Identity("source.toolkit.fluxcd.io", kind, sns, sname))
    if kind == "GitRepository":
        url = str(_mapping(found.body.get("spec")).get("url") or "") if found is not None else None
        if ours is not None and (url is None or normalize_repo_url(url) not in ours):
            problems.append(f"the chart is in {source} ({url or 'not in the repo'}), not in this repository")
        path = posixpath.normpath(chart_text.lstrip("/")) if chart_text else "."
        if path == ".." or path.startswith("../"):
            problems.append(f"chart path {chart_text!r} leaves the repository")
            path = "."
        return ChartRef(path=path, source=source, artifact=artifact), ""
    url = str(_mapping(found.body.get("spec")).get("url") or "") if found is not None else None
    if (
        found is not None
        and _mapping(found.body.get("spec")).get("type") == "oci"
        and url
        and not url.startswith("oci://")
    ):
        url = f"oci://{url}"
    return ChartRef(
        repo_url=url or None,
        name=chart_text,
        version=str(cspec.get("version") or "") or None,
        artifact=artifact,
        source=source,
    ), None


def _chart_values_file(
    raw: str, *, chart: ChartRef, base: str | None, files: Mapping[str, str], ignore_missing: bool
) -> Layer | None:
    if base is None:  # a packaged chart: the file is one of the chart's ("values.yaml" its defaults)
        return Layer(
            kind=LayerKind.VALUES_FILE, name=raw, chart_file=posixpath.normpath(raw), shared=True, chart_values=True
        )
    path = posixpath.normpath(posixpath.join(base, raw.lstrip("/")))
    if path == ".." or path.startswith("../"):
        return Layer(
            kind=LayerKind.VALUES_FILE,
            name=raw,
            chart_values=True,
            unreadable=f"values file {raw} leaves the repository",
        )
    if path not in files:
        if ignore_missing:
            return None
        return Layer(
            kind=LayerKind.VALUES_FILE, name=raw, chart_values=True, unreadable=f"values file {path} is not in the repo"
        )
    chart_own = chart.path is not None and path == posixpath.normpath(posixpath.join(chart.path, "values.yaml"))
    return Layer(kind=LayerKind.VALUES_FILE, name=path, where=Where(file=path), chart_values=True, shared=chart_own)


def _values_from(ref: Mapping[str, Any], *, ns: str, find: Find, files: Mapping[str, str]) -> Layer | None:
    kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
    key = str(ref.get("valuesKey") or "values.yaml")
    target = str(ref.get("targetPath") or "") or None
    label = f"{kind} {ns}/{name} key {key}"
    if kind == "Secret":
        return Layer(
            kind=LayerKind.SECRET, name=label, key=target, unreadable=f"values from Secret {ns}/{name} are never read"
        )
    if kind != "ConfigMap":
        return Layer(kind=LayerKind.CONFIGMAP, name=label, unreadable=f"valuesFrom kind {kind!r} is not supported")
    found = find(Identity("", "ConfigMap", ns, name))
    data = _mapping(found.body.get("data")) if found is not None else {}
    if found is None or key not in data:
        if ref.get("optional"):
            return None
        what = f"ConfigMap {ns}/{name}" + ("" if found is None else f" has no key {key}")
        return Layer(
            kind=LayerKind.CONFIGMAP,
            name=label,
            key=target,
            unreadable=f"{what} is not in the repo" if found is None else what,
        )
    prefix: FieldPath = (Key("items"), Index(found.item)) if found.item is not None else ()
    where = Where(
        file=found.file,
        document=found.document,
        path=(*prefix, Key("data"), Key(key)),
        form=Form.SCALAR if target else Form.TEXT,
    )
    return Layer(kind=LayerKind.CONFIGMAP, name=label, key=target, where=where, data=data[key])
