"""The pieces of an end-to-end scenario: the shop's GitOps repo synced by the real Flux controllers, the fake
GitHub on its bare remote, a `writeback run --config` service process, the reviewer, and a recorder of every
version of a live object (a watch of our own, so "never reverted" and "reverted after N s" are facts).

    shop = Shop.create(...)            # the `shop` fixture: repo pushed, Flux applied it, fake GitHub up
    service = shop.serve()             # writeback run --config, watching the shop's namespace
    service.wait_cycles(1)             # one more successful cycle than now
    pr = shop.only_pr(); shop.merge(pr) # the reviewer merges by pushing the PR's head to main
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from tests.fakes.github_fake import PROJECT, TOKEN, GitHubFake
from tests.flux.sync import FluxSync
from tests.support.gitrepos import GitRemote
from tests.support.polling import wait_until
from tests.support.services import free_port, metric, start_writeback, stop_writeback

TOKEN_ENV = "WB_E2E_TOKEN"  # where the service finds the fake's TOKEN: it must never show up in the log
TARGET = "shop"
APP_PATH = "apps/checkout"  # in the repo: the Flux Kustomization's path and the writeback target's path
VERSIONS = {"ConfigMap": "v1", "Deployment": "apps/v1", "HorizontalPodAutoscaler": "autoscaling/v2"}
INTERVAL = 5.0  # seconds: the GitRepository's and the Kustomization's reconcile interval
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hotfix"
HOTFIX_CA = (EXAMPLE / "hotfix-ca.pem").read_text()


def example_manifest(name: str, namespace: str) -> str:
    """A file of the offline demo's GitOps repo (examples/hotfix/gitops/apps/checkout), in ``namespace``."""
    text = (EXAMPLE / "gitops" / APP_PATH / name).read_text()
    return text.replace("namespace: shop", f"namespace: {namespace}")


# ------------------------------------------------------------------------------------------------ the 3 AM edit

EDITOR = """\
import sys
path = sys.argv[1]
text = open(path).read()
end = "-----END CERTIFICATE-----\\n"
at = text.index(end) + len(end)
new = "".join("    " + line + "\\n" for line in open({ca!r}).read().splitlines())
open(path, "w").write(text[:at] + new + text[at:])  # the new CA right after the old one, as a person would
"""


def kubectl_edit_appending_the_ca(shop: SyncedShop[Any], tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text(HOTFIX_CA)
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR.format(ca=str(tmp_path / "ca.pem")))
    env = dict(os.environ, KUBE_EDITOR=f"{shlex.quote(sys.executable)} {shlex.quote(str(editor))}")
    shop.controlplane.kubectl("edit", "configmap/checkout-ca", "-n", shop.namespace, env=env)


def has_hotfix(obj: dict[str, object]) -> bool:
    data = obj.get("data") or {}
    assert isinstance(data, dict)
    return HOTFIX_CA.strip() in str(data.get("ca.crt", ""))


# ------------------------------------------------------------------------------------------------ live objects


@dataclass
class LiveRecorder:
    """Every version of one object as a watch of our own sees it, with the time it arrived (``time.time()``, to
    compare with file times)."""

    api_client: Any
    kind: str  # "ConfigMap" or "Deployment"
    namespace: str
    name: str
    seen: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> LiveRecorder:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True, name=f"record {self.name}")
        self._thread.start()
        if not ready.wait(30):
            raise AssertionError(f"the recorder of {self.kind} {self.namespace}/{self.name} did not start")
        return self

    def _list_call(self) -> Callable[..., Any]:
        from kubernetes import client

        if self.kind == "ConfigMap":
            return client.CoreV1Api(self.api_client).list_namespaced_config_map
        return client.AppsV1Api(self.api_client).list_namespaced_deployment

    def _run(self, ready: threading.Event) -> None:
        from kubernetes import watch

        call = self._list_call()
        selector = f"metadata.name={self.name}"
        listed = call(namespace=self.namespace, field_selector=selector, _preload_content=False)
        body = json.loads(listed.data)
        with self._lock:
            self.seen.extend((time.time(), item) for item in body["items"])
        version = body["metadata"]["resourceVersion"]
        ready.set()
        while not self._stop.is_set():
            stream = watch.Watch()
            for event in stream.stream(call, namespace=self.namespace, field_selector=selector,
                                       resource_version=version, timeout_seconds=2):  # fmt: skip
                obj = event["raw_object"]
                version = obj["metadata"]["resourceVersion"]
                with self._lock:
                    self.seen.append((time.time(), obj))
                if self._stop.is_set():
                    stream.stop()

    def versions(self) -> list[tuple[float, dict[str, Any]]]:
        with self._lock:
            return list(self.seen)

    def latest(self) -> dict[str, Any]:
        with self._lock:
            return self.seen[-1][1]

    def first_since(self, since: float, check: Callable[[dict[str, Any]], bool]) -> float | None:
        """The arrival time of the first version seen after ``since`` for which ``check`` holds."""
        return next((t for t, obj in self.versions() if t >= since and check(obj)), None)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


