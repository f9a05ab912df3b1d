"""The one builder of Deployments for tests (a plain dict, ready for the API server, ``to_yaml`` or the engine).

    deployment("web")                                   # labelled app=web, one container "app" (nginx:1.25, :8080)
    deployment("web", namespace="shop", replicas=3, env={"LOG_LEVEL": "info"})
    deployment("web", containers=[container("web", image=IMAGE, args=["--port", "80"]), container("metrics")])

Each test names only what it is about; the rest is the same everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

IMAGE = "nginx:1.25"
PORT = 8080


def web_manifest(
    *,
    comment: str = "web frontend (synced by Argo CD)",
    namespace: str | None = None,
    replicas: int = 1,
    image: str = "registry.example.com/web:1.0.0   # bumped by CI",
    env: Mapping[str, str] | None = None,
) -> str:
    """The web Deployment as a file of a GitOps repo, comments and all (the text tests edit and assert on).

    ``image``: the image line's text after ``image: ``, its trailing comment included; ``env``: the container's
    env (name -> value, in order), none unless given."""
    ns = f"\n  namespace: {namespace}" if namespace is not None else ""
    lines = "".join(f"\n            - name: {k}\n              value: {v}" for k, v in (env or {}).items())
    env_block = f"\n          env:{lines}" if env else ""
    return f"""\
# {comment}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web{ns}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: app
          image: {image}{env_block}
"""


# The web Deployment as the break-glass tests push it.
WEB_MANIFEST = web_manifest(env={"FEATURE_X": '"on"'})


def container(
    name: str = "app",
    *,
    image: str = IMAGE,
    args: Sequence[str] = (),
    ports: Sequence[int] = (),
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A container: ``args``, ``ports`` (containerPort each) and ``env`` (name -> value, in order) only if given."""
    out: dict[str, Any] = {"name": name, "image": image}
    if args:
        out["args"] = list(args)
    if ports:
        out["ports"] = [{"containerPort": p} for p in ports]
    if env:
        out["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return out


def deployment(
    name: str = "web",
    *,
    namespace: str | None = None,
    replicas: int | None = None,
    labelled: bool = True,
    image: str = IMAGE,
    env: Mapping[str, str] | None = None,
    containers: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Deployment ``name`` selecting and labelling its pods ``app: name``.

    ``labelled``: the Deployment itself carries ``app: name`` too. ``replicas``: absent unless given (the API
    server defaults it to 1). ``containers``: the pod's containers; by default one, ``container("app", image=image,
    ports=[8080], env=env)`` (``image`` and ``env`` only shape that default one)."""
    if containers is None:
        containers = [container("app", image=image, ports=[PORT], env=env)]
    else:
        assert image == IMAGE and env is None, "image and env shape the default container only: pass container(...)"
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if labelled:
        meta["labels"] = {"app": name}
    spec: dict[str, Any] = {} if replicas is None else {"replicas": replicas}
    spec["selector"] = {"matchLabels": {"app": name}}
    spec["template"] = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [dict(c) for c in containers]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}
