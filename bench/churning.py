"""Changes between a warm benchmark's cycles: ``bench_warm.py --churn FRACTION`` (issue 23's target: "with 1% of
objects changed between cycles").

The change is the one a cluster makes most often without anyone touching Git: the HPA scaling Deployments through
the scale subresource as ``kube-controller-manager``. The Deployments churned are ones the world scaled already
(``world.scaled``), so every cycle's decisions stay exactly the world's (a scaled Deployment's replicas are
ignored), while each churned object gets a new ``resourceVersion`` and a new replica count (6, then 5, then 6, ...)
that the service's informers must deliver before the next cycle.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scale_cluster import SCALE_MANAGER


def churn_targets(scaled: Iterable[Any], *, objects: int, fraction: float) -> tuple[tuple[str, str], ...]:
    """(namespace, Deployment name) of ``fraction`` of ``objects``, taken from the world's scaled Deployments."""
    if fraction <= 0:
        return ()
    apps = list(scaled)
    want = max(1, round(fraction * objects))
    if want > len(apps):
        raise ValueError(f"--churn {fraction}: {want} Deployments wanted, the world scaled only {len(apps)}")
    return tuple((a.namespace, a.name) for a in apps[:want])


def replicas_for(round_index: int) -> int:
    return 6 if round_index % 2 == 0 else 5


def churn(api: Any, targets: Sequence[tuple[str, str]], *, replicas: int) -> dict[tuple[str, str], str]:
    """Scale each target to ``replicas`` as the HPA does; their new resourceVersions."""
    out = {}
    for ns, name in targets:
        request = api.param_serialize(
            method="PATCH",
            resource_path=f"/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale",
            query_params=[("fieldManager", SCALE_MANAGER)],
            header_params={"Content-Type": "application/merge-patch+json", "Accept": "application/json"},
            body={"spec": {"replicas": replicas}},
            auth_settings=["BearerToken"],
        )
        response = api.call_api(*request, _request_timeout=(10, 60))
        data = response.read()
        if not 200 <= response.status <= 299:
            raise RuntimeError(f"scaling {ns}/{name}: HTTP {response.status}: {data[:300]!r}")
        out[(ns, name)] = json.loads(data)["metadata"]["resourceVersion"]
    return out


def wait_seen(informers: Iterable[Any], expected: Mapping[tuple[str, str], str], *, timeout: float = 60.0) -> None:
    """Until the Deployment informers hold every churned object at its new resourceVersion."""
    deployments = [i for i in informers if i.resource.kind == "Deployment"]
    deadline = time.monotonic() + timeout
    while True:
        seen = {
            (o["metadata"].get("namespace"), o["metadata"]["name"]): o["metadata"]["resourceVersion"]
            for informer in deployments
            for o in informer.objects()
        }
        missing = [key for key, rv in expected.items() if seen.get(key) != rv]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the informers did not deliver {len(missing)} churned objects, e.g. {missing[:3]}")
        time.sleep(0.05)


def seen_in(live: Iterable[Any], targets: Sequence[tuple[str, str]], *, replicas: int) -> int:
    """How many targets a cycle's live objects show at ``replicas``."""
    wanted = set(targets)
    return sum(
        1
        for o in live
        if o.ref.kind == "Deployment" and (o.ref.namespace, o.ref.name) in wanted
        and o.body.get("spec", {}).get("replicas") == replicas
    )  # fmt: skip