# ------------------------------------------------------------------------------------------------ the service


@dataclass
class Service:
    """A running `writeback run --config` process and its metrics endpoint."""

    proc: Any
    log: Path
    port: int
    state_dir: Path

    def scrape(self) -> str:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as resp:
                return str(resp.read().decode())
        except (OSError, urllib.error.URLError):
            return ""

    def metric(self, name: str, **labels: str) -> float:
        return metric(self.scrape(), name, **labels)

    def wait(self, what: str, predicate: Callable[[], object], *, timeout: float = 60) -> None:
        """``wait_until`` (tests.support.polling) that ends when the service exits, with its log."""
        wait_until(what, predicate, timeout=timeout, process=self.proc, stderr=self.log)

    def cycles(self) -> float:
        return self.metric("writeback_cycles_total", target=TARGET, result="ok")

    def wait_cycles(self, n: int = 1, *, timeout: float = 60) -> None:
        """Until ``n`` more cycles of the target have succeeded than now (a cycle that started later counts)."""
        goal = self.cycles() + n
        self.wait(f"{n} more successful cycle(s)", lambda: self.cycles() >= goal, timeout=timeout)

    def captures(self) -> list[Path]:
        root = self.state_dir / "hotfixes"
        return sorted(root.glob("*.json")) if root.is_dir() else []

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.startswith("{")]

    def stop(self) -> str:
        """SIGTERM; the whole log. Fails unless it exits 0 and the token is nowhere in its log."""
        code = stop_writeback(self.proc, timeout=40)
        output = self.log.read_text()
        assert code == 0, output[-4000:]
        assert TOKEN not in output
        return output


# ------------------------------------------------------------------------------------------------ the shop


class Sync(Protocol):
    """What a shop needs of the controller that applies its Git (Flux's ``FluxSync``, Argo CD's ``ArgoSync``)."""

    @property
    def name(self) -> str: ...

    def push(self, files: Mapping[str, str | None], message: str) -> str: ...

    def wait_applied(self, sha: str, *, timeout: float = ...) -> object: ...


SyncT = TypeVar("SyncT", bound=Sync)


