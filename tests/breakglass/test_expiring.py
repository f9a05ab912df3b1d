"""``writeback break-glass expire`` (and ``expire_due``, which the service calls each cycle): only records past
their TTL are ended; one without a target to backport with stays suspended and makes the run exit 3."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.breakglass.support import TOKEN_ENV, gitops_sync, make_bare, target, write_config
from tests.fakes.github_fake import TOKEN, GitHubFake
from tests.support.breakglass_record import record
from tests.support.cli import run_cli
from tests.support.controllers import AUTOMATED, argocd_app
from tests.support.kube import get
from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.controllers import ControllerObjects
from writeback.breakglass import flow

pytestmark = pytest.mark.controlplane
APPS = "applications.argoproj.io"


def test_expire_ends_only_the_records_past_their_ttl(
    controlplane: Any, crds: list[str], namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    kc = ("--kubeconfig", controlplane.kubeconfig)
    bare, seed = make_bare(tmp_path)
    gitops_sync(controlplane, namespace, seed)
    for name, ttl in (("due", "1s"), ("orphan", "1s"), ("later", "2h")):
        argocd_app(controlplane, namespace, name)
        code, _, err = run_cli("break-glass", "start", "--argocd-app", f"{namespace}/{name}", "--reason",
                           f"incident on {name}", "--ttl", ttl, *kc)  # fmt: skip
        assert code == 0, err
    later = record(get(controlplane, APPS, namespace, "later"))
    orphan = record(get(controlplane, APPS, namespace, "orphan"))
    time.sleep(1.5)

    objects = ControllerObjects(cluster=KubeCluster.connect(kubeconfig=controlplane.kubeconfig))
    due = {h.ref.name for h in flow.held(objects=objects, namespace=namespace) if h.record.expired(now=flow.now_utc())}
    assert due == {"due", "orphan"}

    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    fake = GitHubFake(bare=bare).start()
    try:
        cfg = write_config(tmp_path / "writeback.yaml",
                           target("shop", bare=bare, namespace=namespace, app="due", forge_url=fake.url))  # fmt: skip
        code, out, err = run_cli("break-glass", "expire", "--config", str(cfg), "--controller-namespace",
                             namespace, "--resume-after", "opened", *kc)  # fmt: skip
        assert fake.violations == []
    finally:
        fake.stop()
    assert code == 3, out + err  # the orphan could not be backported
    assert f"argocd  {namespace}/due  backport ensured, auto-sync restored" in out
    assert f"argocd  {namespace}/orphan  FAILED: no target to backport it with; auto-sync stays suspended" in out
    assert "later" not in out

    app = get(controlplane, APPS, namespace, "due")
    assert app["spec"]["syncPolicy"]["automated"] == AUTOMATED and record(app) is None
    for name, rec in (("orphan", orphan), ("later", later)):
        app = get(controlplane, APPS, namespace, name)
        assert "automated" not in app["spec"]["syncPolicy"] and record(app) == rec

    # nothing else is due: a second run touches nothing
    before = {n: get(controlplane, APPS, namespace, n)["metadata"]["resourceVersion"] for n in ("later", "due")}
    found = flow.held(objects=objects, namespace=namespace)
    ended = flow.sweep(objects=objects, found=found, backing_for=lambda item: None)
    assert [(e.held.ref.name, e.restored, e.failed) for e in ended] == [("orphan", False, True)]
    assert {n: get(controlplane, APPS, namespace, n)["metadata"]["resourceVersion"] for n in before} == before
    assert objects.patch_calls == 0
