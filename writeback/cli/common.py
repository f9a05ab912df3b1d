"""Flags shared by ``diff``, ``plan`` and ``run``: where live and Git come from, and output format.

Precedence: a flag beats the config target's setting, which beats the built-in default.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from writeback.cli.flags import FLAG_NAMES, STDIN, flag_dest
from writeback.errors import ConfigError, InputError
from writeback.gitops.registry import SUSPENDABLE
from writeback.sources import registry as sources

if TYPE_CHECKING:  # the work's modules are imported when a command runs, not when its flags are defined
    from writeback.config import Config, Target
    from writeback.gitops.base import Followed
    from writeback.pipeline.targets import Edges, TargetSpec


def load_checked_config(path: str) -> Config:
    """The configuration file, validated, with every target's PR templates compiled and rendered once."""
    from writeback.config import load_config
    from writeback.pipeline.pull_requests import check_config_templates

    cfg = load_config(path)
    check_config_templates(cfg, source=path)
    return cfg


def one_shot() -> None:
    """A one-shot command (``diff``, ``plan``, ``run --once``) keeps no parsed YAML for a next run it will not
    make (each run still parses a text once: ``yaml.reading.parse_scope``), and its process ends without freeing
    its data object by object (``cli.exits.skip_teardown``)."""
    from writeback.cli.exits import skip_teardown
    from writeback.yaml.reading import set_cache

    set_cache(enabled=False)
    skip_teardown()


@dataclass(frozen=True, slots=True, kw_only=True)
class Inputs:
    """What ``diff`` and ``plan`` work on: one target resolved once, a local checkout, and the adapters."""

    spec: TargetSpec
    repo: Path
    edges: Edges


def _pick_target(cfg: Config, name: str | None, *, source: str) -> Target:
    if name:
        for t in cfg.targets:
            if t.name == name:
                return t
        raise ConfigError(f"{source}: no target named {name!r} (have: {', '.join(t.name for t in cfg.targets)})")
    if len(cfg.targets) == 1:
        return cfg.targets[0]
    raise InputError(f"{source} has {len(cfg.targets)} targets: choose one with --target")


def _local_repo(url: str) -> Path | None:
    if url.startswith("file://"):
        return Path(url[len("file://") :])
    p = Path(url).expanduser()
    return p if p.is_dir() else None


def path_name(path: str) -> str:
    """What a target without a config file is named after its ``--path``: the directory's name; for one manifest
    file, its directory's name and the file's stem (``apps/shop/deployment.yaml`` -> ``shop-deployment``); "" for
    the top."""
    parts = [p for p in path.strip("/").split("/") if p not in ("", ".")]
    if not parts:
        return ""
    last = parts[-1]
    stem, dot, suffix = last.rpartition(".")
    if dot and suffix.lower() in ("yaml", "yml", "json"):
        return f"{parts[-2]}-{stem}" if len(parts) > 1 else stem
    return last


def target_name(path: str | None, *, fallback: str) -> str:
    """The name of a target built from flags (no config file), as a config target's name must be (a slug): named
    after the --path (:func:`path_name`), else ``fallback`` (the repository's name), else ``default``."""
    for raw in (path_name(path or "."), fallback):
        slug = re.sub(r"[^a-z0-9._-]+", "-", raw.lower()).strip("-._")[:63]
        if slug:
            return slug
    return "default"


def repo_and_path(repo: str | None, path: str | None, *, cwd: Path | None = None) -> tuple[Path, str | None]:
    """The repository's top and the target's path in it, found as git finds them.

    Without ``--repo``: the work tree the current directory is in, and ``--path`` relative to the current directory
    (default: the current directory), as git's pathspecs; outside a work tree, ``.`` and ``--path`` as given. With
    ``--repo DIR``: ``--path`` relative to DIR; a DIR below its work tree's top is the same as the top and a path
    under DIR."""
    from writeback.adapters.git import revisions

    here = (cwd or Path.cwd()).resolve()
    base = here if repo is None else (here / repo).resolve() if not Path(repo).is_absolute() else Path(repo)
    top = revisions.toplevel(base) if base.is_dir() else None
    if top is None:
        return (Path(repo) if repo else Path(".")), path
    start = base if repo is not None else here
    target = Path(os.path.realpath(start / (path or ".")))  # not Path.resolve, which raises on a link loop
    try:
        rel = target.relative_to(top.resolve()).as_posix()
    except ValueError:
        raise InputError(f"--path {path or '.'}: {target} is outside the repository {top}") from None
    return top, (None if rel == "." else rel)


