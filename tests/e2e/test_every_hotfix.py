"""Issue 22 §1, end to end on the real Flux controllers: a second hotfix never erases the first from the PR.

- A custom resource (Istio's VirtualService, its CRD created here): the on-call person shifts all traffic to v2
  with `kubectl patch --type merge` (weights 90/10 -> 0/100); Flux reverts it (``spec.http`` is an atomic list:
  Flux takes all of it back); later the person adds retries with `kubectl edit`; Flux reverts that too. The one PR
  carries both changes, and names both writes (manager and time).
- A Deployment: two `kubectl set env`, each reverted by Flux; the PR carries both.
- A hotfix the person undoes themselves before anything reverts it: no PR, and both captures are done with.

Every wait is for an observed fact (a live version, a capture file, a PR, the service's own metrics).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.support import INTERVAL, TARGET, Service, Shop, ShopMaker, container
from tests.e2e.test_hotfix import merge_and_settle
from tests.support.polling import wait_until

pytestmark = [pytest.mark.controlplane, pytest.mark.flux]

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: virtualservices.networking.istio.io
spec:
  group: networking.istio.io
  names: {kind: VirtualService, listKind: VirtualServiceList, plural: virtualservices, singular: virtualservice}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""

VIRTUAL_SERVICE = """\
# checkout: all traffic on v1, a canary on v2
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: checkout
  namespace: {namespace}
spec:
  hosts:
    - checkout
  http:
    - route:
        - destination:
            host: checkout
            subset: v1
          weight: 90
        - destination:
            host: checkout
            subset: v2
          weight: 10
