"""Live objects settled as their list pages arrive (issue 23 §3, ``pipeline/settled.py``): a one-shot run keeps a
settled object as a compact copy (no body, no managedFields) and makes the very report a whole snapshot makes.

The first stage's Git change times are read lazily: bounded a little before the first object's oldest write, and
read again further back when a later object wrote earlier. An object whose Apply is older than its file's Git change
is still compared, whatever order the objects come in. With a real git (commit times set) and, last, the real
kube-apiserver listing one object per page.
"""

from __future__ import annotations

import copy
import os
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.core.support import applied_fields, defaulted_live, deployment_git, desired_obj, entry, live_obj
from tests.drift.support import configmap, sync, write
from tests.support.gitrepos import git, init_repo
from tests.support.objects import deployment
from writeback.adapters.files import NamespaceDefaults, read_manifests
from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.counting import CountingCluster
from writeback.bodies import PackedBody, ReleasedBody
from writeback.drift.engine import EngineOptions, compute_drift, report_to_json
from writeback.model import DesiredObject, LiveObject, Rule
from writeback.pipeline.detecting import Detection, detect
from writeback.pipeline.settled import GitTimes, PageSettler, settle_after
from writeback.pipeline.targets import Edges, TargetSpec
from writeback.pipeline.warming import WarmState
from writeback.yaml import reading as yamlreading

SETTLED = f"[rule: {Rule.SETTLED_BY_MANAGERS}]"
T0 = int(datetime(2024, 5, 1, 9, 0, tzinfo=UTC).timestamp())  # the first commit: every file
HOUR = 3600


def _commit(repo: Path, files: dict[str, str], *, at: int) -> None:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git("add", "-A", cwd=repo)
    env = {**os.environ, "GIT_COMMITTER_DATE": f"@{at} +0000", "GIT_AUTHOR_DATE": f"@{at} +0000"}
    subprocess.run(["git", "commit", "-qm", f"at {at}"], cwd=repo, check=True, env=env)


def _repo(tmp_path: Path) -> Path:
    """apps/{web,old,api,edited}.yaml committed at T0; apps/api.yaml changed again at T0 + 2h."""
    repo = tmp_path / "gitops"
    init_repo(repo)
    _commit(repo, {f"apps/{n}.yaml": f"# {n}\n" for n in ("web", "old", "api", "edited")}, at=T0)
    _commit(repo, {"apps/api.yaml": "# api, changed\n"}, at=T0 + 2 * HOUR)
    return repo


def _stamp(at: int) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pair(name: str, *, applied: int, person: bool = False) -> tuple[LiveObject, DesiredObject]:
    """The shop's Deployment named ``name`` in apps/NAME.yaml, as the applier applied it at ``applied`` (and, with
    ``person``, scaled by a person with kubectl an hour later)."""
    body = deployment_git()
    body["metadata"]["name"] = name
    live = defaulted_live(copy.deepcopy(body))
    live["metadata"]["managedFields"] = [
        entry("argocd-controller", applied_fields(), operation="Apply", time=_stamp(applied)),
        entry("kube-controller-manager", {"f:status": {"f:replicas": {}}}, subresource="status",
              time=_stamp(applied + 5)),
    ]  # fmt: skip
    if person:
        live["spec"]["replicas"] = 5
        live["metadata"]["managedFields"].append(
            entry("kubectl-scale", {"f:spec": {"f:replicas": {}}}, subresource="scale", time=_stamp(applied + HOUR))
        )
    return live_obj(live), desired_obj(body, file=f"apps/{name}.yaml")


