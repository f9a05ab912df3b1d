"""Which Git revision an Argo CD Application has applied (pure): the newest ``status.history`` entry (Argo CD adds one
when a sync succeeds), else a succeeded ``status.operationState.syncResult``, and only when neither is there
``status.sync.revision``, which is the revision Argo CD last *compared* with (ahead of what is applied when
auto-sync is off or a sync failed). The fetched revision (what auto-sync applies next) stays ``status.sync``'s."""

from __future__ import annotations

from typing import Any

import pytest

from writeback.gitops.argocd import APPLICATION

V1, V2, V3 = "1" * 40, "2" * 40, "3" * 40
REF = APPLICATION.at(namespace="argocd", name="web")


def _state(status: dict[str, Any]) -> tuple[str | None, str]:
    body = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "web"},
            "spec": {}, "status": status}  # fmt: skip
    state = APPLICATION.state(body, ref=REF)
    return state.revision, state.source.removeprefix("Argo CD Application argocd/web ")


def test_auto_sync_off_the_compared_revision_is_ahead_and_the_last_sync_is_what_is_applied() -> None:
    status = {
        "sync": {"status": "OutOfSync", "revision": V2},  # refreshed: Git's head, not applied
        "history": [{"id": 0, "revision": V1, "deployedAt": "2026-12-01T10:00:00Z"}],
        "operationState": {"phase": "Succeeded", "syncResult": {"revision": V1}},
    }
    assert _state(status) == (V1, "status.history (the last successful sync)")


def test_a_failed_sync_leaves_the_last_successful_one_applied() -> None:
    status = {
        "sync": {"status": "OutOfSync", "revision": V3},
        "history": [{"id": 0, "revision": V1}, {"id": 1, "revision": V2}],
        "operationState": {"phase": "Failed", "syncResult": {"revision": V3}},
    }
    assert _state(status) == (V2, "status.history (the last successful sync)")


def test_the_newest_history_entry_is_the_highest_id() -> None:
    status = {"sync": {"revision": V3}, "history": [{"id": 7, "revision": V2}, {"id": 3, "revision": V1}]}
    assert _state(status)[0] == V2


def test_without_history_a_succeeded_operation_says_what_it_applied() -> None:
    succeeded = {"sync": {"revision": V2}, "operationState": {"phase": "Succeeded", "syncResult": {"revision": V1}}}
    assert _state(succeeded) == (V1, "status.operationState.syncResult")
    running = {"sync": {"revision": V2}, "operationState": {"phase": "Running", "syncResult": {"revision": V2}}}
    assert _state(running) == (V2, "status.sync.revision")  # nothing known applied: as before


def test_a_multi_source_app_reads_its_first_git_revision_of_each_record() -> None:
    status = {
        "sync": {"revisions": ["6.14.1", V3]},
        "history": [{"id": 0, "revisions": ["6.14.1", V1]}],  # a chart version is no Git revision
    }
    assert _state(status)[0] == V1
    assert _state({"sync": {"revisions": ["6.14.1", V3]}})[0] == V3


@pytest.mark.parametrize("status", [{}, {"history": [{"id": 0, "revision": "6.14.1"}]}, {"history": "garbage"}])
def test_nothing_known_is_no_revision(status: dict[str, Any]) -> None:
    assert _state(status) == (None, "status.sync.revision")


def test_the_fetched_revision_is_still_the_compared_one() -> None:
    body = {"status": {"sync": {"revision": V2}, "history": [{"id": 0, "revision": V1}]}}
    fetched = APPLICATION.fetched(body, ref=REF, get=lambda ref: None)
    assert fetched.commit == V2 and fetched.where.endswith("status.sync.revision")
