"""Where cluster credentials come from: --kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from writeback.adapters.kube.kubeconfigs import ClusterAccess, new_api_client, resolve_kubeconfig
from writeback.errors import InputError


def test_order_flag_env_home_in_cluster(tmp_path: Path) -> None:
    flag = tmp_path / "flag-config"
    flag.write_text("x")
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text("x")
    env = {"KUBECONFIG": "/a:/b", "HOME": str(home), "KUBERNETES_SERVICE_HOST": "10.0.0.1"}

    assert resolve_kubeconfig(access=ClusterAccess(kubeconfig=str(flag)), environ=env) == str(flag)
    assert resolve_kubeconfig(access=ClusterAccess(), environ=env) == "/a:/b"
    del env["KUBECONFIG"]
    assert resolve_kubeconfig(access=ClusterAccess(), environ=env) == str(home / ".kube" / "config")
    env["HOME"] = str(tmp_path / "nobody")
    assert resolve_kubeconfig(access=ClusterAccess(), environ=env) is None  # in-cluster
    del env["KUBERNETES_SERVICE_HOST"]
    with pytest.raises(InputError, match="no cluster credentials"):
        resolve_kubeconfig(access=ClusterAccess(), environ=env)
    assert resolve_kubeconfig(access=ClusterAccess(in_cluster=True), environ=env) is None
    with pytest.raises(InputError, match="no such file"):
        resolve_kubeconfig(access=ClusterAccess(kubeconfig=str(tmp_path / "missing")), environ=env)


def test_bad_kubeconfig_and_unknown_context_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    with pytest.raises(InputError, match=str(bad)):
        new_api_client(access=ClusterAccess(kubeconfig=str(bad), context="prod"))
