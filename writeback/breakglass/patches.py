"""Break-glass's JSON patches (no I/O): suspend, resume, and rewrite the record.

Every patch starts with a ``test`` of ``metadata.resourceVersion`` (optimistic concurrency): a write by anyone
else between our read and our patch makes it fail, and the caller reads again. What "suspended" means is the
controller's (``GitOpsController.suspend_ops``, in ``writeback.gitops``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from writeback.breakglass.record import Record, dump_record
from writeback.gitops.base import GitOpsController
from writeback.kube.jsonpatch import Op, get_at, remove_op, set_op, version_test_op
from writeback.kube.wellknown import BREAK_GLASS_ANNOTATION

_RECORD_PATH = ("metadata", "annotations", BREAK_GLASS_ANNOTATION)


def suspend_patch(*, kind: GitOpsController, body: Mapping[str, Any], record: Record) -> list[Op]:
    """Store the record and switch auto-sync off."""
    ops = [version_test_op(body), set_op(body, _RECORD_PATH, dump_record(record))]
    return ops + kind.suspend_ops(body, held_for=record.held_for)


def resume_patch(*, kind: GitOpsController, body: Mapping[str, Any], record: Record) -> list[Op]:
    """Restore the previous auto-sync value exactly (or its absence) and remove the record."""
    ops = [version_test_op(body)]
    if get_at(body, _RECORD_PATH)[0]:
        ops.append(remove_op(_RECORD_PATH))
    present, _ = get_at(body, kind.auto_sync_path)
    if record.previous.present:
        ops.append(set_op(body, kind.auto_sync_path, record.previous.value))
    elif present:
        ops.append(remove_op(kind.auto_sync_path))
    return ops


def record_patch(*, body: Mapping[str, Any], record: Record) -> list[Op]:
    """Rewrite only the record (``end`` waiting for the merge); auto-sync stays as it is."""
    return [version_test_op(body), set_op(body, _RECORD_PATH, dump_record(record))]


def auto_sync_on(*, kind: GitOpsController, body: Mapping[str, Any], application: str | None = None) -> bool:
    """Whether the controller syncs this object by itself (a parent: whether it re-applies ``application``)."""
    return kind.auto_sync_on(body, application=application)
