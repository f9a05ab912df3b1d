"""The real Flux source-controller and kustomize-controller (v1.9.6), run out of cluster against the test control
plane, with a git smart-HTTP server on loopback for them to clone from.

    bin_dir = build_controllers()                       # tests/flux/build; a no-op when cached
    flux = start(plane=plane, bin_dir=bin_dir)           # CRDs, git server, both controllers; waits until healthy
    url = flux.serve(bare_repo)                          # a clone URL Flux can use (git smart HTTP)
    flux.stop()                                          # both process groups gone, git server stopped

Everything that cannot start raises `FluxError` naming the step. See docs/flux-tests.md.
"""

from __future__ import annotations

import atexit
import shutil
import socket
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.controlplane import processes
from tests.controlplane.cp import ControlPlane, KubectlError
from tests.fakes.git_http import GitHTTPServer
from tests.flux.sync import WATCH_LABEL
from tests.support.buildscripts import run_build_script

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build"
NAMES = ("source-controller", "kustomize-controller")
SHARED_KUSTOMIZATION_CRD = "flux-kustomization.yaml"  # tests/data/crds: identical to kustomize-controller v1.9.6's
FIELD_MANAGER = "writeback-tests"
HEALTH_TIMEOUT = 90.0


class FluxError(RuntimeError):
    """The Flux controllers could not be built, started or stopped; the message names the step."""


def build_controllers(*, timeout: float = 3600, progress: Callable[[str], None] | None = None) -> Path:
    """Run tests/flux/build (a no-op when cached) and return its bin dir; `progress` gets its log lines."""
    retry = f"retry with: {BUILD_SCRIPT}  (see docs/flux-tests.md)"
    try:
        run = run_build_script(BUILD_SCRIPT, timeout=timeout, progress=progress)
    except OSError as exc:
        raise FluxError(f"Flux build step failed to run: {exc}; {retry}") from exc
    if run.code != 0:
        raise FluxError(
            f"Flux controllers build failed: {run.failed_step()}\n{retry}\n--- build log tail ---\n{run.tail()}"
        )
    last = run.last_line()
    bin_dir = Path(last) if last else None
    if bin_dir is None or any(not (bin_dir / n).is_file() for n in NAMES) or not source_crds(bin_dir):
        raise FluxError(f"{BUILD_SCRIPT} left no controllers or CRDs (printed {run.out.strip()!r}); {retry}")
    return bin_dir


def source_crds(bin_dir: Path) -> list[Path]:
    """source-controller's six CRDs, copied by the build from its module's config/crd/bases."""
    return sorted((bin_dir.parent / "crds").glob("*.yaml"))


