"""Test repos for the Helm tests: a checkout with charts (the real podinfo and nginx from tests/data/charts, or a
tiny chart that echoes its values) and manifests. Real git is not needed: the engine reads ``{path: text}``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.support.testdata import CHARTS
from writeback.adapters.git.texts import read_texts
from writeback.sources.helm import HelmEngine, Release, Where, release_from_helmrelease, releases_from_application
from writeback.yaml.reading import load_all

ECHO_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-echo
data:
  values: {{ toJson .Values | quote }}
  namespace: {{ .Release.Namespace | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  api: {{ .Capabilities.APIVersions.Has "example.com/v1" | quote }}
"""
HOOK = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hook
  annotations:
    helm.sh/hook: pre-install
data: {a: b}
"""
CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
"""


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def echo_chart(root: Path, path: str = "charts/echo", values: str = "a: 1\nkept: yes\n") -> None:
    write(
        root,
        {
            f"{path}/Chart.yaml": "apiVersion: v2\nname: echo\nversion: 0.1.0\n",
            f"{path}/values.yaml": values,
            f"{path}/templates/cm.yaml": ECHO_TEMPLATE,
            f"{path}/templates/hook.yaml": HOOK,
            f"{path}/crds/widget.yaml": CRD,
        },
    )


def copy_chart(root: Path, name: str, path: str) -> None:
    shutil.copytree(CHARTS / name, root / path)


def application(root: Path, file: str, text: str, **kw: Any) -> tuple[Release, dict[str, str]]:
    write(root, {file: text})
    files = read_texts(root)
    (release,) = releases_from_application(
        load_all(files[file], source=file)[0], files=files, where=Where(file=file, document=0), **kw
    )
    return release, files


def helmrelease(root: Path, file: str, text: str, **kw: Any) -> tuple[Release, dict[str, str]]:
    write(root, {file: text})
    files = read_texts(root)
    release = release_from_helmrelease(
        load_all(files[file], source=file)[0], files=files, where=Where(file=file, document=0), **kw
    )
    return release, files


def engine(cli: Any) -> HelmEngine:
    return HelmEngine(cli)
