"""Hotfix capture pieces without a cluster: who wrote last, the durable store, and the PR body's note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from writeback.adapters.hotfix_store import DirectoryStore
from writeback.adapters.templating import load_templates
from writeback.capture.hotfixes import essence, newest_writer, person_write
from writeback.errors import InputError
from writeback.kube.pathtypes import Key
from writeback.kube.refs import ObjectRef
from writeback.model import Capture, CapturedHotfix, ChangeSet, Drift, ManagerOperation, Op, Review
from writeback.pr.text import RenderInput, render
from writeback.settings import Policy

REF = ObjectRef(api_version="v1", kind="ConfigMap", namespace="shop", name="ca")


def _body(*entries: tuple[str, str, str]) -> dict[str, Any]:
    fields = [
        {"manager": m, "operation": op, "time": t, "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}
        for m, op, t in entries
    ]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ca", "managedFields": fields}}


def test_the_newest_writer_decides_and_a_person_wins_a_tie() -> None:
    policy = Policy()
    older_person = _body(
        ("kubectl-edit", "Update", "2026-11-30T03:00:00Z"), ("argocd-controller", "Apply", "2026-11-30T03:00:05Z")
    )
    assert person_write(older_person, policy=policy) is None
    newer = _body(
        ("argocd-controller", "Apply", "2026-11-30T03:00:00Z"), ("kubectl-edit", "Update", "2026-11-30T03:00:05Z")
    )
    owner = person_write(newer, policy=policy)
    assert owner is not None and owner.manager == "kubectl-edit" and owner.time == "2026-11-30T03:00:05Z"
    tie = _body(
        ("kubectl-edit", "Update", "2026-11-30T03:00:05Z"), ("argocd-controller", "Apply", "2026-11-30T03:00:05Z")
    )
    assert person_write(tie, policy=policy) is not None
    controller = _body(("kube-controller-manager", "Update", "2026-11-30T03:00:09Z"))
    assert person_write(controller, policy=policy) is None
    writer = newest_writer(older_person, policy=policy)
    assert writer is not None and writer.manager == "argocd-controller"
    status_only = _body(("kubectl-edit", "Update", "2026-11-30T03:00:00Z"))
    status_only["metadata"]["managedFields"].append(
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "subresource": "status",
            "time": "2026-12-01T00:00:00Z",
        }
    )
    assert person_write(status_only, policy=policy) is not None  # status writes are not spec writes


def test_essence_ignores_server_metadata_and_status() -> None:
    a = {"metadata": {"name": "x", "resourceVersion": "1", "managedFields": [1]}, "data": {"k": "v"}, "status": {}}
    b = {"metadata": {"name": "x", "resourceVersion": "9"}, "data": {"k": "v"}}
    assert essence(a) == essence(b)
    assert essence(a) != essence({**b, "data": {"k": "other"}})


def test_the_directory_store_round_trips_and_refuses_secrets(tmp_path: Path) -> None:
    store = DirectoryStore(state_dir=tmp_path)
    body = _body(("kubectl-edit", "Update", "2026-11-30T03:00:05Z"))
    capture = Capture(target="prod", ref=REF, manager="kubectl-edit", operation=ManagerOperation.UPDATE,
                      time="2026-11-30T03:00:05Z", captured_at="2026-11-30T03:00:06Z", body=body)  # fmt: skip
    store.save(capture)
    files = list((tmp_path / "hotfixes").glob("*.json"))
    assert len(files) == 1 and oct(files[0].stat().st_mode & 0o777) == "0o600"
    assert json.loads(files[0].read_text())["object"]["metadata"]["managedFields"][0]["manager"] == "kubectl-edit"
    assert store.load(target="prod") == [capture]
    assert store.load(target="other") == []
    store.discard(capture)
    assert store.load(target="prod") == []
    secret = Capture(target="prod", ref=ObjectRef(api_version="v1", kind="Secret", namespace="shop", name="db"),
                     manager="kubectl-edit", operation=ManagerOperation.UPDATE, time=None, captured_at="x",
                     body={})  # fmt: skip
    with pytest.raises(InputError, match="never captured"):
        store.save(secret)


def test_the_pr_body_says_the_change_was_reverted_and_when() -> None:
    drift = Drift(resource=REF, path=(Key("data"), Key("ca.crt")), op=Op.CHANGE, live="new", git="old",
                  manager="kubectl-edit", operation=ManagerOperation.UPDATE, time="2026-11-30T03:00:05Z")  # fmt: skip
    cs = ChangeSet(id="ca-1", target="prod", review=Review.STANDARD, fingerprint="f", drifts=(drift,))
    hotfix = CapturedHotfix(resource=REF, manager="kubectl-edit", time="2026-11-30T03:00:05Z",
                            reverted_at="2026-11-30T03:00:09Z", reverted_by="argocd-controller")  # fmt: skip
    other = CapturedHotfix(resource=ObjectRef(api_version="v1", kind="ConfigMap", namespace="shop", name="elsewhere"),
                           manager="kubectl-patch", time=None)  # fmt: skip
    templates = load_templates(override_dir=None)
    body = render(templates=templates, data=RenderInput(change_set=cs, cluster="prod", base="main",
                                                         hotfixes=(hotfix, other))).body  # fmt: skip
    assert "Already reverted in the cluster" in body
    assert "changed by <code>kubectl-edit</code> at 2026-11-30T03:00:05Z" in body
    assert "reverted by <code>argocd-controller</code> at 2026-11-30T03:00:09Z" in body
    assert "break-glass" in body
    assert "elsewhere" not in body  # only this change set's resources
    plain = render(templates=templates, data=RenderInput(change_set=cs, cluster="prod", base="main")).body
    assert "reverted" not in plain.lower()


def test_a_damaged_capture_file_is_skipped_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = DirectoryStore(state_dir=tmp_path)
    body = _body(("kubectl-edit", "Update", "2026-11-30T03:00:05Z"))
    capture = Capture(target="prod", ref=REF, manager="kubectl-edit", operation=ManagerOperation.UPDATE,
                      time="2026-11-30T03:00:05Z", captured_at="2026-11-30T03:00:06Z", body=body)  # fmt: skip
    store.save(capture)
    (tmp_path / "hotfixes" / "broken.json").write_text("{not json")

    assert store.load(target="prod") == [capture]
    assert "broken.json is not a readable capture" in caplog.text
