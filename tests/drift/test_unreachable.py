"""An API server that does not answer: one clear error and exit 3, not a problem per resource."""

from __future__ import annotations

from pathlib import Path

import pytest

from writeback.cli import main

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def test_unreachable_cluster_is_one_error_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    apps = tmp_path / "repo" / "apps"
    apps.mkdir(parents=True)
    (apps / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n")
    (apps / "dep.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: b, namespace: n}\n")

    code = main(["diff", "--kubeconfig", str(tmp_path / "kubeconfig"), "--repo", str(tmp_path / "repo")])

    out, err = capsys.readouterr()
    assert code == 3
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("writeback: error: discovery of ")
    assert "Connection refused" in err and "not-a-real-token" not in err