@dataclass(kw_only=True)
class FluxControllers:
    """Both controllers running against `plane`, and the git server they clone from."""

    plane: ControlPlane
    bin_dir: Path
    workdir: Path
    git_server: GitHTTPServer
    pids: dict[str, int]
    health: dict[str, str]
    storage_addr: str
    _stopped: bool = field(default=False, repr=False)

    def serve(self, bare: Path) -> str:
        """A git smart-HTTP URL (loopback, no auth) of the bare repository `bare`, for GitRepository.spec.url."""
        return self.git_server.publish(bare)

    def log(self, name: str) -> Path:
        """The log file of controller `name` (source-controller or kustomize-controller)."""
        return self.workdir / f"{name}.log"

    def alive(self) -> bool:
        return not self._stopped and all(processes.running(pid) for pid in self.pids.values())

    def tail(self, name: str, lines: int = 30) -> str:
        try:
            return "\n".join(self.log(name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop both controllers (whole process groups) and the git server; waits until nothing is left."""
        if self._stopped:
            return
        self._stopped = True
        try:
            for name in reversed(NAMES):
                pid = self.pids.get(name)
                if pid is not None:
                    processes.kill_group(pid)
        finally:
            self.git_server.stop()
            shutil.rmtree(self.workdir, ignore_errors=True)


_STARTED: list[FluxControllers] = []


@atexit.register
def _stop_started() -> None:
    for flux in _STARTED:
        flux.stop()


def start(*, plane: ControlPlane, bin_dir: Path, shared_crds: Path, timeout: float = HEALTH_TIMEOUT) -> FluxControllers:
    """Install the CRDs, start the git server and both controllers against `plane`; return once both are healthy."""
    workdir = Path(tempfile.mkdtemp(prefix="writeback-flux-"))
    (workdir / "git").mkdir()
    git_server = GitHTTPServer(root=workdir / "git").start()
    flux = FluxControllers(
        plane=plane, bin_dir=bin_dir, workdir=workdir, git_server=git_server, pids={}, health={}, storage_addr=""
    )
    _STARTED.append(flux)
    try:
        install_crds(plane=plane, bin_dir=bin_dir, shared_crds=shared_crds)
        for attempt in range(3):  # a port taken between free_port() and the bind: retry with fresh ports
            try:
                _spawn_all(flux)
                _wait_healthy(flux, timeout=timeout)
                break
            except _PortRace:
                for pid in flux.pids.values():
                    processes.kill_group(pid)
                flux.pids.clear()
                if attempt == 2:
                    raise FluxError("start Flux controllers: their ports were taken three times") from None
    except BaseException:
        flux.stop()
        raise
    return flux


def install_crds(*, plane: ControlPlane, bin_dir: Path, shared_crds: Path) -> list[str]:
    """source-controller's six CRDs (it exits at start without all of them) and the Kustomization CRD."""
    files = [*source_crds(bin_dir), shared_crds / SHARED_KUSTOMIZATION_CRD]
    missing = [str(f) for f in files if not f.is_file()]
    if len(files) < 7 or missing:
        raise FluxError(f"install Flux CRDs: missing CRD manifests {missing or files}")
    args = [a for f in files for a in ("-f", str(f))]
    try:
        applied = plane.kubectl("apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "-o", "name", *args)
        names = [line.split("/", 1)[1] for line in applied.stdout.split() if line.strip()]
        plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{n}" for n in names))
    except KubectlError as exc:
        raise FluxError(f"install Flux CRDs: {exc}") from exc
    return names


class _PortRace(Exception):
    pass


def _accepts(addr: str) -> bool:
    """The artifact server (started after the manager, asynchronously) accepts connections."""
    host, _, port = addr.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except OSError:
        return False
    return True


def _spawn_all(flux: FluxControllers) -> None:
    kubeconfig = {"KUBECONFIG": flux.plane.kubeconfig}
    storage = processes.free_port()
    flux.storage_addr = f"127.0.0.1:{storage}"
    (flux.workdir / "storage").mkdir(exist_ok=True)
    specific: Mapping[str, list[str]] = {
        "source-controller": [
            f"--storage-path={flux.workdir / 'storage'}",
            f"--storage-addr={flux.storage_addr}",
            f"--storage-adv-addr={flux.storage_addr}",
        ],
        "kustomize-controller": ["--no-remote-bases=true"],
    }
    for name in NAMES:
        health = f"127.0.0.1:{processes.free_port()}"
        flux.health[name] = health
        cmd = [
            str(flux.bin_dir / name),
            "--enable-leader-election=false",
            "--watch-all-namespaces=true",
            f"--watch-label-selector={','.join(f'{k}={v}' for k, v in WATCH_LABEL.items())}",
            f"--metrics-addr=127.0.0.1:{processes.free_port()}",
            f"--health-addr={health}",
            "--log-level=info",
            *specific[name],
        ]
        try:
            flux.pids[name] = processes.spawn(cmd, log=flux.log(name), detach=False, env=kubeconfig)
        except OSError as exc:
            raise FluxError(f"start {name}: {exc}") from exc


def _wait_healthy(flux: FluxControllers, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for name in NAMES:
        url = f"http://{flux.health[name]}/readyz"
        last = "no answer yet"
        while True:
            if not processes.running(flux.pids[name]):
                text = flux.tail(name)
                if "address already in use" in text:
                    raise _PortRace
                raise FluxError(f"start {name}: it exited during startup; log {flux.log(name)}:\n{text}")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200 and (name != "source-controller" or _accepts(flux.storage_addr)):
                        break
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
            except OSError as exc:
                last = str(exc)
            if time.monotonic() > deadline:
                raise FluxError(
                    f"wait until {name} is healthy: {url} not ready after {timeout:.0f}s (last: {last}); "
                    f"log {flux.log(name)}:\n{flux.tail(name)}"
                )
            time.sleep(0.2)
