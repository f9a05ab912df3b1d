"""The YAML loaders: live dumps (offline mode) and Git manifest trees, with per-file problems."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from writeback.adapters.dumps import read_live, with_default_namespace
from writeback.adapters.files import NamespaceDefaults, builtin_namespaced, read_manifests, read_stream
from writeback.adapters.walking import walk
from writeback.errors import InputError
from writeback.kube.kinds import with_crds
from writeback.model import Source

DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
"""


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_manifests_multi_document_lists_and_skips(tmp_path: Path) -> None:
    write(
        tmp_path,
        "apps/web.yaml",
        "# comment\n" + DEPLOY + "---\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n",
    )
    write(
        tmp_path,
        "apps/list.yml",
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a, namespace: other}\n"
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b}\n",
    )
    write(tmp_path, "apps/kustomization.yaml", "resources: [web.yaml]\n")
    write(tmp_path, "apps/values.yaml", "replicaCount: 2\nimage: {tag: x}\n")
    write(tmp_path, "apps/chart-ish.yaml", "apiVersion: v2\nname: not-a-resource\n")
    write(tmp_path, "charts/c/Chart.yaml", "apiVersion: v2\nname: c\n")
    write(tmp_path, "charts/c/templates/d.yaml", "{{ if .Values.x }}\nkind: Deployment\n")
    write(tmp_path, "ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n")
    write(tmp_path, "README.md", "not yaml")

    res = read_manifests(root=tmp_path, namespaces=NamespaceDefaults(flag="team"))

    assert res.problems == ()
    got = {(o.ref.kind, o.ref.namespace, o.ref.name): (o.file, o.document, o.item) for o in res.objects}
    assert got == {
        ("Deployment", "team", "web"): ("apps/web.yaml", 0, None),
        ("Service", "team", "web"): ("apps/web.yaml", 2, None),  # the empty document counts
        ("ConfigMap", "other", "a"): ("apps/list.yml", 0, 0),
        ("ConfigMap", "team", "b"): ("apps/list.yml", 0, 1),
        ("Namespace", None, "team"): ("ns.yaml", 0, None),
    }
    web = next(o for o in res.objects if o.ref.kind == "Deployment")
    assert web.body["spec"] == {"replicas": 3}
    assert "namespace" not in web.body["metadata"]  # the body is Git's text, not the resolved identity


def test_namespace_order_manifest_kustomize_application_flag(tmp_path: Path) -> None:
    write(tmp_path, "base/kustomization.yaml", "namespace: from-kustomize\nresources: []\n")
    write(tmp_path, "base/sub/a.yaml", DEPLOY)  # parent dir's kustomization applies
    write(tmp_path, "base/b.yaml", DEPLOY.replace("name: web", "name: b\n  namespace: explicit"))
    write(tmp_path, "other/c.yaml", DEPLOY.replace("name: web", "name: c"))

    both = read_manifests(root=tmp_path, namespaces=NamespaceDefaults(application="argo-dest", flag="flag-ns"))
    ns = {o.ref.name: o.ref.namespace for o in both.objects}
    assert ns == {"web": "from-kustomize", "b": "explicit", "c": "argo-dest"}

    flag_only = read_manifests(root=tmp_path, path="other", namespaces=NamespaceDefaults(flag="flag-ns"))
    assert [(o.ref.namespace, o.file) for o in flag_only.objects] == [("flag-ns", "other/c.yaml")]

    # a kustomization above --path does not apply
    sub = read_manifests(root=tmp_path, path="base/sub", namespaces=NamespaceDefaults(flag="flag-ns"))
    assert [o.ref.namespace for o in sub.objects] == ["flag-ns"]


def test_bad_yaml_names_file_and_line_and_others_still_load(tmp_path: Path) -> None:
    write(tmp_path, "good.yaml", DEPLOY)
    write(tmp_path, "bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: [1, 2\n")
    write(tmp_path, "noname.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")

    res = read_manifests(root=tmp_path, namespaces=NamespaceDefaults(flag="ns"))

    assert [o.ref.name for o in res.objects] == ["web"]
    by_file = {p.file: p for p in res.problems}
    assert set(by_file) == {"bad.yaml", "noname.yaml"}
    assert by_file["bad.yaml"].line is not None and by_file["bad.yaml"].line >= 6
    bad = by_file["bad.yaml"]
    assert bad.column is not None and str(bad).startswith(f"bad.yaml:{bad.line}:{bad.column}: not valid YAML: ")
    assert "without metadata.name" in by_file["noname.yaml"].message


