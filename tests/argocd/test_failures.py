"""The Argo CD fixture's failures name their step and leave nothing running. These use stand-in binaries (or no
Go at all), not the real build, so they run in the default suite."""

from __future__ import annotations

import re
import shutil
import sys
import uuid
from pathlib import Path

import pytest

from tests.argocd import server
from tests.argocd.install import CRD_NAMES, ArgoCDError
from tests.controlplane import processes
from tests.controlplane.cp import ControlPlane
from tests.support.testdata import CRDS

# A redis stand-in that answers PING as redis does and records its pid.
FAKE_REDIS = """\
import os, socketserver, sys
addr = sys.argv[1].split("=", 1)[1]
host, port = addr.rsplit(":", 1)
open(os.environ["PIDS"], "a").write(f"{os.getpid()}\\n")
class Pong(socketserver.StreamRequestHandler):
    def handle(self):
        while self.rfile.read1(64):
            self.wfile.write(b"+PONG\\r\\n")
socketserver.ThreadingTCPServer.allow_reuse_address = True
print("ready", addr, flush=True)
socketserver.ThreadingTCPServer((host, int(port)), Pong).serve_forever()
"""


def _fake_bin_dir(tmp_path: Path, argocd_script: str) -> Path:
    """A bin dir with a working redis stand-in and an `argocd` that runs `argocd_script`, next to the Argo CD
    CRDs of tests/data (v3.5.1's Application and AppProject: enough for these stand-ins)."""
    bin_dir = tmp_path / "v" / "bin"
    bin_dir.mkdir(parents=True)
    crds = tmp_path / "v" / "crds"
    crds.mkdir()
    shutil.copy(CRDS / "argocd-application.yaml", crds / CRD_NAMES[0])
    shutil.copy(CRDS / "argocd-appproject.yaml", crds / CRD_NAMES[1])
    (bin_dir / "redis.py").write_text(FAKE_REDIS)
    (bin_dir / "argocd-redis").write_text(f'#!/bin/sh\nexec {sys.executable} {bin_dir / "redis.py"} "$@"\n')
    (bin_dir / "argocd").write_text(f"#!/bin/sh\n{argocd_script}\n")
    for name in ("argocd-redis", "argocd"):
        (bin_dir / name).chmod(0o755)
    return bin_dir


def _left_running(pid_file: Path) -> list[int]:
    pids = [int(p) for p in pid_file.read_text().split()] if pid_file.exists() else []
    return [p for p in pids if processes.running(p)]


def test_the_build_without_go_fails_naming_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert shutil.which("go", path="/usr/bin:/bin") is None, "this test needs a PATH without go"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("WRITEBACK_ARGOCD_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ArgoCDError) as failed:
        server.build_argocd()
    assert "argocd: FAILED step 'find Go'" in str(failed.value)
    assert f"retry with: {server.BUILD_SCRIPT}" in str(failed.value)
    assert not list((tmp_path / "cache").glob("*/bin/*"))


@pytest.mark.controlplane
def test_a_repo_server_that_exits_at_start_fails_naming_it_and_stops_redis(
    controlplane: ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("PIDS", str(pids))
    bin_dir = _fake_bin_dir(tmp_path, 'echo "error loading cache settings: configmap argocd-cm not found"; exit 1')
    namespace = f"argocd-fail-{uuid.uuid4().hex[:6]}"
    with pytest.raises(ArgoCDError) as failed:
        server.start(plane=controlplane, bin_dir=bin_dir, namespace=namespace)
    assert "start repo-server: it exited during startup" in str(failed.value)
    assert "configmap argocd-cm not found" in str(failed.value)
    assert len(pids.read_text().split()) == 1  # redis had started ...
    assert _left_running(pids) == []  # ... and was stopped
    workdir = re.search(r"log (\S+)/repo-server\.log", str(failed.value))
    assert workdir is not None and not Path(workdir.group(1)).exists()
    # what Argo CD reads was set up before anything started
    cm = controlplane.kubectl("get", "configmap", "argocd-cm", "-n", namespace, "-o", "jsonpath={.metadata.labels}")
    assert '"app.kubernetes.io/part-of":"argocd"' in cm.stdout
    controlplane.kubectl("get", "appproject", "default", "-n", namespace)


@pytest.mark.controlplane
def test_a_process_that_never_gets_healthy_fails_and_is_killed_with_its_children(
    controlplane: ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("PIDS", str(pids))
    bin_dir = _fake_bin_dir(tmp_path, f"sleep 300 & echo $$ $! >> {pids}; wait")  # never answers /healthz
    namespace = f"argocd-hang-{uuid.uuid4().hex[:6]}"
    with pytest.raises(ArgoCDError) as failed:
        server.start(plane=controlplane, bin_dir=bin_dir, namespace=namespace, timeout=2)
    assert "wait until repo-server is healthy" in str(failed.value)
    assert len(pids.read_text().split()) == 3  # redis, and the repo-server with its child
    assert _left_running(pids) == []
