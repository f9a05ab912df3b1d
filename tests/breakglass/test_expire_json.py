"""``break-glass expire --output json`` stays JSON when the named object has no expired break-glass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.controllers import argocd_app

pytestmark = pytest.mark.controlplane


def test_expire_json_with_nothing_expired(
    controlplane: Any, crds: list[str], namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argocd_app(controlplane, namespace, "web")
    code, out, err = run_cli("break-glass", "expire", "--argocd-app", f"{namespace}/web", "--no-backport",
                         "--kubeconfig", controlplane.kubeconfig, "--output", "json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out) == []
