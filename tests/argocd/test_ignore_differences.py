"""Scenario d against the real Argo CD (opt-in): the live Application's `spec.ignoreDifferences` (JSON pointers,
jq path expressions, managedFieldsManagers) are honoured by writeback, read from the Application in the cluster,
exactly as the offline cases read them: the fields Argo CD is told to ignore are never written back; a person's
change elsewhere is."""

from __future__ import annotations

import json

import pytest

from tests.argocd.conftest import ArgoShopMaker

pytestmark = [pytest.mark.argocd, pytest.mark.controlplane]

IGNORED = (
    {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]},
    {"group": "apps", "kind": "Deployment",
     "jqPathExpressions": ['.spec.template.spec.containers[] | select(.name == "app").resources']},
    {"kind": "ConfigMap", "managedFieldsManagers": ["cert-rotator"]},
)  # fmt: skip
ROTATED = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "checkout-ca"},
           "data": {"rotated.crt": "-----BEGIN CERTIFICATE-----\nrotated\n-----END CERTIFICATE-----\n"}}  # fmt: skip


def test_the_applications_ignore_differences_are_honoured(make_argo_shop: ArgoShopMaker) -> None:
    shop = make_argo_shop(automated=None, ignore_differences=IGNORED)  # synced once; nothing reverts
    ns = shop.namespace
    shop.controlplane.kubectl("patch", "deployment", "checkout", "-n", ns, "--type=merge",
                              "-p", json.dumps({"spec": {"replicas": 7}}))  # fmt: skip
    shop.controlplane.kubectl("set", "resources", "deployment/checkout", "-n", ns, "-c", "app", "--limits=memory=1Gi")
    shop.controlplane.kubectl("apply", "--server-side", "--field-manager=cert-rotator", "-n", ns, "-f", "-",
                              input=json.dumps(ROTATED))  # fmt: skip
    shop.controlplane.kubectl("set", "env", "deployment/checkout", "-n", ns, "-c", "app", "FEATURE_X=on")
    application = shop.application()
    assert [dict(e) for e in IGNORED] == application["spec"]["ignoreDifferences"]

    dep = shop.decisions(shop.config(), "Deployment", "checkout")
    assert dep["spec.replicas"] == ("ignore", "Argo CD ignoreDifferences: jsonPointers /spec/replicas")
    limits = "spec.template.spec.containers[name=app].resources.limits.memory"
    assert dep[limits] == ("ignore", "Argo CD ignoreDifferences: jqPathExpressions")
    env = "spec.template.spec.containers[name=app].env[name=FEATURE_X]"
    assert dep[env][0] == "writeback", dep
    cm = shop.decisions(shop.config(), "ConfigMap", "checkout-ca")
    assert cm['data["rotated.crt"]'] == ("ignore", "Argo CD ignoreDifferences: managedFieldsManagers cert-rotator")
    assert {d for d, _ in {**dep, **cm}.values()} == {"ignore", "writeback"}
