"""The scale benchmark's world: N objects in a real control plane and the matching GitOps repo.

Objects come in apps of three (a Deployment, its ConfigMap and its Service) spread over a few namespaces. The
Services are headless (``clusterIP: None``): the test control plane's service range is a /24. The
Git repo holds one file per app (``apps/<namespace>/<app>.yaml``, three documents). The cluster gets the very
same manifests, server-side applied as ``argocd-controller`` in parallel over HTTP (one PATCH per object, a
thread pool, no kubectl per object). Then, as in a real cluster:

- 1% of the objects are changed by a person with the real kubectl (``kubectl set env``/``set image`` on
  Deployments, ``kubectl edit`` on ConfigMaps and Services): drift to write back;
- 5% of the objects' worth of Deployments are scaled through the scale subresource by
  ``kube-controller-manager`` (the HPA): drift to ignore.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

APPLY_MANAGER = "argocd-controller"
SCALE_MANAGER = "kube-controller-manager"
KINDS = (("apps/v1", "Deployment", "deployments"), ("v1", "ConfigMap", "configmaps"), ("v1", "Service", "services"))
WORKERS = 8

# A person's edit in vi: kubectl edit hands this script the file to change (ConfigMaps and Services).
EDITOR_SCRIPT = """\
import sys
p = sys.argv[-1]
text = open(p).read()
for old, new in (("level: info", "level: debug"), ("targetPort: http", "targetPort: 8081")):
    if old in text:
        open(p, "w").write(text.replace(old, new, 1))
        break
else:
    raise SystemExit("nothing to edit in " + p)
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class App:
    index: int
    namespace: str

    @property
    def name(self) -> str:
        return f"app-{self.index}"

    @property
    def file(self) -> str:
        return f"apps/{self.namespace}/{self.name}.yaml"


@dataclass(frozen=True, slots=True, kw_only=True)
class World:
    """What was loaded: the apps, which objects a person changed and which Deployments were scaled."""

    apps: tuple[App, ...]
    namespaces: tuple[str, ...]
    changed: tuple[tuple[str, App], ...]  # (kind, app)
    scaled: tuple[App, ...]

    @property
    def objects(self) -> int:
        return 3 * len(self.apps)


