"""The Flux fixture's failures name their step and leave nothing running."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.controlplane import processes
from tests.controlplane.cp import ControlPlane
from tests.flux import controllers
from tests.flux.controllers import FluxError
from tests.flux.fixtures import SHARED_CRDS


def test_the_build_without_go_fails_naming_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert shutil.which("go", path="/usr/bin:/bin") is None, "this test needs a PATH without go"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("WRITEBACK_FLUX_CACHE", str(tmp_path / "cache"))
    with pytest.raises(FluxError) as failed:
        controllers.build_controllers()
    assert "FAILED step 'find Go'" in str(failed.value)
    assert f"retry with: {controllers.BUILD_SCRIPT}" in str(failed.value)
    assert not list((tmp_path / "cache").glob("*/bin/*"))


def _fake_controllers(tmp_path: Path, flux_bin_dir: Path, script: str) -> Path:
    """A bin dir whose 'controllers' run `script`, next to the real CRDs."""
    bin_dir = tmp_path / "v" / "bin"
    bin_dir.mkdir(parents=True)
    (tmp_path / "v" / "crds").symlink_to(flux_bin_dir.parent / "crds")
    for name in controllers.NAMES:
        (bin_dir / name).write_text(f"#!/bin/sh\n{script}\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def _left_running(pid_file: Path) -> list[int]:
    pids = [int(p) for p in pid_file.read_text().split()] if pid_file.exists() else []
    return [p for p in pids if processes.running(p)]


@pytest.mark.controlplane
@pytest.mark.flux
def test_a_controller_that_exits_at_start_fails_with_its_log(
    controlplane: ControlPlane, flux_bin_dir: Path, tmp_path: Path
) -> None:
    bin_dir = _fake_controllers(tmp_path, flux_bin_dir, 'echo "setup failed: no kind GitRepository"; exit 1')
    with pytest.raises(FluxError) as failed:
        controllers.start(plane=controlplane, bin_dir=bin_dir, shared_crds=SHARED_CRDS)
    assert "start source-controller: it exited during startup" in str(failed.value)
    assert "setup failed: no kind GitRepository" in str(failed.value)
    workdir = re.search(r"log (\S+)/source-controller\.log", str(failed.value))
    assert workdir is not None and not Path(workdir.group(1)).exists()


@pytest.mark.controlplane
@pytest.mark.flux
def test_a_controller_that_never_gets_healthy_fails_and_is_killed_with_its_children(
    controlplane: ControlPlane, flux_bin_dir: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pids"
    bin_dir = _fake_controllers(tmp_path, flux_bin_dir, f"sleep 300 & echo $$ $! >> {pid_file}; wait")
    with pytest.raises(FluxError) as failed:
        controllers.start(plane=controlplane, bin_dir=bin_dir, shared_crds=SHARED_CRDS, timeout=2)
    assert "wait until source-controller is healthy" in str(failed.value)
    assert len(pid_file.read_text().split()) >= 2
    assert _left_running(pid_file) == []