def test_duplicate_resource_is_a_problem_for_that_resource_only(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", DEPLOY)
    write(tmp_path, "b.yaml", DEPLOY + "---\napiVersion: v1\nkind: Service\nmetadata: {name: web}\n")

    res = read_manifests(root=tmp_path, namespaces=NamespaceDefaults(flag="ns"))

    assert [o.ref.kind for o in res.objects] == ["Service"]
    assert sorted(p.file for p in res.problems) == ["a.yaml", "b.yaml"]
    assert all("declared more than once" in p.message and "a.yaml" in p.message for p in res.problems)


def test_timestamps_stay_strings_and_yaml_12(tmp_path: Path) -> None:
    write(
        tmp_path, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  d: 2024-01-01\n  b: on\n"
    )
    (obj,) = read_manifests(root=tmp_path, namespaces=NamespaceDefaults(flag="ns")).objects
    assert obj.body["data"] == {"d": "2024-01-01", "b": "on"}


def test_path_outside_repo_or_missing_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nope"):
        read_manifests(root=tmp_path, path="nope")
    (tmp_path / "repo").mkdir()
    with pytest.raises(InputError, match="outside"):
        read_manifests(root=tmp_path / "repo", path="..")


def test_live_dump_list_multi_doc_and_directory(tmp_path: Path) -> None:
    write(
        tmp_path,
        "dump/list.yaml",
        "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: ''}\nitems:\n"
        "- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: web\n    namespace: prod\n"
        "    managedFields:\n    - manager: kubectl-edit\n      operation: Update\n",
    )
    write(
        tmp_path,
        "dump/more.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ca, namespace: prod}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n",
    )
    write(tmp_path, "dump/broken.yaml", "kind: [\n")

    res = read_live(path=tmp_path / "dump")

    assert {(o.ref.kind, o.ref.namespace, o.ref.name) for o in res.objects} == {
        ("Deployment", "prod", "web"),
        ("ConfigMap", "prod", "ca"),
        ("ClusterRole", None, "r"),
    }
    assert all(o.source is Source.FILE for o in res.objects)
    web = next(o for o in res.objects if o.ref.kind == "Deployment")
    assert web.body["metadata"]["managedFields"][0]["manager"] == "kubectl-edit"
    assert [p.file.endswith("broken.yaml") for p in res.problems] == [True]

    single = read_live(path=tmp_path / "dump" / "more.yaml")
    assert len(single.objects) == 2
    with pytest.raises(InputError, match="missing"):
        read_live(path=tmp_path / "missing")


def test_live_dump_document_that_is_not_an_object_is_a_problem(tmp_path: Path) -> None:
    write(tmp_path, "dump.yaml", "- 1\n- 2\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: ca, namespace: p}\n")

    res = read_live(path=tmp_path / "dump.yaml")

    assert [o.ref.name for o in res.objects] == ["ca"]
    assert [str(p) for p in res.problems] == [
        f"{tmp_path / 'dump.yaml'}: document 1: not a Kubernetes object (no apiVersion and kind)"
    ]


GADGET_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Gadget, plural: gadgets}
  versions: [{name: v1, served: true, storage: true}]
"""


def test_a_crd_in_the_tree_scopes_its_kind(tmp_path: Path) -> None:
    write(tmp_path, "crds/gadget.yaml", GADGET_CRD)
    write(tmp_path, "apps/gadget.yaml", "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n")
    write(tmp_path, "apps/widget.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
    res = read_manifests(root=tmp_path, namespaces=NamespaceDefaults(flag="team"))
    assert {(o.ref.kind, o.ref.namespace) for o in res.objects} == {
        ("CustomResourceDefinition", None),
        ("Gadget", None),  # cluster-scoped by its CRD: matched without a namespace
        ("Widget", "team"),  # no CRD known: treated as namespaced
    }
    stream = read_stream(
        text=GADGET_CRD + "---\napiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n", file="out"
    )
    assert [(o.ref.kind, o.ref.namespace) for o in stream.objects] == [
        ("CustomResourceDefinition", None),
        ("Gadget", None),
    ]


def test_dumped_objects_without_a_namespace_get_the_git_default(tmp_path: Path) -> None:
    write(
        tmp_path,
        "dump.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: other}\n---\n"
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n"
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n---\n"
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
    )
    live = read_live(path=tmp_path / "dump.yaml").objects
    namespaced = with_crds(builtin_namespaced, {("example.com", "Gadget"): False})
    resolved = with_default_namespace(live, namespaced=namespaced, fallback="team")
    assert [(o.ref.name, o.ref.namespace) for o in resolved] == [
        ("a", "team"),
        ("b", "other"),
        ("team", None),
        ("g", None),
        ("w", "team"),
    ]


def test_the_repo_walk_is_os_walk_with_links_known_from_the_listing(tmp_path: Path) -> None:
    # issue 23: the walk lists each folder once (os.scandir) instead of asking whether every file is a link; it must
    # visit what os.walk visits, in the same order: links to folders listed and not entered, broken links as files
    for rel in ("a/x.yaml", "a/b/y.yaml", "a/b/c/z.yml", "d/w.yaml", ".hidden/h.yaml", "e/f/g/deep.yaml", "top.yaml"):
        write(tmp_path, rel, DEPLOY)
    os.symlink(tmp_path / "a", tmp_path / "d" / "to-a")
    os.symlink(tmp_path / "a" / "x.yaml", tmp_path / "d" / "x-link.yaml")
    os.symlink(tmp_path / "missing", tmp_path / "d" / "broken.yaml")

    def pruned(dirs: list[str]) -> list[str]:
        return sorted(d for d in dirs if d != "e")  # a pruned folder is not entered by either walk

    expected = []
    for dirpath, dirnames, filenames in os.walk(tmp_path):
        expected.append((dirpath, sorted(dirnames), sorted(filenames)))
        dirnames[:] = pruned(dirnames)
    got = []
    for dirpath, dirs, files in walk(str(tmp_path)):
        got.append((dirpath, sorted(d.name for d in dirs), sorted(f.name for f in files)))
        names = pruned([d.name for d in dirs])
        dirs[:] = sorted((d for d in dirs if d.name in names), key=lambda d: d.name)
    assert got == expected
    assert ("/".join((str(tmp_path), "d")), ["to-a"], ["broken.yaml", "w.yaml", "x-link.yaml"]) in got
    assert not any(p.endswith(("to-a", "/e", "/f")) for p, _, _ in got)
