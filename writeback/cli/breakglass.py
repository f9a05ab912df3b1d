"""``writeback break-glass start|status|end|expire``: pause a GitOps controller's auto-sync during an incident.

``end`` and ``expire`` first backport the live state by PR (the ``run --once`` cycle, with the repo and forge
flags of ``run`` or a config target), and restore auto-sync only once that PR is ensured.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from writeback.adapters.cluster import KubeCluster
from writeback.adapters.controllers import ControllerObjects, default_namespace, kubeconfig_user
from writeback.adapters.kubeconfigs import ClusterAccess
from writeback.cli.common import add_repo_forge_flags, edges_for, targets_from_args
from writeback.config import Config, Target
from writeback.core import breakglass as bg
from writeback.errors import ExitCode, InputError
from writeback.model import ObjectRef
from writeback.pipeline import breakglass as flow
from writeback.pipeline.cycling import CycleOptions, TargetRun
from writeback.pipeline.targets import spec_for


def _object_flags(parser: argparse.ArgumentParser, *, required: bool) -> None:
    g = parser.add_argument_group("the controller object (one of)").add_mutually_exclusive_group(required=required)
    g.add_argument("--argocd-app", metavar="NS/NAME", help="an Argo CD Application")
    g.add_argument("--flux-kustomization", metavar="NS/NAME", help="a Flux Kustomization")
    g.add_argument("--flux-helmrelease", metavar="NS/NAME", help="a Flux HelmRelease")


def _cluster_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig (default: $KUBECONFIG, ~/.kube/config)")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: the current one)")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text", help="output format")


def _scope_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all-namespaces", "-A", action="store_true", help="every namespace")
    parser.add_argument(
        "--controller-namespace", metavar="NS", help="the namespace of the controller objects (default: context's)"
    )


def _backport_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backport", action=argparse.BooleanOptionalAction, default=True,
        help="open the backport PR of the live state before auto-sync resumes (default; --no-backport skips it: "
        "the controller then reverts live changes that are not in Git)",
    )  # fmt: skip
    cfg = parser.add_argument_group("configuration")
    cfg.add_argument("--config", metavar="FILE", help="the configuration file (the target to backport with)")
    cfg.add_argument("--target", metavar="NAME", help="the target of --config (default: the one whose "
                     "argocd_application/flux_kustomization is the object)")  # fmt: skip
    add_repo_forge_flags(parser)
    git = parser.add_argument_group("Git side")
    git.add_argument("--path", metavar="SUBDIR", help="the manifests' directory in the repo (default: .)")
    git.add_argument("--namespace", "-n", metavar="NS", action="extend", nargs="+", dest="namespaces",
                     help="namespace of manifests that name none, also snapshotted")  # fmt: skip
    parser.add_argument("--workdir", metavar="DIR", help="where the clones live (default: a temp dir)")
    parser.add_argument("--dry-run", action="store_true", help="no push, no API writes, auto-sync not restored")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "break-glass",
        help="pause Argo CD/Flux auto-sync during an incident; backport by PR before it resumes",
        description="Suspend a GitOps controller's auto-sync with a reason and a TTL (recorded as an annotation on "
        "the object), list running break-glasses, and end them: the live state is backported by PR first, and "
        "auto-sync is restored exactly as it was only once that PR exists.",
    )
    sub = parser.add_subparsers(dest="breakglass_command", metavar="ACTION", required=True)

    p = sub.add_parser("start", help="suspend auto-sync with a reason and a TTL")
    _object_flags(p, required=True)
    p.add_argument("--reason", required=True, metavar="TEXT", help="why (shown to everyone and in the PR)")
    p.add_argument("--ttl", required=True, metavar="DURATION", help="how long, e.g. 2h, 30m, 1h30m (at most 30d)")
    p.add_argument("--incident", metavar="URL", help="the incident link")
    p.add_argument("--extend", action="store_true", help="extend a running break-glass (new TTL from now)")
    p.add_argument("--dry-run", action="store_true", help="show the patch, change nothing")
    _cluster_flags(p)
    p.set_defaults(func=cmd_start)

    p = sub.add_parser("status", help="list break-glass records and their remaining time")
    _object_flags(p, required=False)
    _scope_flags(p)
    _cluster_flags(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("end", help="backport the live state by PR, then restore auto-sync")
    _object_flags(p, required=True)
    _backport_flags(p)
    _cluster_flags(p)
    p.set_defaults(func=cmd_end)

    p = sub.add_parser("expire", help="end every break-glass whose TTL passed (backport first)")
    _object_flags(p, required=False)
    _scope_flags(p)
    _backport_flags(p)
    _cluster_flags(p)
    p.set_defaults(func=cmd_expire)


# ---------------------------------------------------------------- helpers


def _access(args: argparse.Namespace) -> ClusterAccess:
    return ClusterAccess(kubeconfig=args.kubeconfig, context=args.context)


def _objects(args: argparse.Namespace) -> ControllerObjects:
    return ControllerObjects(cluster=KubeCluster.connect(kubeconfig=args.kubeconfig, context=args.context))


def _ref(args: argparse.Namespace) -> ObjectRef | None:
    for kind in bg.KINDS:
        value = getattr(args, kind.flag.lstrip("-").replace("-", "_"), None)
        if value:
            return kind.ref(value)
    return None


def _scope(args: argparse.Namespace) -> str | None:
    if args.all_namespaces:
        return None
    return args.controller_namespace or default_namespace(_access(args))


def _who(access: ClusterAccess) -> tuple[str, str | None]:
    kube_user = kubeconfig_user(access)
    return os.environ.get("USER") or os.environ.get("LOGNAME") or kube_user or "unknown", kube_user


def _item_json(item: flow.Held, *, now: Any) -> dict[str, Any]:
    r = item.record
    return {
        "controller": item.kind.name, "namespace": item.ref.namespace, "name": item.ref.name, "by": r.by,
        "kubeUser": r.kube_user, "reason": r.reason, "incident": r.incident, "start": bg.format_time(r.start),
        "expires": bg.format_time(r.expires), "remainingSeconds": int(r.remaining(now=now).total_seconds()),
        "expired": r.expired(now=now), "previous": {"present": r.previous.present, "value": r.previous.value},
    }  # fmt: skip


def _item_line(item: flow.Held, *, now: Any) -> str:
    r = item.record
    left = "expired" if r.expired(now=now) else f"{bg.format_duration(r.remaining(now=now))} left"
    line = f"{item.kind.name}  {item.name}  by {r.by}  until {bg.format_time(r.expires)} ({left})  reason: {r.reason}"
    return line + (f"  incident: {r.incident}" if r.incident else "")


def _print_json(doc: Any) -> None:
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")


# ---------------------------------------------------------------- start and status


def cmd_start(args: argparse.Namespace) -> int:
    ttl = bg.parse_ttl(args.ttl, flag="--ttl")
    ref = _ref(args)
    assert ref is not None  # required group
    by, kube_user = _who(_access(args))
    now = flow.now_utc()
    started = flow.start(
        objects=_objects(args), ref=ref, reason=args.reason, ttl=ttl, by=by, now=now, incident=args.incident,
        kube_user=kube_user, extend=args.extend, dry_run=args.dry_run,
    )  # fmt: skip
    item = started.held
    if started.parent:
        print(f"warning: {item.ref.kind} {item.name} is applied by {started.parent}, whose next sync may put "
              "auto-sync back: break-glass it too", file=sys.stderr)  # fmt: skip
    if args.output == "json":
        _print_json({**_item_json(item, now=now), "extended": started.extended, "dryRun": started.dry_run,
                     "parent": started.parent,
                     "patch": list(started.ops) if started.dry_run else None})  # fmt: skip
        return ExitCode.OK
    verb = "would " + ("extend" if started.extended else "start") if started.dry_run else (
        "extended" if started.extended else "started")  # fmt: skip
    print(f"break-glass {verb}: {item.ref.kind} {item.name} until {bg.format_time(item.record.expires)} "
          f"({bg.format_duration(ttl)}), by {item.record.by}: {item.record.reason}")  # fmt: skip
    if not started.auto_sync_was_on:
        print("note: auto-sync was already off; the record still keeps it off and restores it as it was")
    if started.dry_run:
        print("JSON patch:\n" + json.dumps(list(started.ops), indent=2))
    else:
        print("end it with `writeback break-glass end` (it backports the live state by PR first)")
    return ExitCode.OK


def cmd_status(args: argparse.Namespace) -> int:
    objects = _objects(args)
    now = flow.now_utc()
    ref = _ref(args)
    if ref is not None:
        one = flow.get_held(objects=objects, ref=ref)
        items = [one] if one else []
    else:
        items = flow.held(objects=objects, namespace=_scope(args))
    if args.output == "json":
        _print_json([_item_json(i, now=now) for i in items])
        return ExitCode.OK
    for i in items:
        print(_item_line(i, now=now))
    if not items:
        print("no break-glass" + (f" on {ref.kind} {ref.namespace}/{ref.name}" if ref else ""))
    return ExitCode.OK


# ---------------------------------------------------------------- end and expire


def _targets(args: argparse.Namespace) -> tuple[Config | None, tuple[Target, ...]]:
    if not args.backport:
        return None, ()
    return targets_from_args(args)


def _backport_for(
    args: argparse.Namespace, cfg: Config | None, targets: Sequence[Target], workdir: Path
) -> flow.BackportFor:
    def backport_for(item: flow.Held) -> flow.Backport | None:
        if cfg is None or args.target:
            target: Target | None = targets[0]
        else:
            target = flow.matching_target(item, targets)
        if target is None:
            return None
        run = TargetRun(
            spec=spec_for(target, incident=args.incident),
            edges=edges_for(args, cfg, target),
            options=CycleOptions(workdir=workdir, dry_run=args.dry_run),
        )
        return flow.cycle_backport(run)

    return backport_for


def _report(ended: Sequence[flow.Ended], *, output: str) -> int:
    if output == "json":
        _print_json([
            {"controller": e.held.kind.name, "namespace": e.held.ref.namespace, "name": e.held.ref.name,
             "restored": e.restored, "failed": e.failed, "detail": e.detail,
             "pullRequests": [{"outcome": str(r.outcome), "url": r.url, "detail": r.detail} for r in e.results]}
            for e in ended
        ])  # fmt: skip
    else:
        for e in ended:
            for r in e.results:
                print(f"  {r.target}  {r.outcome}  {r.url or '-'}" + (f"  ({r.detail})" if r.detail else ""))
            state = "FAILED: " if e.failed else ""
            print(f"{e.held.kind.name}  {e.held.name}  {state}{e.detail}")
    return ExitCode.FAILED if any(e.failed for e in ended) else ExitCode.OK


def _workdir(args: argparse.Namespace, cfg: Config | None, tmp: str) -> Path:
    return Path(args.workdir or (Path(cfg.state_dir) / "repos" if cfg and cfg.state_dir else tmp))


def cmd_end(args: argparse.Namespace) -> int:
    ref = _ref(args)
    assert ref is not None
    objects = _objects(args)
    item = flow.get_held(objects=objects, ref=ref)
    if item is None:
        raise InputError(f"{ref.kind} {ref.namespace}/{ref.name} is not in break-glass")
    cfg, targets = _targets(args)
    with tempfile.TemporaryDirectory(prefix="writeback-breakglass-") as tmp:
        backport = _backport_for(args, cfg, targets, _workdir(args, cfg, tmp))(item) if args.backport else None
        if args.backport and backport is None:
            names = ", ".join(t.name for t in targets)
            raise InputError(f"{args.config}: no target backports {ref.kind} {item.name} (have: {names}); "
                             "name one with --target")  # fmt: skip
        ended = flow.end(objects=objects, item=item, backport=backport, dry_run=args.dry_run)
    if not args.backport and ended.restored and args.output == "text":
        print("warning: no backport: the controller now reverts live changes that are not in Git", file=sys.stderr)
    return _report([ended], output=args.output)


def cmd_expire(args: argparse.Namespace) -> int:
    ref = _ref(args)
    objects = _objects(args)
    cfg, targets = _targets(args)
    if args.backport and cfg is None and ref is None:
        raise InputError("expire without --config backports with the repo and forge flags: name the controller "
                         "object (--argocd-app, --flux-kustomization or --flux-helmrelease)")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="writeback-breakglass-") as tmp:
        backport_for = _backport_for(args, cfg, targets, _workdir(args, cfg, tmp)) if args.backport else None
        if ref is not None:
            one = flow.get_held(objects=objects, ref=ref)
            if one is None or not one.record.expired(now=flow.now_utc()):
                if args.output == "json":
                    return _report([], output="json")
                print(f"{ref.kind} {ref.namespace}/{ref.name}: no expired break-glass")
                return ExitCode.OK
            backport = backport_for(one) if backport_for is not None else None
            ended = [flow.end(objects=objects, item=one, backport=backport, dry_run=args.dry_run)]
        else:
            ended = flow.expire_due(objects=objects, backport_for=backport_for, namespace=_scope(args),
                                    dry_run=args.dry_run)  # fmt: skip
    if not ended and args.output == "text":
        print("no expired break-glass")
    return _report(ended, output=args.output)
