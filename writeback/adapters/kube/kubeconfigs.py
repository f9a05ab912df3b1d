"""Finding the cluster credentials: --kubeconfig, $KUBECONFIG, ~/.kube/config, then in-cluster config."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from writeback.errors import ClusterError, InputError, yaml_error_position

_IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterAccess:
    """How to reach a cluster. ``kubeconfig=None`` and ``in_cluster=False`` means: look in the usual places."""

    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool = False


def resolve_kubeconfig(*, access: ClusterAccess, environ: dict[str, str] | None = None) -> str | None:
    """The kubeconfig path(s) to use, or None for in-cluster config.

    Order: the explicit path, ``$KUBECONFIG`` (may list several files), ``~/.kube/config``, in-cluster.
    """
    env = dict(os.environ) if environ is None else environ
    if access.in_cluster:
        return None
    if access.kubeconfig:
        path = Path(access.kubeconfig).expanduser()
        if not path.is_file():
            raise InputError(f"--kubeconfig {access.kubeconfig}: no such file")
        return str(path)
    if env.get("KUBECONFIG"):
        return env["KUBECONFIG"]
    home = Path(env.get("HOME") or Path.home()) / ".kube" / "config"
    if home.is_file():
        return str(home)
    if env.get(_IN_CLUSTER_ENV):
        return None
    raise InputError(
        "no cluster credentials: give --kubeconfig, set $KUBECONFIG, create ~/.kube/config or run in a cluster"
    )


_KUBECONFIG_KEYS = ("clusters", "contexts", "users", "current-context")


def check_kubeconfig(path: str, *, origin: str) -> None:
    """Each file of ``path`` (``$KUBECONFIG`` may list several) must be a kubeconfig: a YAML mapping with
    clusters, contexts or users (as ``kubectl config view`` prints). ``origin`` names where the path came from."""
    import yaml

    for file in (f for f in path.split(os.pathsep) if f):
        p = Path(file).expanduser()
        if not p.is_file():
            continue  # kubectl skips missing files of $KUBECONFIG too
        try:
            doc = yaml.safe_load(p.read_text(encoding="utf-8"))
        except yaml.MarkedYAMLError as e:
            mark, problem = yaml_error_position(e)
            where = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark is not None else file
            raise InputError(f"{origin} {where}: not a kubeconfig: not valid YAML: {problem}") from None
        except (yaml.YAMLError, UnicodeDecodeError, OSError) as e:
            raise InputError(f"{origin} {file}: not a kubeconfig: {type(e).__name__}") from None
        if not isinstance(doc, dict) or not any(k in doc for k in _KUBECONFIG_KEYS):
            got = type(doc).__name__ if not isinstance(doc, dict) else "a mapping without clusters, contexts or users"
            got = {"str": "a string", "list": "a list", "NoneType": "empty"}.get(got, got)
            raise InputError(
                f"{origin} {file}: not a kubeconfig (it is {got}; a kubeconfig is a YAML mapping with clusters, "
                "contexts and users, as `kubectl config view` prints)"
            )


def _transport_retries() -> Any:
    """urllib3 retries connection errors only. Its default also retries 429/503 and sleeps on Retry-After
    without any cap (an hour, if the server says so), then reports "max retries" as if the server were
    unreachable: throttling is retried by ``KubeCluster`` instead, bounded, and reported as what it is."""
    from urllib3.util.retry import Retry

    return Retry(total=3, connect=3, read=0, status=0, other=0, redirect=0, respect_retry_after_header=False,
                 raise_on_status=False)  # fmt: skip


def new_api_client(*, access: ClusterAccess) -> Any:
    """A ``kubernetes.client.ApiClient`` for ``access``."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    path = resolve_kubeconfig(access=access)
    if path is not None:
        check_kubeconfig(path, origin="--kubeconfig" if access.kubeconfig else "kubeconfig")
    try:
        cfg = client.Configuration()
        if path is None:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=path, context=access.context, client_configuration=cfg, persist_config=False
            )
        cfg.retries = _transport_retries()
        return client.ApiClient(configuration=cfg)
    except ConfigException as e:
        where = path or "in-cluster config"
        ctx = f" (context {access.context})" if access.context else ""
        raise InputError(f"{where}{ctx}: cannot load cluster credentials: {e}") from e
    except OSError as e:
        raise InputError(f"{path}: cannot read the kubeconfig: {e.strerror}") from e
    except Exception as e:  # the loader raises assorted errors for malformed files
        if isinstance(e, ClusterError):
            raise
        raise InputError(f"{path or 'in-cluster config'}: invalid kubeconfig: {' '.join(str(e).split())}") from e