@dataclass
class SyncedShop(Generic[SyncT]):
    """The shop's GitOps repo (a bare remote and a work clone), the sync that applies it, and the fake GitHub on
    it. ``Shop``: Flux syncs it; tests/argocd/scenarios.ArgoShop: an Argo CD Application does."""

    controlplane: Any
    namespace: str
    remote: GitRemote  # the git_remote fixture's
    sync: SyncT
    forge: GitHubFake
    workdir: Path
    services: list[Service] = field(default_factory=list)

    @property
    def kubeconfig(self) -> str:
        return str(self.controlplane.kubeconfig)

    def push(self, files: Mapping[str, str | None], message: str) -> str:
        """Commit ``files`` under apps/checkout in the work clone and push them to main; the sha."""
        return self.sync.push({f"{APP_PATH}/{k}": v for k, v in files.items()}, message)

    def controller(self) -> dict[str, str]:
        """The target's controller object: the Flux Kustomization (``ArgoShop``: the Argo CD Application)."""
        return {"flux_kustomization": f"{self.namespace}/{self.sync.name}"}

    def selector(self, kind: str) -> dict[str, Any]:
        """What the target watches of ``kind``: the shop's namespace, what Flux labels as its own."""
        return {"apiVersion": VERSIONS[kind], "kind": kind, "namespaces": [self.namespace],
                "labelSelector": f"kustomize.toolkit.fluxcd.io/name={self.sync.name}"}  # fmt: skip

    def config(self, *, interval: float = 3, debounce: float = 1, kinds: tuple[str, ...] = ("ConfigMap", "Deployment"),
               **extra: Any) -> dict[str, Any]:  # fmt: skip
        """The service's configuration: one target, the shop, watching ``kinds``."""
        target = {
            "name": TARGET, "cluster": "test", "repo_url": str(self.remote.bare), "path": APP_PATH,
            "namespace": self.namespace, **self.controller(), "selectors": [self.selector(k) for k in kinds],
            "forge": {"kind": "github", "url": self.forge.url, "project": PROJECT, "token": {"env": TOKEN_ENV},
                      "max_retries": 0, "backoff_seconds": 0, "max_wait_seconds": 1, "throttle": False},
            "schedule": {"interval_seconds": interval, "jitter_seconds": 0, "retry_initial_seconds": 1,
                         "retry_max_seconds": 2},
        }  # fmt: skip
        return {
            "clusters": [{"name": "test", "kubeconfig": self.kubeconfig, "context": "writeback-test"}],
            "targets": [target],
            "metrics": {"address": f"127.0.0.1:{free_port()}"},
            "watch": {"debounce_seconds": debounce},
            "state_dir": str(self.workdir / "state"),
            "shutdown_grace_seconds": 20,
            **extra,
        }

    def config_file(self, config: Mapping[str, Any], name: str = "writeback.yaml") -> Path:
        path = self.workdir / name
        path.write_text(json.dumps(config))  # JSON is YAML
        return path

    def serve(self, config: Mapping[str, Any] | None = None) -> Service:
        """Start the service (after its first successful cycle: its informers are synced, the baseline seen)."""
        config = dict(config or self.config())
        proc, log = start_writeback(config, workdir=self.workdir, env={TOKEN_ENV: TOKEN})
        port = int(str(config["metrics"]["address"]).rsplit(":", 1)[1])
        service = Service(proc=proc, log=log, port=port, state_dir=Path(config["state_dir"]))
        self.services.append(service)
        service.wait("the first successful cycle", lambda: service.cycles() >= 1, timeout=90)
        return service

    # -------------------------------------------------------------------------------------- the reviewer

    def only_pr(self) -> dict[str, Any]:
        assert len(self.forge.prs) == 1, f"expected one PR, got {[p['title'] for p in self.forge.prs.values()]}"
        return next(iter(self.forge.prs.values()))

    def pr_diff(self, pr: Mapping[str, Any]) -> str:
        """The PR's changes as `git diff main...head` (the reviewer's "Files changed" tab)."""
        self.fetch()
        return self.remote.git("diff", f"origin/{pr['base']}...origin/{pr['head']}")

    def fetch(self) -> None:
        self.remote.git("fetch", "-q", "--prune", "origin")

    def merge(self, pr: Mapping[str, Any]) -> str:
        """What the merge button does with fast-forward: push the PR branch's commit to its base; the sha.
        The work clone follows, so later pushes build on the merge."""
        self.fetch()
        head = self.remote.git("rev-parse", f"origin/{pr['head']}").strip()
        self.remote.git("push", "-q", "origin", f"{head}:refs/heads/{pr['base']}")
        self.remote.git("reset", "-q", "--hard", head)
        return head

    def decisions(self, config: Mapping[str, Any], kind: str, name: str) -> dict[str, tuple[str, str]]:
        """What writeback decides about each drifted field of ``kind`` ``name`` right now (``writeback diff
        --config``, the service's engine and settings, on the work clone): path -> (decision, reason)."""
        done = subprocess.run(
            [sys.executable, "-m", "writeback.cli", "diff", "--config", str(self.config_file(config, "diff.yaml")),
             "--repo", str(self.remote.work), "--output", "json"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        drifts = json.loads(done.stdout)["drifts"]
        return {d["path"]: (d["decision"], d["reason"]) for d in drifts
                if d["resource"]["kind"] == kind and d["resource"]["name"] == name}  # fmt: skip

    # -------------------------------------------------------------------------------------- live objects

    def get(self, kind: str, name: str) -> dict[str, Any]:
        out = self.controlplane.kubectl("get", kind, name, "-n", self.namespace, "-o", "json", "--show-managed-fields")
        got: dict[str, Any] = json.loads(out.stdout)
        return got

    def record(self, kind: str, name: str) -> LiveRecorder:
        return LiveRecorder(api_client=self.controlplane.api_client, kind=kind, namespace=self.namespace,
                            name=name).start()  # fmt: skip


@dataclass
class Shop(SyncedShop[FluxSync]):
    """The shop whose `apps/checkout` Flux syncs (a GitRepository and a Kustomization)."""


ShopMaker = Callable[..., Shop]  # the `make_shop` fixture
FILES = ("configmap.yaml", "deployment.yaml")  # the demo's files a shop has unless told otherwise


def managers(obj: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(manager, operation, subresource) of each managedFields entry."""
    return [(e["manager"], e["operation"], e.get("subresource", "")) for e in obj["metadata"].get("managedFields", ())]


def container(deployment: Mapping[str, Any], name: str = "app") -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == name)
    return found