def test_git_times_read_further_back_only_for_an_older_write(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    head = git("rev-parse", "HEAD", cwd=repo)
    times = GitTimes(repo=repo, commit=head, scope="apps", rendered=False)
    late = times.reaching(T0 + 3 * HOUR)
    assert late is not None and late.since <= T0 + 3 * HOUR and late.by_file == {}  # nothing changed after
    assert times.reads == 1
    assert times.reaching(T0 + 4 * HOUR) is late and times.reads == 1  # a later write: the same answer
    early = times.reaching(T0 + HOUR)  # older than the change of apps/api.yaml
    assert early is not None and early.since <= T0 + HOUR and times.reads == 2
    # reached twice as far back as it had to (past T0 here): each file's last change, as any earlier bound gives
    assert early.since <= T0 and early.by_file["apps/api.yaml"] == T0 + 2 * HOUR
    assert early.changed_at("apps/api.yaml") == T0 + 2 * HOUR and early.changed_at("apps/web.yaml") == T0
    # each read reaches at least twice as far back as the distance it had to cover: few reads for a long history
    times.reaching(early.since - 10)
    assert times.reads == 3 and times.changes is not None and times.changes.since <= early.since - 20
    assert GitTimes(repo=repo, commit=None, scope="apps", rendered=False).reaching(T0) is None  # no commit


def test_objects_arriving_one_by_one_settle_exactly_as_a_whole_snapshot_and_keep_no_body(tmp_path: Path) -> None:
    """The first object bounds Git's log after the others' Applies: a later, older object reads it again. ``old``
    (applied after its file's last change) settles; ``api`` (applied before its file changed) is compared; a
    person's ``/scale`` is compared. The report is the whole snapshot's."""
    repo = _repo(tmp_path)
    head = git("rev-parse", "HEAD", cwd=repo)
    pairs = [
        _pair("web", applied=T0 + 3 * HOUR),  # after every change: settled
        _pair("old", applied=T0 + HOUR // 2),  # older than the bound the first one set, after its file's change
        _pair("api", applied=T0 + HOUR),  # before apps/api.yaml changed at T0 + 2h: compared
        _pair("edited", applied=T0 + HOUR // 2, person=True),  # a person's write: compared
    ]
    desired = [d for _, d in pairs]
    options = EngineOptions(explain=True)
    times = GitTimes(repo=repo, commit=head, scope="apps", rendered=False)
    pages = PageSettler(desired=desired, options=options, times=times, head=None)
    kept = [pages.keep(live) for live, _ in pairs]  # one object per page
    assert times.reads == 2  # "old" wrote before the first bound

    compact = {o.ref.name: o for o in kept if "managedFields" not in o.body["metadata"]}
    assert set(compact) == {"web", "old"}
    for o in compact.values():  # identity and versions only: no spec, status, labels or managedFields
        assert o.body == {"apiVersion": "apps/v1", "kind": "Deployment",
                          "metadata": {"name": o.ref.name, "namespace": "shop", "uid": "0f9c",
                                       "resourceVersion": "4711"}}  # fmt: skip
    assert [o for o in kept if o.ref.name in ("api", "edited")] == [p[0] for p in pairs[2:]]  # whole, as listed

    compared = pages.finish()  # the settler's objects: Git's bodies of the settled ones let go
    assert [d.ref for d in compared] == [d.ref for d in desired]
    released = {d.ref.name for d in compared if isinstance(d.body, ReleasedBody)}
    assert released == {"web", "old"}
    with pytest.raises(RuntimeError, match="Deployment shop/web: its Git body was released"):
        _ = next(d for d in compared if d.ref.name == "web").body["spec"]
    paged = compute_drift(live=kept, desired=compared, options=options, prepared=pages.prepared(kept),
                          settle=pages.context())  # fmt: skip
    full = [live for live, _ in pairs]
    whole = compute_drift(live=full, desired=desired, options=options,
                          settle=settle_after(GitTimes(repo=repo, commit=head, scope="apps", rendered=False),
                                              live=full, head=None))  # fmt: skip
    assert report_to_json(paged, explain=True) == report_to_json(whole, explain=True)
    settled = {d.resource.name for d in paged.dropped if SETTLED in d.rule}
    assert settled == {"web", "old"}
    assert {d.resource.name for d in paged.drifts} == {"edited"}


def test_a_second_copy_of_an_object_stays_whole_and_the_first_keeps_its_preparation(tmp_path: Path) -> None:
    """A list started again (an expired continue token) or two scopes hand the same object twice: only the first
    copy is compact, and only a compact copy that the snapshot kept has a settled preparation."""
    repo = _repo(tmp_path)
    head = git("rev-parse", "HEAD", cwd=repo)
    live, d = _pair("web", applied=T0 + 3 * HOUR)
    pages = PageSettler(desired=[d], options=EngineOptions(), times=GitTimes(repo=repo, commit=head, scope="apps",
                                                                              rendered=False), head=None)  # fmt: skip
    first, second = pages.keep(live), pages.keep(live)
    assert "managedFields" not in first.body["metadata"] and second is live
    assert set(pages.prepared([first])) == {d.ref.identity} and not pages.prepared([second])


# ------------------------------------------------------------------ the real kube-apiserver


def _detect(repo: Path, ns: str, edges: Edges, *, page_size: int) -> Detection:
    spec = TargetSpec(name="pages", path="apps", namespaces=(ns,), explain=True, page_size=page_size)
    return detect(spec=spec, repo=repo, edges=edges)


@pytest.mark.controlplane
def test_on_the_real_apiserver_pages_of_one_object_make_the_report_of_whole_lists(
    controlplane: Any, namespace: str, tmp_path: Path
) -> None:
    """Pages of 1 and of 500, the whole list handed over at once (a cluster that cannot page for us), Git's bodies
    packed until their pages come (a one-shot command's reading) and the service's path (whole objects kept): one
    report. A settled object keeps no body, live or Git; the edited one keeps them all."""
    ns = namespace
    repo = tmp_path / "gitops"
    init_repo(repo)
    files = [write(repo, f"apps/cm-{i}.yaml", configmap(f"cm-{i}", {"level": str(i)})) for i in range(4)]
    files.append(write(repo, "apps/web.yaml", deployment("web", env={"LOG_LEVEL": "info"})))
    git("add", "-A", cwd=repo)
    an_hour_ago = {"GIT_COMMITTER_DATE": f"@{int(time.time()) - HOUR} +0000"}
    subprocess.run(["git", "commit", "-qm", "apps"], cwd=repo, check=True, env={**os.environ, **an_hour_ago})
    sync(controlplane, "argocd-server-side", ns, *files)
    controlplane.kubectl("patch", "configmap/cm-2", "-n", ns, "--type=merge", "-p", '{"data":{"level":"22"}}')

    reports = {}
    for name, page_size, wrap in (("1", 1, False), ("500", 500, False), ("whole", 1, True)):
        kube = KubeCluster.connect(kubeconfig=controlplane.kubeconfig)
        cluster = CountingCluster(cluster=kube) if wrap else kube  # CountingCluster: whole lists, kept after
        det = _detect(repo, ns, Edges(cluster=cluster), page_size=page_size)
        reports[name] = report_to_json(det.report, explain=True)
        live = {o.ref.name: o.body for o in det.live}
        assert set(live) == {"cm-0", "cm-1", "cm-2", "cm-3", "web"}
        settled = {d["resource"]["name"] for d in reports[name]["dropped"] if SETTLED in d["rule"]}
        assert settled == {"cm-0", "cm-1", "cm-3", "web"}, settled
        for n in settled:  # nothing of the body but identity and versions
            assert set(live[n]) == {"apiVersion", "kind", "metadata"}, live[n]
            assert set(live[n]["metadata"]) == {"name", "namespace", "uid", "resourceVersion"}, live[n]
        assert live["cm-2"]["data"] == {"level": "22"} and live["cm-2"]["metadata"]["managedFields"]
        if name == "1":
            assert kube.list_calls == 5  # one object per page
    was = yamlreading.cache_info().enabled
    yamlreading.set_cache(enabled=False)  # a one-shot command's reading: Git's bodies packed until their pages come
    try:
        kube = KubeCluster.connect(kubeconfig=controlplane.kubeconfig)
        packed = _detect(repo, ns, Edges(cluster=kube), page_size=2)
    finally:
        yamlreading.set_cache(enabled=was)
    reports["packed"] = report_to_json(packed.report, explain=True)
    bodies = {d.ref.name: d.body for d in packed.desired}
    assert {n for n, b in bodies.items() if isinstance(b, ReleasedBody)} == {"cm-0", "cm-1", "cm-3", "web"}
    assert type(bodies["cm-2"]) is dict and bodies["cm-2"]["data"] == {"level": "2"}  # compared: unpacked
    kube = KubeCluster.connect(kubeconfig=controlplane.kubeconfig)
    service = _detect(repo, ns, Edges(cluster=kube, memo=WarmState()), page_size=500)
    assert all("managedFields" in o.body["metadata"] for o in service.live)  # the service keeps whole objects
    reports["service"] = report_to_json(service.report, explain=True)
    assert reports["1"] == reports["500"] == reports["whole"] == reports["service"] == reports["packed"]
    (drift,) = reports["1"]["drifts"]
    assert (drift["resource"]["name"], drift["path"], drift["live"]) == ("cm-2", "data.level", "22")


def test_packed_bodies_read_as_the_plain_ones_and_unpack_when_their_live_object_arrives(tmp_path: Path) -> None:
    """``read_manifests(pack=True)``: the same objects, names and namespaces (a CRD in the tree still scopes its
    kind), each body packed; the settler unpacks an object when its live object arrives, and the rest at the end."""
    repo = tmp_path / "gitops"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Widget", "plural": "widgets"},
                    "versions": [{"name": "v1", "served": True, "storage": True}]}}  # fmt: skip
    write(repo, "apps/crd.yaml", crd)
    write(repo, "apps/widget.yaml", {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                                     "spec": {"size": 3}})  # fmt: skip
    write(repo, "apps/cms.yaml", configmap("a", {"k": "1"}), configmap("b", {"k": "2"}))
    plain = read_manifests(root=repo, path="apps", namespaces=NamespaceDefaults(flag="shop"))
    packed = read_manifests(root=repo, path="apps", namespaces=NamespaceDefaults(flag="shop"), pack=True)
    assert [(d.ref, d.file, d.document) for d in packed.objects] == [(d.ref, d.file, d.document) for d in plain.objects]
    assert {d.ref.name: d.ref.namespace for d in packed.objects}["w"] is None  # scoped by the CRD in the tree
    assert all(type(d.body) is PackedBody for d in packed.objects)
    assert [d.unpacked().body for d in packed.objects] == [d.body for d in plain.objects]

    pages = PageSettler(desired=packed.objects, options=EngineOptions(), head=None,
                        times=GitTimes(repo=repo, commit=None, scope="apps", rendered=False))  # fmt: skip
    (a,) = [d for d in plain.objects if d.ref.name == "a"]
    live = live_obj({**copy.deepcopy(dict(a.body)), "metadata": {"name": "a", "namespace": "shop"}})
    assert pages.keep(live) is live  # no managedFields: kept whole, compared
    assert type(pages.declared[[d.ref.name for d in pages.declared].index("a")].body) is dict
    assert [type(d.body) for d in pages.declared].count(PackedBody) == len(plain.objects) - 1
    assert [d.body for d in pages.finish()] == [d.body for d in plain.objects]