def inputs_from_args(args: argparse.Namespace) -> Inputs:
    """Flags (and the config target they name) -> the target's spec, its local repo and its edges.

    Precedence: a flag beats the config target's setting, which beats the built-in default.
    """
    from writeback.pipeline.targets import TargetSpec, spec_for

    if args.live and (args.kubeconfig or args.context):
        raise InputError("--live (offline) cannot be combined with --kubeconfig/--context")
    target: Target | None = None
    cfg: Config | None = None
    if args.config:
        cfg = load_checked_config(args.config)
        target = _pick_target(cfg, args.target, source=args.config)
    elif args.target:
        raise InputError("--target needs --config")
    repo: Path | None = Path(args.repo) if args.repo else None
    path: str | None = args.path
    if repo is None and target is not None:
        repo = _local_repo(target.repo_url)
        if repo is None:
            msg = f"target {target.name}: repo_url {target.repo_url} is remote; give a local clone with --repo"
            raise InputError(msg)
    if repo is not None and not repo.is_dir():
        raise InputError(f"--repo {repo}: no such directory")
    if target is None or args.repo:  # where the command runs (or --repo) decides, as for git
        repo, path = repo_and_path(args.repo, path)
    repo = repo or Path(".")
    flags: dict[str, Any] = {
        "path": path,
        "namespaces": tuple(args.namespaces or ()),
        "all_namespaces": bool(getattr(args, "all_namespaces", False)) or None,
        "kinds": tuple(getattr(args, "kinds", None) or ()),
        "revision": args.revision,
        "controllers": _followed(args, target),
        "source": getattr(args, "source", None),
        "edit_base": getattr(args, "edit_base", None) or None,
        "page_size": args.page_size,
    }
    if target is not None:
        spec = spec_for(target, **flags)
    else:
        name = target_name(path, fallback=repo.resolve().name)
        spec = TargetSpec(name=name, **{k: v for k, v in flags.items() if v is not None and v != ()})
    return Inputs(spec=spec, repo=repo, edges=edges_for(args, cfg, target))


def _followed(args: argparse.Namespace, target: Target | None) -> tuple[Followed, ...]:
    """The controller objects named by flags, then the target's of the other kinds (a flag beats the setting)."""
    from writeback.gitops.base import Followed

    given = tuple(
        Followed(controller=c, text=text, what=c.flag)
        for c in SUSPENDABLE
        if c.flag and (text := getattr(args, flag_dest(c.flag), None))
    )
    kinds = {f.controller.name for f in given}
    kept = tuple(Followed(controller=c, text=text) for c, text in (target.controller_objects() if target else ())
                 if c.name not in kinds)  # fmt: skip
    return given + kept if given else ()


def edges_for(args: argparse.Namespace, cfg: Config | None, target: Target | None) -> Edges:
    """The adapters of one target from ``--live`` or the cluster flags, else the target's configured cluster."""
    from writeback.pipeline.targets import Edges, tools_for

    live, kubeconfig, context = (getattr(args, k, None) for k in ("live", "kubeconfig", "context"))
    given = {o.name: getattr(args, flag_dest(o.flag), None) for o in sources.options()}
    tools = tools_for(target, given=given)
    if live == STDIN:
        return Edges(live_text=read_stdin(), cluster_name="offline dump from standard input", tools=tools)
    if live:
        return Edges(live_path=Path(live), cluster_name=f"offline dump {Path(live).name}",
                     empty_live_ok=bool(getattr(args, "allow_empty_live", False)), tools=tools)  # fmt: skip
    from writeback.adapters.kube.controllers import context_name
    from writeback.adapters.kube.kubeconfigs import ClusterAccess

    entry = None
    if not (kubeconfig or context) and cfg is not None and target is not None and target.cluster:
        entry = next(c for c in cfg.clusters if c.name == target.cluster)
    if entry is not None:
        access = ClusterAccess(kubeconfig=entry.kubeconfig, context=entry.context, in_cluster=entry.in_cluster)
        name = entry.name
    else:
        access = ClusterAccess(kubeconfig=kubeconfig, context=context)
        name = context or context_name(access) or "in-cluster"
    from writeback.adapters.kube.cluster import KubeCluster
    from writeback.adapters.kube.discovery import DiscoveryOnce

    cluster = KubeCluster.connect(kubeconfig=access.kubeconfig, context=access.context, in_cluster=access.in_cluster)
    tools = tools_for(target, given=given, discovery=DiscoveryOnce(cluster))  # read once, if a source asks
    return Edges(cluster=cluster, cluster_name=name, tools=tools)


