"""The one place that turns Kubernetes API failures into our ``ClusterError`` subclasses.

Every adapter that talks to the API server (cluster, controllers, leasing, watching, the hotfix store) maps its
errors here, so that the rest of writeback tells the cases apart by type, never by message:

    403 -> ClusterForbidden      404 -> ClusterNotFound      409 / 422 -> ClusterConflict
    no answer (connection refused, timeout, TLS) -> ClusterUnreachable      anything else -> ClusterError
"""

from __future__ import annotations

import json
from typing import Any

from writeback.errors import ClusterConflict, ClusterError, ClusterForbidden, ClusterNotFound, ClusterUnreachable

__all__ = ["api_error", "body_message", "for_status", "transport_reason"]


def for_status(status: int | None, message: str) -> ClusterError:
    """The error of an HTTP status the API server answered with."""
    if status == 403:
        return ClusterForbidden(message)
    if status == 404:
        return ClusterNotFound(message)
    if status in (409, 422):
        return ClusterConflict(message)
    return ClusterError(message)


def body_message(data: Any) -> str:
    """The ``message`` of a Kubernetes ``Status`` body (bytes or text), else its first 300 characters."""
    if data is None:
        return ""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes | bytearray) else str(data)
    try:
        doc = json.loads(text)
    except ValueError:
        return text[:300].strip()
    return str(doc.get("message") or "") if isinstance(doc, dict) else ""


def api_error(e: BaseException, *, what: str, host: str = "") -> ClusterError:
    """The ``ClusterError`` of an exception the kubernetes client or urllib3 raised while doing ``what``."""
    from kubernetes.client.exceptions import ApiException, OpenApiException
    from urllib3.exceptions import HTTPError

    if isinstance(e, ApiException):
        detail = body_message(e.body) or str(e.reason or e)
        return for_status(e.status, f"{what}: HTTP {e.status}: {detail}" if e.status else f"{what}: {detail}")
    if isinstance(e, HTTPError | OSError):
        where = f" {host}" if host else ""
        return ClusterUnreachable(f"{what}: cannot reach the API server{where} ({transport_reason(e)})")
    if isinstance(e, OpenApiException):
        return ClusterError(f"{what}: {e}")
    return ClusterError(f"{what}: {type(e).__name__}: {e}")


def transport_reason(e: BaseException) -> str:
    """The innermost cause of a transport error, short: ``connection refused``, ``timed out``, a TLS error."""
    seen: BaseException | None = e
    while seen is not None:
        inner = getattr(seen, "reason", None)
        if isinstance(seen, OSError) and seen.strerror:
            return seen.strerror.lower()
        if not isinstance(inner, BaseException):
            break
        seen = inner
    text = str(seen or e)
    return text.rsplit(": ", 1)[-1].strip() or type(e).__name__