"""

ALL_ON_V2 = {"spec": {"http": [{"route": [
    {"destination": {"host": "checkout", "subset": "v1"}, "weight": 0},
    {"destination": {"host": "checkout", "subset": "v2"}, "weight": 100},
]}]}}  # fmt: skip

ADD_RETRIES = """\
import re, sys
path = sys.argv[1]
text = open(path).read()
m = re.search(r"^( *)- route:", text, re.M)  # the first route of spec.http, as kubectl prints it
i = m.group(1)
new = f"{i}- retries:\\n{i}    attempts: 3\\n{i}    perTryTimeout: 2s\\n{i}  route:"
open(path, "w").write(text[:m.start()] + new + text[m.end():])
"""


def weights(vs: dict[str, Any]) -> list[int]:
    return [int(r["weight"]) for r in vs["spec"]["http"][0]["route"]]


def retries(vs: dict[str, Any]) -> Any:
    return vs["spec"]["http"][0].get("retries")


def the_pr_says(shop: Shop, service: Service, *texts: str) -> dict[str, Any]:
    """The one PR, once its body holds every one of ``texts``."""
    service.wait(
        f"the PR naming {texts}",
        lambda: any(all(t in (p["body"] or "") for t in texts) for p in shop.forge.prs.values()),
        timeout=90,
    )
    return shop.only_pr()


def changed_lines(shop: Shop, pr: dict[str, Any]) -> tuple[list[str], list[str]]:
    diff = shop.pr_diff(pr)
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = [line[1:].strip() for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    return added, removed


def test_two_hotfixes_of_a_virtual_service_are_both_in_the_pr(
    make_shop: ShopMaker, namespace: str, controlplane: Any, tmp_path: Path
) -> None:
    def crd(_: str) -> None:
        controlplane.kubectl("apply", "-f", "-", input=CRD)
        controlplane.kubectl("wait", "--for=condition=Established", "crd/virtualservices.networking.istio.io")

    shop = make_shop(files={"virtualservice.yaml": VIRTUAL_SERVICE.format(namespace=namespace)}, before_apply=crd)
    config = shop.config()
    flux_label = f"kustomize.toolkit.fluxcd.io/name={shop.sync.name}"
    config["targets"][0]["selectors"] = [{"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
                                          "namespaces": [shop.namespace], "labelSelector": flux_label}]  # fmt: skip
    service = shop.serve(config)
    vs = lambda: shop.get("virtualservice", "checkout")  # noqa: E731
    assert weights(vs()) == [90, 10]

    # 1. all traffic to v2, by merge patch; Flux takes it back on its next reconcile
    shop.controlplane.kubectl("patch", "virtualservice/checkout", "-n", shop.namespace, "--type=merge",
                              "-p", json.dumps(ALL_ON_V2))  # fmt: skip
    wait_until("the capture of the patch", lambda: len(service.captures()) == 1, timeout=10)
    wait_until("Flux reverting the weights", lambda: weights(vs()) == [90, 10], timeout=3 * INTERVAL + 5)
    pr = the_pr_says(shop, service, "kubectl-patch", "Already reverted in the cluster")
    added, removed = changed_lines(shop, pr)
    assert sorted(added) == ["weight: 0", "weight: 100"] and sorted(removed) == ["weight: 10", "weight: 90"]

    # 2. later, on the reverted object, retries by kubectl edit; Flux takes that back too
    editor = tmp_path / "retries.py"
    editor.write_text(ADD_RETRIES)
    env = dict(os.environ, KUBE_EDITOR=f"{shlex.quote(sys.executable)} {shlex.quote(str(editor))}")
    shop.controlplane.kubectl("edit", "virtualservice/checkout", "-n", shop.namespace, env=env)
    wait_until("the capture of the edit, beside the first", lambda: len(service.captures()) == 2, timeout=10)
    wait_until("Flux reverting the retries", lambda: retries(vs()) is None, timeout=3 * INTERVAL + 5)
    assert weights(vs()) == [90, 10]

    # the same PR carries both writes, and names each
    pr = the_pr_says(shop, service, "changed by <code>kubectl-patch</code>", "changed by <code>kubectl-edit</code>")
    added, removed = changed_lines(shop, pr)
    assert "weight: 0" in added and "weight: 100" in added, added
    assert "attempts: 3" in added and "perTryTimeout: 2s" in added, added
    assert sorted(removed) == ["weight: 10", "weight: 90"], removed
    body = pr["body"]
    captures = [json.loads(p.read_text()) for p in service.captures()]
    for capture in captures:  # each write named with its manager and time
        assert f"<code>{capture['manager']}</code> at {capture['time']}" in body, body
    assert {c["manager"] for c in captures} == {"kubectl-patch", "kubectl-edit"}

    merge_and_settle(shop, service, pr, regenerated=True)
    live = vs()
    assert weights(live) == [0, 100] and retries(live) == {"attempts": 3, "perTryTimeout": "2s"}
    assert "persistent drift" not in service.stop()


def test_two_kubectl_set_env_on_a_deployment_are_both_in_the_pr(shop: Shop) -> None:
    service = shop.serve()

    def env() -> dict[str, str]:
        return {e["name"]: e.get("value", "") for e in container(shop.get("deployment", "checkout"))["env"]}

    shop.controlplane.kubectl("set", "env", "deployment/checkout", "-n", shop.namespace, "-c", "app",
                              "LOG_LEVEL=debug")  # fmt: skip
    wait_until("the capture of the first set env", lambda: len(service.captures()) == 1, timeout=10)
    wait_until("Flux reverting LOG_LEVEL", lambda: env()["LOG_LEVEL"] == "info", timeout=3 * INTERVAL + 5)
    pr = the_pr_says(shop, service, "kubectl-set", "Already reverted in the cluster")

    shop.controlplane.kubectl("set", "env", "deployment/checkout", "-n", shop.namespace, "-c", "app",
                              "PAYMENT_TIMEOUT_MS=5000")  # fmt: skip
    wait_until("the capture of the second set env", lambda: len(service.captures()) == 2, timeout=10)
    wait_until("Flux reverting the new var", lambda: "PAYMENT_TIMEOUT_MS" not in env(), timeout=3 * INTERVAL + 5)
    assert env()["LOG_LEVEL"] == "info"

    service.wait(
        "the PR naming both writes as reverted",
        lambda: shop.only_pr()["body"].count("changed by <code>kubectl-set</code>") == 2,
        timeout=90,
    )
    pr = shop.only_pr()
    added, removed = changed_lines(shop, pr)
    assert sorted(added) == sorted(['value: "debug"', "- name: PAYMENT_TIMEOUT_MS", 'value: "5000"']), added
    assert removed == ['value: "info"'], removed
    times = sorted(json.loads(p.read_text())["time"] for p in service.captures())
    for t in times:
        assert f"<code>kubectl-set</code> at {t}" in pr["body"], pr["body"]

    merge_and_settle(shop, service, pr, regenerated=True)
    assert env()["LOG_LEVEL"] == "debug" and env()["PAYMENT_TIMEOUT_MS"] == "5000"
    assert "persistent drift" not in service.stop()


def test_a_hotfix_the_person_undoes_gives_no_pr(shop: Shop) -> None:
    """The person sets a variable and removes it again before Flux reconciles (its Kustomization suspended, so the
    two writes are not reverted in between). The second write replaces the first; Git carries the second (the
    object is as Git says): no PR, and both captures are done with."""
    config = shop.config(interval=600, debounce=4)  # one evaluation, after both writes
    service = shop.serve(config)
    cycles = service.cycles()
    shop.sync.suspend()
    try:
        kubectl = ("-n", shop.namespace, "-c", "app")
        shop.controlplane.kubectl("set", "env", "deployment/checkout", *kubectl, "PAYMENT_TIMEOUT_MS=5000")
        shop.controlplane.kubectl("set", "env", "deployment/checkout", *kubectl, "PAYMENT_TIMEOUT_MS-")
        wait_until("both writes captured", lambda: len(service.captures()) == 2, timeout=10)
        service.wait("both captures done with", lambda: service.cycles() > cycles and not service.captures())
        assert shop.forge.prs == {}
        assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
        log = service.log.read_text()
        assert "a later write by a person changed the same fields" in log and "done with: in Git" in log
    finally:
        shop.sync.resume()
    service.stop()
