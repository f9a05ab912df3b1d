"""A real Kubernetes control plane for tests: etcd + kube-apiserver, started the way envtest does.

    plane = start(workdir=Path("/tmp/x"))      # builds the binaries on first use, waits on /readyz
    plane.kubectl("get", "ns")
    plane.stop()                               # kills both process groups, no process left behind

`start(..., detach=True)` leaves the processes running after this Python process exits (tests/controlplane/up);
`load(workdir)` finds them again from the state file (tests/controlplane/down).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.controlplane import processes
from tests.controlplane.certs import Authority, KeyPair, service_account_keys
from tests.controlplane.processes import ControlPlaneError
from tests.support.buildscripts import run_build_script

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build"
CONTEXT = "writeback-test"
STATE_FILE = "state.json"


class KubectlError(subprocess.CalledProcessError):
    """kubectl exited non-zero; str() includes its stderr."""

    def __str__(self) -> str:
        return f"{super().__str__()}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"


def build_binaries(*, timeout: float = 3600, progress: Callable[[str], None] | None = None) -> Path:
    """Run tests/controlplane/build (a no-op when cached) and return the bin dir; `progress` gets its log lines."""
    retry = f"retry with: {BUILD_SCRIPT}  (see docs/controlplane.md)"
    try:
        run = run_build_script(BUILD_SCRIPT, timeout=timeout, progress=progress)
    except OSError as exc:
        raise ControlPlaneError(f"control-plane build step failed to run: {exc}; {retry}") from exc
    if run.code != 0:
        step = run.failed_step(also=("not on PATH",))
        raise ControlPlaneError(f"control-plane build failed: {step}\n{retry}\n--- build log tail ---\n{run.tail()}")
    last = run.last_line()
    if last is None:
        raise ControlPlaneError(f"{BUILD_SCRIPT} printed no bin directory; {retry}")
    bin_dir = Path(last)
    missing = [n for n in ("etcd", "kube-apiserver", "kubectl", "kustomize") if not (bin_dir / n).is_file()]
    if missing:
        raise ControlPlaneError(f"control-plane build left no {', '.join(missing)} in {bin_dir}; {retry}")
    return bin_dir


@dataclass(kw_only=True)
class ControlPlane:
    """A running etcd + kube-apiserver pair and how to reach it."""

    workdir: Path
    bin_dir: Path
    server: str
    kubeconfig: str
    pids: dict[str, int]
    owns_workdir: bool = False
    etcd_url: str = ""
    apiserver_argv: tuple[str, ...] = ()
    detach: bool = False
    _client: Any = field(default=None, repr=False)

    @property
    def api_client(self) -> Any:
        """A kubernetes.client.ApiClient for this control plane (created on first use)."""
        if self._client is None:
            from kubernetes import config

            self._client = config.new_client_from_config(config_file=self.kubeconfig, context=CONTEXT)
        return self._client

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl against this control plane."""
        full_env = {**os.environ, **(env or {}), "KUBECONFIG": self.kubeconfig}
        cmd = [str(self.bin_dir / "kubectl"), "--kubeconfig", self.kubeconfig, *args]
        done = subprocess.run(
            cmd, input=input, env=full_env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and done.returncode != 0:
            raise KubectlError(done.returncode, cmd, done.stdout, done.stderr)
        return done

    def alive(self) -> bool:
        return all(processes.running(pid) for pid in self.pids.values())

    def stop_apiserver(self) -> None:
        """Stop the real kube-apiserver process (its whole group); etcd keeps its data (the fault matrix)."""
        processes.kill_group(self.pids["kube-apiserver"])

    def start_apiserver(self, *, timeout: float = 120) -> None:
        """Start the kube-apiserver again, same port, PKI and etcd; return once /readyz answers ok."""
        log = self.workdir / "kube-apiserver.log"
        self.pids["kube-apiserver"] = processes.spawn(list(self.apiserver_argv), log=log, detach=self.detach)
        ctx = _client_ssl(self.workdir / "pki")
        _wait_ready(server=self.server, ctx=ctx, pid=self.pids["kube-apiserver"], log=log, timeout=timeout)

    def etcd_compact(self) -> int:
        """Compact etcd at its current revision (every older resourceVersion and continue token expires)."""

        def call(path: str, body: dict[str, Any]) -> dict[str, Any]:
            req = urllib.request.Request(f"{self.etcd_url}{path}", data=json.dumps(body).encode(), method="POST")
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read())  # type: ignore[no-any-return]

        revision = int(call("/v3/kv/range", {"key": "AA==", "limit": 1})["header"]["revision"])
        call("/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision

    def stop(self) -> None:
        """Stop the apiserver then etcd (each whole process group) and wait until they are gone."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None
        for name in ("kube-apiserver", "etcd"):
            pid = self.pids.get(name)
            if pid is not None:
                processes.kill_group(pid)
        _RUNNING.discard(id(self))
        if self.owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


_RUNNING: set[int] = set()
_ATTACHED: list[ControlPlane] = []


@atexit.register
def _stop_attached() -> None:
    for plane in _ATTACHED:
        if id(plane) in _RUNNING:
            plane.stop()


def start(
    *,
    workdir: Path | None = None,
    bin_dir: Path | None = None,
    timeout: float | None = None,
    detach: bool = False,
    service_account_admission: bool = False,
    apiserver_flags: Sequence[str] = (),
) -> ControlPlane:
    """Build (if needed) and start etcd + kube-apiserver; return once /readyz answers ok.

    ``service_account_admission``: run the ServiceAccount admission plugin, as real clusters do (off by default:
    without a controller-manager nobody creates the ``default`` ServiceAccount a Pod then needs).
    ``apiserver_flags``: more kube-apiserver flags (the fault matrix turns the watch cache off, so that a list
    page and a watch read etcd and an etcd compaction expires their continue token or resourceVersion).

    Without `workdir` a temp dir is used and removed by stop(). Unless `detach`, the processes die with this
    process (stop() at exit, and the kernel's parent-death signal if Python is killed).
    """
    timeout = timeout if timeout is not None else float(os.environ.get("WRITEBACK_CP_TIMEOUT", "120"))
    bin_dir = bin_dir or build_binaries()
    owns = workdir is None
    if owns:
        _remove_stale_tempdirs()
    workdir = Path(tempfile.mkdtemp(prefix=_TEMP_PREFIX)) if workdir is None else workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    pids: dict[str, int] = {}
    try:
        pki = _write_pki(workdir / "pki")
        pids["etcd"], etcd_url = _start_etcd(bin_dir=bin_dir, workdir=workdir, detach=detach)
        port = processes.free_port()
        server = f"https://127.0.0.1:{port}"
        argv = (
            str(bin_dir / "kube-apiserver"),
            *_apiserver_args(pki=pki, port=port, etcd_url=etcd_url, sa_admission=service_account_admission),
            *apiserver_flags,
        )
        pids["kube-apiserver"] = processes.spawn(list(argv), log=workdir / "kube-apiserver.log", detach=detach)
        ctx = _client_ssl(pki)
        _wait_ready(
            server=server, ctx=ctx, pid=pids["kube-apiserver"], log=workdir / "kube-apiserver.log", timeout=timeout
        )
        kubeconfig = workdir / "kubeconfig"
        kubeconfig.write_text(_kubeconfig(server=server, pki=pki))
        kubeconfig.chmod(0o600)
    except BaseException:
        for pid in reversed(pids.values()):
            processes.kill_group(pid)
        if owns:
            shutil.rmtree(workdir, ignore_errors=True)
        raise
    plane = ControlPlane(
        workdir=workdir, bin_dir=bin_dir, server=server, kubeconfig=str(kubeconfig), pids=pids, owns_workdir=owns,
        etcd_url=etcd_url, apiserver_argv=argv, detach=detach,
    )  # fmt: skip
    state = {
        "server": server,
        "kubeconfig": str(kubeconfig),
        "bin_dir": str(bin_dir),
        "pids": pids,
        "owner_pid": None if detach else os.getpid(),
    }
    (workdir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")
    _RUNNING.add(id(plane))
    if not detach:
        _ATTACHED.append(plane)
    return plane


_TEMP_PREFIX = "writeback-cp-"


def _remove_stale_tempdirs() -> None:
    """Remove temp work dirs (etcd data is ~120 MB) of sessions that were killed before they could clean up."""
    for path in Path(tempfile.gettempdir()).glob(f"{_TEMP_PREFIX}*/{STATE_FILE}"):
        try:
            state = json.loads(path.read_text())
            owner = state.get("owner_pid")
            if (
                owner is None
                or processes.running(int(owner))
                or any(processes.running(int(p)) for p in state["pids"].values())
            ):
                continue
        except (OSError, ValueError, KeyError, TypeError):
            continue
        shutil.rmtree(path.parent, ignore_errors=True)


def load(workdir: Path) -> ControlPlane:
    """The control plane that `start(workdir=..., detach=True)` left running in `workdir`."""
    path = workdir / STATE_FILE
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ControlPlaneError(f"no control-plane state in {path}: {exc}") from exc
    return ControlPlane(
        workdir=workdir,
        bin_dir=Path(state["bin_dir"]),
        server=state["server"],
        kubeconfig=state["kubeconfig"],
        pids={k: int(v) for k, v in state["pids"].items()},
    )


# --- etcd and apiserver ---------------------------------------------------------------------------------


def _start_etcd(*, bin_dir: Path, workdir: Path, detach: bool) -> tuple[int, str]:
    log = workdir / "etcd.log"
    for _attempt in range(3):
        client, peer = processes.free_port(), processes.free_port()
        client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
        data = workdir / "etcd-data"
        shutil.rmtree(data, ignore_errors=True)
        pid = processes.spawn(
            [
                str(bin_dir / "etcd"),
                "--name=writeback-test",
                f"--data-dir={data}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=writeback-test={peer_url}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
            log=log,
            detach=detach,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and processes.running(pid):
            try:
                with urllib.request.urlopen(f"{client_url}/health", timeout=2) as resp:
                    if json.loads(resp.read()).get("health") == "true":
                        return pid, client_url
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        processes.kill_group(pid)  # most likely a port race: try fresh ports
    raise ControlPlaneError(f"etcd did not become healthy (3 attempts); log {log}:\n{_tail(log)}")


def _apiserver_args(*, pki: Path, port: int, etcd_url: str, sa_admission: bool = False) -> list[str]:
    args = [
        "--advertise-address=127.0.0.1",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={pki}",
        f"--tls-cert-file={pki / 'serving.crt'}",
        f"--tls-private-key-file={pki / 'serving.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--etcd-servers={etcd_url}",
        "--authorization-mode=RBAC",
        "--disable-admission-plugins=ServiceAccount",
        "--service-cluster-ip-range=10.0.0.0/24",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-account-issuer=https://127.0.0.1:{port}",
        "--allow-privileged=true",
        "--v=1",
    ]
    return [a for a in args if not (sa_admission and a == "--disable-admission-plugins=ServiceAccount")]


# --- readiness, PKI, kubeconfig ---------------------------------------------------------------------------


def _client_ssl(pki: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "client.crt"), str(pki / "client.key"))
    return ctx


def _wait_ready(*, server: str, ctx: ssl.SSLContext, pid: int, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        if not processes.running(pid):
            raise ControlPlaneError(f"kube-apiserver exited during startup; log {log}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{server}/readyz", context=ctx, timeout=5) as resp:
                if resp.status == 200:
                    return
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}: {exc.read().decode(errors='replace')[-400:]}"
        except OSError as exc:
            last = str(exc)
        time.sleep(0.2)
    raise ControlPlaneError(
        f"kube-apiserver at {server} not ready after {timeout:.0f}s (last /readyz: {last}); "
        f"raise WRITEBACK_CP_TIMEOUT if the machine is slow. Log {log}:\n{_tail(log)}"
    )


def _tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _write_pki(pki: Path) -> Path:
    pki.mkdir(parents=True, exist_ok=True)
    ca = Authority.create(common_name="writeback-test-ca")
    serving = ca.issue(
        common_name="kube-apiserver",
        server_names=("127.0.0.1", "localhost", "10.0.0.1", "kubernetes", "kubernetes.default.svc"),
    )
    client = ca.issue(common_name="writeback-test-admin", organizations=("system:masters",), client=True)
    files: dict[str, bytes] = {"ca.crt": ca.pair.cert_pem, "ca.key": ca.pair.key_pem}
    for name, pair in (("serving", serving), ("client", client), ("sa", service_account_keys())):
        files[f"{name}.{'pub' if name == 'sa' else 'crt'}"] = pair.cert_pem
        files[f"{name}.key"] = pair.key_pem
    for name, data in files.items():
        (pki / name).write_bytes(data)
        (pki / name).chmod(0o600)
    return pki


def _kubeconfig(*, server: str, pki: Path) -> str:
    import base64

    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")}}],
        "users": [
            {
                "name": CONTEXT,
                "user": {"client-certificate-data": b64("client.crt"), "client-key-data": b64("client.key")},
            }
        ],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT}}],
        "current-context": CONTEXT,
    }
    return json.dumps(config, indent=2) + "\n"  # JSON is valid YAML; kubectl and the client read it


__all__ = ["ControlPlane", "ControlPlaneError", "KeyPair", "KubectlError", "build_binaries", "load", "start"]
