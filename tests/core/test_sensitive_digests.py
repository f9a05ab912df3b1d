"""A sensitive value counts in the change set's fingerprint only as a keyed digest, computed before redaction."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from tests.core.support import applied_fields, defaulted_live, deployment_git, desired_obj, entry, k, live_obj
from writeback.drift.engine import EngineOptions, compute_drift, report_to_json
from writeback.kube.pathtypes import ABSENT
from writeback.model import REDACTED, Drift, keyed_digest
from writeback.settings import Policy
from writeback.sources.changesets import fingerprint

SENSITIVE = "spec.template.spec.containers[*].env[name=API_KEY].value"
KEY = b"k3y-from-a-secret-file"


def _drifts(secret: str, *, key: bytes | None) -> tuple[Drift, ...]:
    git = deployment_git()
    git["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "API_KEY", "value": "old"})
    live = defaulted_live(git)
    live["spec"]["template"]["spec"]["containers"][0]["env"][-1]["value"] = secret
    fields: dict[str, Any] = {"f:spec": {"f:template": {"f:spec": {"f:containers": {k(name="web"): {"f:env": {
        k(name="API_KEY"): {"f:value": {}}}}}}}}}  # fmt: skip
    live["metadata"]["managedFields"] = [
        entry("argocd-controller", applied_fields(), operation="Apply"),
        entry("kubectl-edit", fields, time="2024-05-02T03:07:00Z"),
    ]
    options = EngineOptions(policy=Policy(sensitive_paths=(SENSITIVE,)), fingerprint_key=key)
    report = compute_drift(live=[live_obj(live)], desired=[desired_obj(git)], options=options)
    text = json.dumps(report_to_json(report))
    assert secret not in text and "old" not in text  # the value never leaves, in any form we print
    return report.drifts


def test_a_changed_secret_value_changes_the_fingerprint_only_through_the_keyed_digest() -> None:
    a, a2, b = _drifts("s3cr3t-A", key=KEY), _drifts("s3cr3t-A", key=KEY), _drifts("s3cr3t-B", key=KEY)
    (da,), (db,) = a, b
    assert da.sensitive and da.digest is not None and da.digest.startswith("hmac-sha256:")
    assert "s3cr3t" not in da.digest and da.digest != db.digest
    assert fingerprint(a) == fingerprint(a2)  # stable for the same value
    assert fingerprint(a) != fingerprint(b)  # a new secret value is a new change set version


def test_without_a_key_the_value_is_left_out_of_the_fingerprint() -> None:
    (da,), (db,) = _drifts("s3cr3t-A", key=None), _drifts("s3cr3t-B", key=None)
    assert da.digest is None and db.digest is None
    assert fingerprint([da]) == fingerprint([db])


def test_the_same_value_gives_the_same_digest_in_the_engine_and_in_the_fingerprint() -> None:
    """One keyed digest (``model.keyed_digest``): the engine's, of the value before redaction, and the one a change
    set's fingerprint makes of a sensitive value at hand are the same, for a whole added item too (the JSON of a
    mapping is where two serialisations would differ)."""
    item = {"name": "API_KEY", "value": "s3cr3t-A", "valueFrom": None}
    git = deployment_git()
    live = defaulted_live(git)
    live["spec"]["template"]["spec"]["containers"][0]["env"].append(dict(item))
    added: dict[str, Any] = {"f:spec": {"f:template": {"f:spec": {"f:containers": {k(name="web"): {"f:env": {
        k(name="API_KEY"): {".": {}, "f:name": {}, "f:value": {}}}}}}}}}  # fmt: skip
    live["metadata"]["managedFields"] = [
        entry("argocd-controller", applied_fields(), operation="Apply"),
        entry("kubectl-edit", added, time="2024-05-02T03:07:00Z"),
    ]
    policy = Policy(sensitive_paths=("spec.template.spec.containers[*].env[name=API_KEY]",))
    options = EngineOptions(policy=policy, fingerprint_key=KEY)
    (engine,) = compute_drift(live=[live_obj(live)], desired=[desired_obj(git)], options=options).drifts
    assert engine.sensitive and engine.live == REDACTED and engine.digest == keyed_digest(KEY, item)
    at_hand = replace(engine, live=item, digest=None)  # a sensitive drift whose value is still in the process
    assert fingerprint([at_hand], key=KEY) == fingerprint([engine], key=KEY)
    placeholder = replace(engine, digest=None)  # the placeholder is no value: it is never digested
    assert fingerprint([placeholder], key=KEY) == fingerprint([placeholder], key=b"another key")
    assert keyed_digest(None, item) is None and keyed_digest(KEY, ABSENT) is None
