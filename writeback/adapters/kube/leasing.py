"""coordination.k8s.io/v1 Leases with optimistic concurrency, on the official kubernetes client.

Every write carries the resourceVersion that was read, so a 409 Conflict means another replica changed the Lease
first: it won, and the caller treats the Lease as not (or no longer) its own. Every other client error is re-raised
as :class:`~writeback.errors.ClusterError` naming the Lease.

Why not ``kubernetes.leaderelection``: it elects one leader for one lock in a blocking loop on its own thread. Sharding
needs many Leases per replica, a heartbeat per replica and a fair share, so the coordinator
(``writeback.service.sharding``) drives these primitives itself. No maintained PyPI library does multi-Lease sharding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from writeback.adapters.kube.api_errors import api_error
from writeback.errors import ClusterError
from writeback.kube.wellknown import LEASE_ROLE_LABEL as ROLE_LABEL
from writeback.kube.wellknown import LEASE_TARGET_ANNOTATION as TARGET_ANNOTATION
from writeback.kube.wellknown import MANAGED_BY

__all__ = ["MANAGED_BY", "ROLE_LABEL", "TARGET_ANNOTATION", "LeaseRecord", "LeaseStore"]
DEFAULT_TIMEOUT = 5.0


@dataclass(frozen=True, kw_only=True)
class LeaseRecord:
    """One Lease as read from the API server."""

    name: str
    holder: str | None
    duration_seconds: int
    resource_version: str
    transitions: int = 0
    renew_time: datetime | None = None
    acquire_time: datetime | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


def micro_time(moment: datetime) -> datetime:
    """A MicroTime the client can send: UTC, never on a whole second.

    The client (pydantic models) serializes datetimes with ``isoformat()``, which drops the fraction when it is
    zero, and the API server's MicroTime parser then rejects the value; one microsecond later is always accepted.
    """
    utc = moment.astimezone(UTC)
    return utc.replace(microsecond=1) if utc.microsecond == 0 else utc


def _record(lease: Any) -> LeaseRecord:
    spec = lease.spec
    meta = lease.metadata
    return LeaseRecord(
        name=meta.name,
        holder=(spec.holder_identity or None) if spec else None,
        duration_seconds=int((spec.lease_duration_seconds if spec else None) or 0),
        resource_version=meta.resource_version,
        transitions=int((spec.lease_transitions if spec else None) or 0),
        renew_time=spec.renew_time if spec else None,
        acquire_time=spec.acquire_time if spec else None,
        labels=dict(meta.labels or {}),
        annotations=dict(meta.annotations or {}),
    )


class LeaseStore:
    """The Leases of one namespace. Methods return None (or False) when another writer won the race."""

    def __init__(self, *, api_client: Any, namespace: str, request_timeout: float = DEFAULT_TIMEOUT) -> None:
        from kubernetes import client

        self._api: Any = client.CoordinationV1Api(api_client)
        self._exc: type[Exception] = client.ApiException
        self.namespace = namespace
        self._timeout = request_timeout

    def _fail(self, what: str, name: str | None, e: Exception) -> ClusterError:
        where = f"lease {self.namespace}/{name}" if name else f"leases in namespace {self.namespace}"
        return api_error(e, what=f"{what} {where} failed")

    def list(self, *, label_selector: str) -> list[LeaseRecord]:
        try:
            got = self._api.list_namespaced_lease(
                namespace=self.namespace, label_selector=label_selector, _request_timeout=self._timeout
            )
        except Exception as e:
            raise self._fail("listing", None, e) from e
        return [_record(item) for item in got.items]

    def get(self, *, name: str) -> LeaseRecord | None:
        try:
            return _record(
                self._api.read_namespaced_lease(name=name, namespace=self.namespace, _request_timeout=self._timeout)
            )
        except self._exc as e:
            if getattr(e, "status", None) == 404:
                return None
            raise self._fail("reading", name, e) from e
        except Exception as e:
            raise self._fail("reading", name, e) from e

    def create(
        self,
        *,
        name: str,
        holder: str,
        duration_seconds: int,
        now: datetime,
        labels: Mapping[str, str],
        annotations: Mapping[str, str] | None = None,
    ) -> LeaseRecord | None:
        """Create the Lease held by ``holder``; None if it already exists (someone else was first)."""
        body: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "labels": dict(labels), "annotations": dict(annotations or {})},
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": duration_seconds,
                "acquireTime": micro_time(now),
                "renewTime": micro_time(now),
                "leaseTransitions": 0,
            },
        }
        try:
            created = self._api.create_namespaced_lease(
                namespace=self.namespace, body=body, _request_timeout=self._timeout
            )
        except self._exc as e:
            if getattr(e, "status", None) == 409:
                return None
            raise self._fail("creating", name, e) from e
        except Exception as e:
            raise self._fail("creating", name, e) from e
        return _record(created)

    def write(
        self, *, record: LeaseRecord, holder: str | None, duration_seconds: int, now: datetime
    ) -> LeaseRecord | None:
        """Replace the Lease read as ``record``: renew, take over (new holder) or release (``holder=None``).

        The write is conditional on ``record.resource_version``; None means a 409 Conflict (the Lease changed).
        """
        taking = holder is not None and holder != record.holder
        spec: dict[str, Any] = {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration_seconds,
            "renewTime": micro_time(now) if holder else None,
            "acquireTime": micro_time(now) if taking else _opt_time(record.acquire_time if holder else None),
            "leaseTransitions": record.transitions + (1 if taking and record.holder else 0),
        }
        body: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": record.name,
                "resourceVersion": record.resource_version,
                "labels": dict(record.labels),
                "annotations": dict(record.annotations),
            },
            "spec": spec,
        }
        try:
            done = self._api.replace_namespaced_lease(
                name=record.name, namespace=self.namespace, body=body, _request_timeout=self._timeout
            )
        except self._exc as e:
            if getattr(e, "status", None) in (404, 409):
                return None
            raise self._fail("updating", record.name, e) from e
        except Exception as e:
            raise self._fail("updating", record.name, e) from e
        return _record(done)

    def delete(self, *, record: LeaseRecord) -> bool:
        """Delete the Lease if it is still as read; False if it changed meanwhile (404 counts as done)."""
        from kubernetes import client

        options = client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version=record.resource_version))
        try:
            self._api.delete_namespaced_lease(
                name=record.name, namespace=self.namespace, body=options, _request_timeout=self._timeout
            )
        except self._exc as e:
            status = getattr(e, "status", None)
            if status == 404:
                return True
            if status == 409:
                return False
            raise self._fail("deleting", record.name, e) from e
        except Exception as e:
            raise self._fail("deleting", record.name, e) from e
        return True


def _opt_time(moment: datetime | None) -> datetime | None:
    return None if moment is None else micro_time(moment)
