"""The real Argo CD (v3.6.1) for tests: redis, the repo-server and the application-controller, run out of cluster
against the test control plane, with a git smart-HTTP server on loopback for the repo-server to clone from.

    bin_dir = build_argocd()                        # tests/argocd/build; a no-op when cached
    argocd = start(plane=plane, bin_dir=bin_dir)    # CRDs, argocd-cm/-secret, AppProject, the three processes
    url = argocd.serve(bare_repo)                   # a repoURL the repo-server can clone (git smart HTTP)
    argocd.stop()                                   # all three process groups gone, git server stopped

Everything that cannot start raises `ArgoCDError` naming the step. See docs/argocd-tests.md.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.argocd import install
from tests.argocd.install import ArgoCDError
from tests.controlplane import processes
from tests.controlplane.cp import ControlPlane
from tests.fakes.git_http import GitHTTPServer
from tests.support.buildscripts import run_build_script

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build"
BINARIES = ("argocd", "argocd-redis", "git-verify-wrapper.sh", "gpg-wrapper.sh")
NAMES = ("redis", "repo-server", "application-controller")  # start order; stopped in reverse
HEALTH_TIMEOUT = 120.0
RESYNC_SECONDS = 5  # --app-resync: how often the controller compares with Git unasked (upstream: 120 s)
BUILD_TIMEOUT = 4 * 3600.0  # cold: 29 min measured on 2 shared cores; 73 min in issue 11

__all__ = ["ArgoCD", "ArgoCDError", "build_argocd", "start"]


def build_argocd(*, timeout: float = BUILD_TIMEOUT, progress: Callable[[str], None] | None = None) -> Path:
    """Run tests/argocd/build (a no-op when cached) and return its bin dir; `progress` gets its log lines."""
    retry = f"retry with: {BUILD_SCRIPT}  (see docs/argocd-tests.md)"
    try:
        run = run_build_script(BUILD_SCRIPT, timeout=timeout, progress=progress)
    except OSError as exc:
        raise ArgoCDError(f"Argo CD build step failed to run: {exc}; {retry}") from exc
    if run.code != 0:
        raise ArgoCDError(f"Argo CD build failed: {run.failed_step()}\n{retry}\n--- build log tail ---\n{run.tail()}")
    last = run.last_line()
    bin_dir = Path(last) if last else None
    built = bin_dir is not None and all((bin_dir / n).is_file() for n in BINARIES)
    if bin_dir is None or not built or len(install.crd_files(bin_dir)) != len(install.CRD_NAMES):
        raise ArgoCDError(f"{BUILD_SCRIPT} left no binaries or CRDs (printed {run.out.strip()!r}); {retry}")
    return bin_dir


@dataclass(kw_only=True)
class ArgoCD:
    """redis, the repo-server and the application-controller running against `plane`, and the git server."""

    plane: ControlPlane
    bin_dir: Path
    workdir: Path
    namespace: str  # where the controller reads argocd-cm, argocd-secret, AppProjects and Applications
    git_server: GitHTTPServer
    tools: tuple[Path, ...] = ()  # directories first on the processes' PATH (helm for the repo-server)
    pids: dict[str, int] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)  # redis, repo-server, and each one's metrics/health port
    _stopped: bool = field(default=False, repr=False)

    def serve(self, bare: Path) -> str:
        """A git smart-HTTP URL (loopback, no auth) of the bare repository `bare`, for an Application's repoURL."""
        return self.git_server.publish(bare)

    def log(self, name: str) -> Path:
        """The log file of `name` (redis, repo-server or application-controller)."""
        return self.workdir / f"{name}.log"

    def tail(self, name: str, lines: int = 30) -> str:
        try:
            return "\n".join(self.log(name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def tails(self, lines: int = 15) -> str:
        """The last lines of every log, for a failure message."""
        return "\n".join(f"--- {name} log tail ---\n{self.tail(name, lines)}" for name in NAMES if name in self.pids)

    def alive(self) -> bool:
        return not self._stopped and all(processes.running(pid) for pid in self.pids.values())

    def stop(self) -> None:
        """Stop all three (whole process groups) and the git server; waits until nothing is left."""
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


_STARTED: list[ArgoCD] = []


@atexit.register
def _stop_started() -> None:
    for argocd in _STARTED:
        argocd.stop()


def start(
    *,
    plane: ControlPlane,
    bin_dir: Path,
    namespace: str = "argocd",
    timeout: float = HEALTH_TIMEOUT,
    tools: tuple[Path, ...] = (),
) -> ArgoCD:
    """Install the CRDs and the objects Argo CD reads, start the git server, redis, the repo-server and the
    application-controller against `plane`; return once all three are healthy. `tools`: directories put first on the
    processes' PATH (the repo-server runs `helm` from there, as upstream's image carries its own)."""
    workdir = Path(tempfile.mkdtemp(prefix="writeback-argocd-"))
    (workdir / "git").mkdir()
    argocd = ArgoCD(
        plane=plane,
        bin_dir=bin_dir,
        workdir=workdir,
        namespace=namespace,
        git_server=GitHTTPServer(root=workdir / "git").start(),
        tools=tools,
    )
    _STARTED.append(argocd)
    try:
        install.crds(plane=plane, bin_dir=bin_dir)
        install.settings(plane=plane, namespace=namespace)
        for attempt in range(3):  # a port taken between free_port() and the bind: retry with fresh ports
            try:
                for name in NAMES:
                    _spawn(argocd, name)
                    _wait_healthy(argocd, name, timeout=timeout)
                break
            except _PortRace:
                for pid in argocd.pids.values():
                    processes.kill_group(pid)
                argocd.pids.clear()
                if attempt == 2:
                    raise ArgoCDError("start Argo CD: its ports were taken three times") from None
    except BaseException:
        argocd.stop()
        raise
    return argocd


class _PortRace(Exception):
    pass


def _dirs(argocd: ArgoCD) -> dict[str, str]:
    """Everything the repo-server writes or reads from disk goes under the work dir: clones (TMPDIR), the GnuPG
    home (0700), the keys it imports, the askpass socket, known hosts and TLS certs (upstream: /app/config/...)."""
    paths = {
        "TMPDIR": "tmp",
        "ARGOCD_GNUPGHOME": "gnupg",
        "ARGOCD_GPG_DATA_PATH": "gpg-source",
        "ARGOCD_SSH_DATA_PATH": "ssh",
        "ARGOCD_TLS_DATA_PATH": "tls",
    }
    env = {}
    for var, rel in paths.items():
        path = argocd.workdir / rel
        path.mkdir(mode=0o700, exist_ok=True)
        env[var] = str(path)
    env["ARGOCD_ASK_PASS_SOCK"] = str(argocd.workdir / "askpass.sock")
    return env


def _command(argocd: ArgoCD, name: str) -> tuple[list[str], dict[str, str]]:
    """The command line and extra environment of `name`, on fresh loopback ports."""
    binary, ports = str(argocd.bin_dir / "argocd"), argocd.ports
    if name == "redis":
        ports["redis"] = processes.free_port()
        return [str(argocd.bin_dir / "argocd-redis"), f"--addr=127.0.0.1:{ports['redis']}"], {}
    common = [f"--redis=127.0.0.1:{ports['redis']}", "--logformat=text", "--loglevel=info"]
    ports[f"{name}-metrics"] = processes.free_port()
    path = os.pathsep.join([*(str(t) for t in argocd.tools), str(argocd.bin_dir), os.environ.get("PATH", "")])
    env = {**_dirs(argocd), "PATH": path}
    if name == "repo-server":
        ports["repo-server"] = processes.free_port()
        cmd = [
            binary,
            "--address=127.0.0.1",
            f"--port={ports['repo-server']}",
            "--metrics-address=127.0.0.1",
            f"--metrics-port={ports['repo-server-metrics']}",
            "--disable-tls",
            "--client-ca-path=",  # else: "--client-ca-path cannot be used when --disable-tls is enabled"
            *common,
        ]
        return cmd, {**env, "ARGOCD_BINARY_NAME": "argocd-repo-server"}
    cmd = [
        binary,
        f"--kubeconfig={argocd.plane.kubeconfig}",
        f"--namespace={argocd.namespace}",
        f"--repo-server=127.0.0.1:{ports['repo-server']}",
        "--repo-server-plaintext",
        f"--metrics-port={ports['application-controller-metrics']}",  # Argo CD binds it on 0.0.0.0
        f"--app-resync={RESYNC_SECONDS}",
        "--app-resync-jitter=1",
        *common,
    ]
    return cmd, {
        **env,
        "ARGOCD_BINARY_NAME": "argocd-application-controller",
        "ARGOCD_FAKE_IN_CLUSTER": "true",  # https://kubernetes.default.svc is the cluster of $KUBECONFIG
        "KUBECONFIG": argocd.plane.kubeconfig,
    }


def _spawn(argocd: ArgoCD, name: str) -> None:
    cmd, env = _command(argocd, name)
    try:
        argocd.pids[name] = processes.spawn(cmd, log=argocd.log(name), detach=False, env=env)
    except OSError as exc:
        raise ArgoCDError(f"start {name}: {exc}") from exc


def _probe(argocd: ArgoCD, name: str) -> str | None:
    """None when `name` answers as healthy, else what it answered."""
    if name == "redis":
        try:
            with socket.create_connection(("127.0.0.1", argocd.ports["redis"]), timeout=2) as sock:
                sock.sendall(b"*1\r\n$4\r\nPING\r\n")
                answer = sock.recv(64)
        except OSError as exc:
            return str(exc)
        return None if answer == b"+PONG\r\n" else f"PING answered {answer!r}"
    # the repo-server's full check calls its own gRPC health service; the controller's is its readiness check
    query = "?full=true" if name == "repo-server" else ""
    url = f"http://127.0.0.1:{argocd.ports[f'{name}-metrics']}/healthz{query}"
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return None if resp.status == 200 else f"HTTP {resp.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code} from {url}"
    except OSError as exc:
        return f"{url}: {exc}"


def _wait_healthy(argocd: ArgoCD, name: str, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if not processes.running(argocd.pids[name]):
            text = argocd.tail(name)
            if "address already in use" in text:
                raise _PortRace
            raise ArgoCDError(f"start {name}: it exited during startup; log {argocd.log(name)}:\n{text}")
        last = _probe(argocd, name)
        if last is None:
            return
        if time.monotonic() > deadline:
            raise ArgoCDError(
                f"wait until {name} is healthy: not healthy after {timeout:.0f}s (last: {last}); "
                f"log {argocd.log(name)}:\n{argocd.tail(name)}"
            )
        time.sleep(0.2)