def plan_world(objects: int, *, namespace_prefix: str = "scale") -> World:
    """Which apps, namespaces and edits make ``objects`` objects (rounded up to a multiple of 3)."""
    count = max(1, -(-objects // 3))
    spaces = tuple(f"{namespace_prefix}-{i}" for i in range(min(10, count)))
    apps = tuple(App(index=i, namespace=spaces[i % len(spaces)]) for i in range(count))
    kinds = ("Deployment", "ConfigMap", "Service")
    every = 100  # 1% of the objects: object k = 3 * app + kind
    changed = tuple((kinds[k % 3], apps[k // 3]) for k in range(every // 2, 3 * count, every))
    if not changed:  # a small world (the smoke test): one change of each kind, in three apps
        changed = tuple((kinds[k % 3], apps[k // 3]) for k in (0, 4, 8) if k // 3 < count)
    changed_apps = {a.index for _, a in changed}
    want = max(1, round(0.05 * 3 * count))  # 5% of the objects, all of them Deployments
    scaled = tuple(a for a in apps if a.index not in changed_apps)[: min(want, count - len(changed_apps))]
    return World(apps=apps, namespaces=spaces, changed=changed, scaled=scaled)


def manifest(app: App) -> str:
    """The app's three manifests as they are in Git (one file, three documents)."""
    i, name, ns = app.index, app.name, app.namespace
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
  labels:
    app.kubernetes.io/name: {name}
    app.kubernetes.io/part-of: scale
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: {name}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {name}
    spec:
      containers:
        - name: app
          image: registry.example.com/team/{name}:1.{i % 50}.0
          ports:
            - name: http
              containerPort: 8080
          env:
            - name: LOG_LEVEL
              value: info
            - name: CONFIG_PATH
              value: /etc/app/config.yaml
          resources:
            requests:
              cpu: 100m
              memory: 128Mi
            limits:
              memory: 256Mi
          volumeMounts:
            - name: config
              mountPath: /etc/app
      volumes:
        - name: config
          configMap:
            name: {name}-config
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}-config
  namespace: {ns}
  labels:
    app.kubernetes.io/name: {name}
data:
  config.yaml: |
    server:
      port: 8080
    log:
      level: info
  FEATURE_FLAGS: "search,checkout"
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {ns}
  labels:
    app.kubernetes.io/name: {name}
spec:
  clusterIP: None
  selector:
    app.kubernetes.io/name: {name}
  ports:
    - name: http
      port: 80
      targetPort: http
"""


def write_repo(world: World, repo: Path) -> None:
    """The GitOps repo: one file per app under apps/, committed on main."""
    for app in world.apps:
        p = repo / app.file
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(manifest(app), encoding="utf-8")
    git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "manifests"], check=True)


def api_client(kubeconfig: str) -> Any:
    """A kubernetes ApiClient with a connection pool large enough for the loader's threads."""
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)  # type: ignore[no-untyped-call]
    cfg.connection_pool_maxsize = WORKERS * 2
    return client.ApiClient(configuration=cfg)


def _call(
    api: Any, *, method: str, path: str, query: list[tuple[str, str]], body: str | dict[str, Any], content_type: str
) -> None:
    """One request; ``body`` as text for apply patches, a dict for JSON ones (the client encodes it)."""
    request = api.param_serialize(
        method=method,
        resource_path=path,
        query_params=query,
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(*request, _request_timeout=(10, 120))
    data = response.read()
    if not 200 <= response.status <= 299:
        raise RuntimeError(f"{method} {path}: HTTP {response.status}: {data[:300]!r}")


def _object_path(body: dict[str, Any]) -> str:
    plural = {kind: p for _, kind, p in KINDS}[body["kind"]]
    prefix = "/api/v1" if body["apiVersion"] == "v1" else f"/apis/{body['apiVersion']}"
    meta = body["metadata"]
    return f"{prefix}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"


def _parallel(fn: Callable[[Any], None], items: Sequence[Any]) -> None:
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for _ in pool.map(fn, items):
            pass


def bodies(world: World) -> Iterator[dict[str, Any]]:
    for app in world.apps:
        yield from yaml.load_all(manifest(app), Loader=yaml.CSafeLoader)


def load_cluster(world: World, *, kubeconfig: str, kubectl: Path, workdir: Path) -> None:
    """Apply every object server-side as argocd-controller, then the people's edits and the HPA's scaling."""
    api = api_client(kubeconfig)
    try:
        for ns in world.namespaces:
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            _call(api, method="PATCH", path=f"/api/v1/namespaces/{ns}",
                  query=[("fieldManager", APPLY_MANAGER), ("force", "true")], body=json.dumps(body),
                  content_type="application/apply-patch+yaml")  # fmt: skip
        query = [("fieldManager", APPLY_MANAGER), ("force", "true")]

        def apply(body: dict[str, Any]) -> None:
            _call(api, method="PATCH", path=_object_path(body), query=query, body=json.dumps(body),
                  content_type="application/apply-patch+yaml")  # fmt: skip

        _parallel(apply, list(bodies(world)))

        def scale(app: App) -> None:
            path = f"/apis/apps/v1/namespaces/{app.namespace}/deployments/{app.name}/scale"
            _call(api, method="PATCH", path=path, query=[("fieldManager", SCALE_MANAGER)],
                  body={"spec": {"replicas": 5}}, content_type="application/merge-patch+json")  # fmt: skip

        _parallel(scale, list(world.scaled))
    finally:
        api.close()
    editor = workdir / "editor.py"
    editor.write_text(EDITOR_SCRIPT)
    env = {**os.environ, "KUBECONFIG": kubeconfig, "KUBE_EDITOR": f"{sys.executable} {editor}"}

    def person(change: tuple[str, App]) -> None:
        kind, app = change
        base = [str(kubectl), "--kubeconfig", kubeconfig, "-n", app.namespace]
        if kind == "Deployment":
            if app.index % 2:
                cmd = [*base, "set", "env", f"deployment/{app.name}", "HOTFIX=1"]
            else:
                image = f"app=registry.example.com/team/{app.name}:9.9.9"
                cmd = [*base, "set", "image", f"deployment/{app.name}", image]
        elif kind == "ConfigMap":
            cmd = [*base, "edit", f"configmap/{app.name}-config"]
        else:
            cmd = [*base, "edit", f"service/{app.name}"]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()}")

    _parallel(person, list(world.changed))
