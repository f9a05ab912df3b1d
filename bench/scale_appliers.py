"""The second scale world ("appliers"): six kinds per app in three files, applied as Argo CD or Flux leave them.

Beside ``scale_cluster.py`` (three kinds, one applier), this world has per app a ServiceAccount, a Deployment, a
headless Service, a ConfigMap, a Role and a RoleBinding, in three files of the Git repo::

    apps/<namespace>/<app>/workload.yaml   Deployment, Service
    apps/<namespace>/<app>/config.yaml     ConfigMap
    apps/<namespace>/<app>/rbac.yaml       ServiceAccount, Role, RoleBinding

Namespaces alternate between the two GitOps controllers, each applying server-side as it does in a real cluster:

- even namespaces: ``argocd-controller`` (Argo CD with ``ServerSideApply=true``), which adds its tracking
  annotation ``argocd.argoproj.io/tracking-id: <app>:<group>/<Kind>:<namespace>/<name>`` to what it applies;
- odd namespaces: ``kustomize-controller`` (Flux), which adds its ``kustomize.toolkit.fluxcd.io/name`` and
  ``.../namespace`` labels.

Those additions are in the live objects and their managedFields (owned by the applier), not in Git. Then, as a
cluster's controllers and people do:

- every Deployment's status is written by ``kube-controller-manager`` (an Update of the status subresource);
- 5% of the objects' worth of Deployments are scaled through the scale subresource as ``kube-controller-manager``
  (the HPA): drift to ignore;
- 1% of the objects are changed by a person with the real kubectl, every kind in turn (``set env``/``set image``,
  ``edit``, ``annotate``, ``patch``, ``set subject``): drift to write back (the Role's and the RoleBinding's
  edits are RBAC changes, which writeback flags for a security review instead).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from scale_cluster import SCALE_MANAGER, _call, _parallel, api_client

ARGO, FLUX = "argocd-controller", "kustomize-controller"
# (apiVersion, kind, plural, file): in the order of an app's objects
KINDS = (
    ("v1", "ServiceAccount", "serviceaccounts", "rbac"),
    ("apps/v1", "Deployment", "deployments", "workload"),
    ("v1", "Service", "services", "workload"),
    ("v1", "ConfigMap", "configmaps", "config"),
    ("rbac.authorization.k8s.io/v1", "Role", "roles", "rbac"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", "rbac"),
)
FILES = ("workload", "config", "rbac")
NAME_SUFFIX = {"ConfigMap": "-config", "Role": "-reader", "RoleBinding": "-reader"}
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

    def file(self, which: str) -> str:
        return f"apps/{self.namespace}/{self.name}/{which}.yaml"

    def object_name(self, kind: str) -> str:
        return self.name + NAME_SUFFIX.get(kind, "")


@dataclass(frozen=True, slots=True, kw_only=True)
class AppliersWorld:
    """What is loaded: the apps, which objects a person changed and which Deployments were scaled."""

    apps: tuple[App, ...]
    namespaces: tuple[str, ...]
    changed: tuple[tuple[str, App], ...]  # (kind, app)
    scaled: tuple[App, ...]

    @property
    def objects(self) -> int:
        return len(KINDS) * len(self.apps)

    @property
    def resources(self) -> tuple[str, ...]:
        """What writeback lists (and the floor): GROUP/VERSION/PLURAL, or v1/PLURAL for the core group."""
        return tuple(f"{api_version}/{plural}" for api_version, _, plural, _ in KINDS)

    def expected_decisions(self) -> frozenset[tuple[str, str, str, str]]:
        """A person's edit of a Role's rules or a RoleBinding's subjects is flagged for review, not written back."""
        return frozenset(
            (kind, app.namespace, app.object_name(kind), "flag" if kind in ("Role", "RoleBinding") else "writeback")
            for kind, app in self.changed
        )

    def expected_edited_files(self) -> frozenset[str]:
        where = {kind: file for _, kind, _, file in KINDS}
        return frozenset(app.file(where[kind]) for kind, app in self.changed)

    def write_repo(self, repo: Path) -> None:
        for app in self.apps:
            for which, text in manifests(app).items():
                p = repo / app.file(which)
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text, encoding="utf-8")
        git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "manifests"], check=True)

    def load(self, *, kubeconfig: str, kubectl: Path, workdir: Path) -> None:
        load_cluster(self, kubeconfig=kubeconfig, kubectl=kubectl, workdir=workdir)


