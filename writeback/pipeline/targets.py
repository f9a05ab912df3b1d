"""The composition root's two types: one target resolved once (``TargetSpec``), and the adapters it reaches (``Edges``).

A target is resolved ONCE, from the config file or from the flags, into a ``TargetSpec``: what to read (path,
namespaces, selectors, revision, the GitOps controller's object), how to decide (policy, ignore rules, the
fingerprint key) and where to write (the config target: repo URL, base, forge, git and pull-request settings).
``diff``, ``plan``, ``run``, the service and break-glass all take a spec and the ``Edges`` built for it; none of
them merges flags and settings again.

    spec = spec_for(target, environ=os.environ)                  # from a config target
    edges = Edges(cluster=KubeCluster.connect(...), cluster_name="prod")
    detection = detect(spec=spec, repo=Path("."), edges=edges)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from writeback import settings
from writeback.adapters.kube.cluster import DEFAULT_PAGE_SIZE, Cluster
from writeback.gitops.base import Followed
from writeback.kube.discovery import DiscoveryReader
from writeback.pipeline.warming import WarmState
from writeback.sources import registry as sources
from writeback.sources.base import OptionKind, Tools

if TYPE_CHECKING:  # a one-shot diff reads no config file and opens no forge: their modules are imported where used
    from writeback import config
    from writeback.adapters.forges.base import Forge, RetryPolicy

__all__ = ["Edges", "TargetSpec", "spec_for", "tools_for"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetSpec:
    """One target: what to read, how to decide, where to write."""

    name: str
    # what to read
    path: str = "."  # the manifests' directory in the repo
    namespaces: tuple[str, ...] = ()  # the first is the namespace of manifests that name none
    all_namespaces: bool = False  # -A: list Git's kinds in every namespace, not only those Git uses and -n names
    kinds: tuple[str, ...] = ()  # --kinds: compare these kinds only (kubectl's names: deploy, cm, Service, ...)
    selectors: tuple[settings.Selector, ...] = ()
    revision: str | None = None  # compare with this commit (else the controller's applied revision, else HEAD)
    # the GitOps controller objects it follows (the first tells the applied revision, namespace and ignore rules)
    controllers: tuple[Followed, ...] = ()
    source: str | None = None  # a registered source kind's name; None: the first that claims ``path``
    edit_base: bool = False  # kustomize: edit the shared base instead of the overlay
    page_size: int = DEFAULT_PAGE_SIZE
    # how to decide
    policy: settings.Policy = field(default_factory=settings.Policy)
    ignore: tuple[settings.IgnoreRule, ...] = ()
    fingerprint_key: bytes | None = None  # HMAC key for sensitive values (``pull_request.fingerprint_key``)
    explain: bool = False  # keep every dropped field and its rule (``diff --explain``); nothing else reads them
    # where to write (run, the service, break-glass; and the PR preview of plan)
    target: config.Target | None = None
    incident: str | None = None  # incident link or rationale for the PR body
    # what errors call a setting, by its key path under the target (``forge.project``): for a target built from
    # flags, the flag (``--forge-project``); any other setting is named by its config key path
    setting_names: Mapping[str, str] = field(default_factory=dict)

    @property
    def default_namespace(self) -> str | None:
        return self.namespaces[0] if self.namespaces else None

    def key(self, path: str) -> str:
        """How an error names the setting at ``path``: its flag, else ``targets[NAME].path``."""
        return self.setting_names.get(path) or f"targets[{self.name}].{path}"


def spec_for(target: config.Target, *, environ: Mapping[str, str] | None = None, **overrides: object) -> TargetSpec:
    """The spec of a config target (its fingerprint key read from the environment or a file); ``overrides`` are
    the flags that beat the target's settings (``revision``, ``path``, ...)."""
    ref = target.pull_request.fingerprint_key
    from writeback.adapters.forges.opening import read_secret

    key = read_secret(ref, key=f"targets[{target.name}].pull_request.fingerprint_key", environ=environ) if ref else None
    fields: dict[str, object] = {
        "name": target.name,
        "path": target.path,
        "namespaces": (target.namespace,) if target.namespace else (),
        "selectors": target.selectors,
        "revision": target.revision,
        "controllers": tuple(Followed(controller=c, text=text) for c, text in target.controller_objects()),
        "source": target.source,
        "edit_base": target.edit_base,
        "policy": target.policy,
        "ignore": target.ignore,
        "fingerprint_key": key.encode() if key else None,
        "target": target,
        "incident": target.pull_request.incident,
    }
    fields.update({k: v for k, v in overrides.items() if v is not None and v != ()})
    return TargetSpec(**fields)  # type: ignore[arg-type]


def tools_for(
    target: config.Target | None,
    *,
    given: Mapping[str, str | Sequence[str] | None] | None = None,
    discovery: DiscoveryReader | None = None,
) -> Tools:
    """The options source kinds take (``Source.options``): a flag's value (``given``, by option name) beats the
    config target's key; a list's items may each hold several, comma-separated (as helm's flags take them).
    ``discovery``: the cluster's (cluster mode), read on first use."""
    paths: dict[str, Path] = {}
    texts: dict[str, tuple[str, ...]] = {}
    for option in sources.options():
        value = (given or {}).get(option.name) or getattr(target, option.config_key, None)
        if not value:
            continue
        if option.kind is OptionKind.PATH and isinstance(value, str):
            paths[option.name] = Path(value).expanduser()
        elif option.kind is OptionKind.TEXT and isinstance(value, str):
            texts[option.name] = (value.strip(),)
        elif option.kind is OptionKind.LIST:
            items = (value,) if isinstance(value, str) else value
            texts[option.name] = tuple(p.strip() for item in items for p in item.split(",") if p.strip())
    return Tools(paths=paths, texts=texts, discovery=discovery)


@dataclass(frozen=True, kw_only=True)
class Edges:
    """The adapters one target's run reaches out through, built by the CLI or the service and passed down."""

    cluster: Cluster | None = None  # None: offline, from ``live_path`` or ``live_text``
    live_path: Path | None = None  # offline: a file or directory of ``kubectl get -o yaml`` dumps
    live_text: str | None = None  # offline: the dump itself (``--live -``: read from standard input)
    empty_live_ok: bool = False  # offline: a dump with nothing to compare is expected (else an input error)
    cluster_name: str = ""  # how the PR body names the cluster
    tools: Tools = field(default_factory=Tools)  # paths of the programs sources run (default: $WRITEBACK_<NAME>, PATH)
    forge: Forge | None = None  # None: run opens the target's forge from its config
    retry: RetryPolicy | None = None  # None: from the target's forge settings
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    clock: Callable[[], float] = time.time
    on_step: Callable[[str], None] | None = None  # progress of detect and plan: "read Git", "snapshot", ...
    memo: WarmState | None = None  # the service: results kept from the target's last cycle (pipeline.warming)

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.cluster, self.live_path, self.live_text)) > 1:
            raise ValueError("Edges: give a cluster or a live dump, not both")