def read_stdin() -> str:
    """``--live -``: the whole dump from standard input (read once, before any work)."""
    if sys.stdin is None or sys.stdin.isatty():
        raise InputError("--live -: standard input is a terminal; pipe a dump in (kubectl get ... -o yaml | ...)")
    try:
        text = sys.stdin.read()
    except UnicodeDecodeError as e:
        raise InputError(f"--live -: standard input is not UTF-8 text: {e.reason}") from e
    if not text.strip():
        raise InputError("--live -: standard input is empty; pipe a dump in (kubectl get ... -o yaml | ...)")
    return text


def flag_target_name(args: argparse.Namespace) -> str:
    """``run``'s target name without a config file (:func:`target_name`): the repository's is --repo-url's."""
    repo = re.sub(r"\.git$", "", (args.repo_url or "").rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1])
    return target_name(getattr(args, "path", None), fallback=repo)


def targets_from_args(args: argparse.Namespace) -> tuple[Config | None, tuple[Target, ...]]:
    """The targets ``run`` works on: all of --config (or the one --target names), or the one the flags describe."""
    flags = [f for f in ("repo_url", "base", "forge", "forge_url", "forge_project", "token_env") if getattr(args, f)]
    if args.config:
        if flags:
            names = ", ".join("--" + f.replace("_", "-") for f in flags)
            raise InputError(f"{names}: give either --config or the repo and forge flags, not both")
        cfg = load_checked_config(args.config)
        targets = (_pick_target(cfg, args.target, source=args.config),) if args.target else cfg.targets
        return cfg, targets
    if args.target:
        raise InputError("--target needs --config")
    if not args.repo_url or not args.forge:
        raise InputError("without --config, give at least --repo-url and --forge")
    from writeback.config import parse_config
    from writeback.credentials import TOKEN_NOT_NAME, looks_like_credential

    forge: dict[str, Any] = {"kind": args.forge, "url": args.forge_url, "project": args.forge_project}
    if args.token_env and looks_like_credential(args.token_env):  # never echoed: it is likely the token itself
        raise InputError(f"--token-env: {TOKEN_NOT_NAME}")
    if args.token_env:
        forge["token"] = {"env": args.token_env}
    target: dict[str, Any] = {"name": flag_target_name(args), "repo_url": args.repo_url, "forge": forge}
    if args.base:
        target["base"] = args.base
    if args.path:
        target["path"] = args.path
    if args.namespaces:
        target["namespace"] = args.namespaces[0]
    for flag, key in (("revision", "revision"), ("source", "source")):
        if getattr(args, flag, None):
            target[key] = getattr(args, flag)
    for c in SUSPENDABLE:
        if c.flag and c.config_key and getattr(args, flag_dest(c.flag), None):
            target[c.config_key] = getattr(args, flag_dest(c.flag))
    for o in sources.options():
        if getattr(args, flag_dest(o.flag), None):
            target[o.config_key] = getattr(args, flag_dest(o.flag))
    named: dict[tuple[int | str, ...], str] = {("targets", 0, *key.split(".")): f for key, f in FLAG_NAMES.items()}
    cfg = parse_config({"targets": [target]}, source="command-line flags", flags=named)
    return None, cfg.targets


def spec_of(args: argparse.Namespace, cfg: Config | None, target: Target) -> TargetSpec:
    """The spec of a ``run`` target; one built from flags names its flags in errors."""
    from writeback.pipeline.targets import spec_for

    return spec_for(target, incident=getattr(args, "incident", None), setting_names={} if cfg else FLAG_NAMES)