def applier(namespace_index: int) -> str:
    return ARGO if namespace_index % 2 == 0 else FLUX


def plan_world(objects: int, *, namespace_prefix: str = "apps") -> AppliersWorld:
    """Which apps, namespaces and edits make ``objects`` objects (rounded up to a multiple of 6)."""
    per_app = len(KINDS)
    count = max(1, -(-objects // per_app))
    spaces = tuple(f"{namespace_prefix}-{i}" for i in range(min(10, count)))
    apps = tuple(App(index=i, namespace=spaces[i % len(spaces)]) for i in range(count))
    kinds = tuple(kind for _, kind, _, _ in KINDS)
    total = per_app * count
    # 1% of the objects, every kind in turn, in distinct apps (one per 100 objects, i.e. every ~17th app)
    changed = tuple((kinds[j % per_app], apps[(50 + 100 * j) // per_app]) for j in range(total // 100))
    if not changed:  # a small world (the smoke test): each kind once, in six apps
        changed = tuple((kinds[j], apps[j]) for j in range(min(per_app, count)))
    changed_apps = {a.index for _, a in changed}
    want = max(1, round(0.05 * total))  # 5% of the objects, all of them Deployments
    scaled = tuple(a for a in apps if a.index not in changed_apps)[: min(want, count - len(changed_apps))]
    return AppliersWorld(apps=apps, namespaces=spaces, changed=changed, scaled=scaled)


def manifests(app: App) -> dict[str, str]:
    """The app's three files as they are in Git."""
    i, name, ns = app.index, app.name, app.namespace
    labels = f"""\
  labels:
    app.kubernetes.io/name: {name}
    app.kubernetes.io/part-of: scale"""
    workload = f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
{labels}
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
      serviceAccountName: {name}
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
kind: Service
metadata:
  name: {name}
  namespace: {ns}
{labels}
spec:
  clusterIP: None
  selector:
    app.kubernetes.io/name: {name}
  ports:
    - name: http
      port: 80
      targetPort: http
"""
    config = f"""\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}-config
  namespace: {ns}
{labels}
data:
  config.yaml: |
    server:
      port: 8080
    log:
      level: info
  FEATURE_FLAGS: "search,checkout"
"""
    rbac = f"""\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {name}
  namespace: {ns}
{labels}
automountServiceAccountToken: false
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {name}-reader
  namespace: {ns}
{labels}
rules:
  - apiGroups:
      - ""
    resources:
      - configmaps
    resourceNames:
      - {name}-config
    verbs:
      - get
      - list
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {name}-reader
  namespace: {ns}
{labels}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {name}-reader
subjects:
  - kind: ServiceAccount
    name: {name}
    namespace: {ns}
"""
    return {"workload": workload, "config": config, "rbac": rbac}


def applied(body: dict[str, Any], *, manager: str, namespace_index: int) -> dict[str, Any]:
    """The object as its controller applies it: Git's manifest plus the controller's tracking metadata."""
    meta = body["metadata"]
    if manager == ARGO:
        group = body["apiVersion"].rpartition("/")[0]
        tracking = f"{meta['namespace']}:{group}/{body['kind']}:{meta['namespace']}/{meta['name']}"
        meta.setdefault("annotations", {})["argocd.argoproj.io/tracking-id"] = tracking
    else:
        meta.setdefault("labels", {}).update(
            {"kustomize.toolkit.fluxcd.io/name": f"apps-{namespace_index}",
             "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
        )  # fmt: skip
    return body


def _path(body: dict[str, Any]) -> str:
    plural = {kind: p for _, kind, p, _ in KINDS}[body["kind"]]
    prefix = "/api/v1" if body["apiVersion"] == "v1" else f"/apis/{body['apiVersion']}"
    meta = body["metadata"]
    return f"{prefix}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"


def _deployment_status(generation: int = 1) -> dict[str, Any]:
    when = "2026-12-01T00:00:00Z"
    cond = {"lastUpdateTime": when, "lastTransitionTime": when, "status": "True"}
    return {"status": {
        "observedGeneration": generation, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
        "availableReplicas": 2,
        "conditions": [
            {**cond, "type": "Available", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability."},
            {**cond, "type": "Progressing", "reason": "NewReplicaSetAvailable",
             "message": "ReplicaSet has successfully progressed."},
        ],
    }}  # fmt: skip


def load_cluster(world: AppliersWorld, *, kubeconfig: str, kubectl: Path, workdir: Path) -> None:
    """Apply every object as its namespace's controller, then the controllers' writes and the people's edits."""
    index = {ns: i for i, ns in enumerate(world.namespaces)}
    api = api_client(kubeconfig)
    try:
        for ns, i in index.items():
            body = applied({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "namespace": ns}},
                           manager=applier(i), namespace_index=i)  # fmt: skip
            del body["metadata"]["namespace"]
            _call(api, method="PATCH", path=f"/api/v1/namespaces/{ns}",
                  query=[("fieldManager", applier(i)), ("force", "true")], body=json.dumps(body),
                  content_type="application/apply-patch+yaml")  # fmt: skip

        def apply(body: dict[str, Any]) -> None:
            i = index[body["metadata"]["namespace"]]
            manager = applier(i)
            _call(api, method="PATCH", path=_path(body), query=[("fieldManager", manager), ("force", "true")],
                  body=json.dumps(applied(body, manager=manager, namespace_index=i)),
                  content_type="application/apply-patch+yaml")  # fmt: skip

        bodies = [b for app in world.apps for text in manifests(app).values()
                  for b in yaml.load_all(text, Loader=yaml.CSafeLoader)]  # fmt: skip
        _parallel(apply, bodies)

        def status(app: App) -> None:
            path = f"/apis/apps/v1/namespaces/{app.namespace}/deployments/{app.name}/status"
            _call(api, method="PATCH", path=path, query=[("fieldManager", SCALE_MANAGER)],
                  body=_deployment_status(), content_type="application/merge-patch+json")  # fmt: skip

        _parallel(status, list(world.apps))

        def scale(app: App) -> None:
            path = f"/apis/apps/v1/namespaces/{app.namespace}/deployments/{app.name}/scale"
            _call(api, method="PATCH", path=path, query=[("fieldManager", SCALE_MANAGER)],
                  body={"spec": {"replicas": 5}}, content_type="application/merge-patch+json")  # fmt: skip

        _parallel(scale, list(world.scaled))
    finally:
        api.close()
    _people(world, kubeconfig=kubeconfig, kubectl=kubectl, workdir=workdir)


def _people(world: AppliersWorld, *, kubeconfig: str, kubectl: Path, workdir: Path) -> None:
    editor = workdir / "editor.py"
    editor.write_text(EDITOR_SCRIPT)
    env = {**os.environ, "KUBECONFIG": kubeconfig, "KUBE_EDITOR": f"{sys.executable} {editor}"}

    def person(change: tuple[str, App]) -> None:
        kind, app = change
        base = [str(kubectl), "--kubeconfig", kubeconfig, "-n", app.namespace]
        name = app.object_name(kind)
        if kind == "Deployment":
            if app.index % 2:
                cmd = [*base, "set", "env", f"deployment/{name}", "HOTFIX=1"]
            else:
                cmd = [*base, "set", "image", f"deployment/{name}", f"app=registry.example.com/team/{name}:9.9.9"]
        elif kind == "ConfigMap":
            cmd = [*base, "edit", f"configmap/{name}"]
        elif kind == "Service":
            cmd = [*base, "edit", f"service/{name}"]
        elif kind == "ServiceAccount":
            cmd = [*base, "annotate", f"serviceaccount/{name}", "team.example.com/owner=payments"]
        elif kind == "Role":
            patch = [{"op": "add", "path": "/rules/0/verbs/-", "value": "watch"}]
            cmd = [*base, "patch", f"role/{name}", "--type=json", "-p", json.dumps(patch)]
        else:
            cmd = [*base, "set", "subject", f"rolebinding/{name}", "--user=oncall@example.com"]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()}")

    _parallel(person, list(world.changed))
