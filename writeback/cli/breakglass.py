"""``writeback break-glass start|status|end|expire``: pause a GitOps controller's auto-sync during an incident.

``end`` and ``expire`` first backport the live state by PR (the ``run --once`` cycle, with the repo and forge
flags of ``run`` or a config target). With ``resume_after: merged`` (the default) auto-sync resumes only once
that PR is merged and the controller's source has the merge commit; ``opened`` (or ``--force``) resumes as soon
as the PR exists. The CLI parses and prints; ``writeback.breakglass.flow*`` does the work.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.controllers import ControllerObjects, default_namespace
from writeback.adapters.kube.kubeconfigs import ClusterAccess
from writeback.breakglass import flow, guards
from writeback.breakglass import record as bg
from writeback.breakglass import start as starting
from writeback.breakglass.targets import cycle_backing, matching_target
from writeback.cli import breakglass_output as output
from writeback.cli.common import edges_for, targets_from_args
from writeback.cli.exits import Tally
from writeback.cli.flags import add_repo_forge_flags, namespace_name
from writeback.cli.helptext import summary
from writeback.config import BreakGlass, Config, Target, load_config
from writeback.errors import InputError
from writeback.gitops.registry import SUSPENDABLE, describe
from writeback.kube.refs import ObjectRef
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


def _actor_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--actor", metavar="NAME", help="who acts, as recorded (default: the user the API server "
                        "authenticates (SelfSubjectReview); a kubeconfig user name is only an alias)")  # fmt: skip


def _scope_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all-namespaces", "-A", action="store_true", help="every namespace")
    parser.add_argument(
        "--namespace", "-n", "--controller-namespace", metavar="NS", type=namespace_name, dest="controller_namespace",
        help="the namespace of the controller objects (default: the kubeconfig context's)",
    )  # fmt: skip


def _backport_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backport", action=argparse.BooleanOptionalAction, default=True,
        help="open the backport PR of the live state before auto-sync resumes (default; --no-backport skips it: "
        "the controller then reverts live changes that are not in Git)",
    )  # fmt: skip
    parser.add_argument("--resume-after", choices=[str(r) for r in bg.ResumeAfter], help="resume auto-sync once "
                        "the backport PR is merged and the controller's source has it (merged, the default: "
                        "break_glass.resume_after), or as soon as it is open (opened)")  # fmt: skip
    cfg = parser.add_argument_group("configuration")
    cfg.add_argument("--config", metavar="FILE", help="the configuration file (the target to backport with)")
    cfg.add_argument("--target", metavar="NAME", help="the target of --config (default: the one whose "
                     "controller key (argocd_application, ...) names the object)")  # fmt: skip
    add_repo_forge_flags(parser)
    git = parser.add_argument_group("Git side")
    git.add_argument("--path", metavar="SUBDIR", help="the manifests' directory in the repo (default: .)")
    git.add_argument("--manifest-namespace", metavar="NS", type=namespace_name, action="append", dest="namespaces",
                     help="the namespace of manifests that name none, also snapshotted (one per flag)")  # fmt: skip
    parser.add_argument("--workdir", metavar="DIR", help="where the clones live (default: a temp dir)")
    parser.add_argument("--dry-run", action="store_true", help="no push, no API writes, auto-sync not restored")
    _actor_flag(parser)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "break-glass",
        help=summary("break-glass"),
        description="Suspend a GitOps controller's auto-sync with a reason and a TTL (recorded as an annotation on "
        "the object), list running break-glasses, and end them: the live state is backported by PR first, and "
        "auto-sync is restored exactly as it was once that PR is merged and the controller has the merge commit.",
    )
    sub = parser.add_subparsers(dest="breakglass_command", metavar="ACTION", required=True)

    p = sub.add_parser("start", help="suspend auto-sync with a reason and a TTL")
    _object_flags(p, required=True)
    p.add_argument("--reason", required=True, metavar="TEXT", help="why (shown to everyone and in the PR)")
    p.add_argument("--ttl", required=True, metavar="DURATION",
                   help="how long, e.g. 2h, 30m, 1h30m (at most break_glass.max_ttl, 24h by default)")  # fmt: skip
    p.add_argument("--incident", metavar="URL", help="the incident link")
    p.add_argument("--extend", action="store_true", help="extend a running break-glass (new TTL from now)")
    p.add_argument("--dry-run", action="store_true", help="show the patch, change nothing")
    p.add_argument("--config", metavar="FILE", help="the configuration file (break_glass.max_ttl)")
    parents = p.add_mutually_exclusive_group()
    parents.add_argument("--include-parents", action="store_true", help="also suspend the GitOps parents that "
                         "would undo it (app of apps, ApplicationSet, parent Kustomization): end restores "
                         "them")  # fmt: skip
    parents.add_argument("--ignore-parent", action="store_true",
                         help="go ahead although a GitOps parent's next sync may put auto-sync back")  # fmt: skip
    _actor_flag(p)
    _cluster_flags(p)
    p.set_defaults(func=cmd_start)

    p = sub.add_parser("status", help="list break-glass records and their remaining time")
    _object_flags(p, required=False)
    _scope_flags(p)
    _cluster_flags(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("end", help="backport the live state by PR, then restore auto-sync (merged first)")
    _object_flags(p, required=True)
    _backport_flags(p)
    p.add_argument("--force", action="store_true", help="resume auto-sync at once, before the backport PR is "
                   "merged: the controller then re-applies Git as it is and reverts the live fix")  # fmt: skip
    _cluster_flags(p)
    p.set_defaults(func=cmd_end)

    p = sub.add_parser("expire", help="end every break-glass past its TTL, and resume the ones whose PR merged")
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
    for kind in SUSPENDABLE:
        value = getattr(args, kind.flag.lstrip("-").replace("-", "_"), None)
        if value:
            return kind.ref(value)
    return None


def _scope(args: argparse.Namespace) -> str | None:
    if args.all_namespaces:
        return None
    return args.controller_namespace or default_namespace(_access(args))


# ---------------------------------------------------------------- start and status


def cmd_start(args: argparse.Namespace) -> int:
    settings = load_config(args.config).break_glass if args.config else BreakGlass()
    ttl = bg.parse_ttl(args.ttl, flag="--ttl", maximum=settings.max_ttl)
    ref = _ref(args)
    assert ref is not None  # required group
    objects = _objects(args)
    by, kube_user = guards.actor(objects, args.actor)
    parents = (
        starting.Parents.INCLUDE if args.include_parents
        else starting.Parents.IGNORE if args.ignore_parent else starting.Parents.REFUSE
    )  # fmt: skip
    now = flow.now_utc()
    started = starting.start(
        objects=objects, ref=ref, reason=args.reason, ttl=ttl, by=by, now=now, incident=args.incident,
        kube_user=kube_user, extend=args.extend, dry_run=args.dry_run, parents=parents,
    )  # fmt: skip
    return output.started(started, ttl=ttl, now=now, json_output=args.output == "json")


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
        output.print_json([output.item_json(i, now=now) for i in items])
        return Tally().exit_code()
    for i in items:
        print(output.item_line(i, now=now))
    if not items:
        print("no break-glass" + (f" on {ref.named()}" if ref else ""))
    return Tally().exit_code()


# ---------------------------------------------------------------- end and expire


def _targets(args: argparse.Namespace) -> tuple[Config | None, tuple[Target, ...]]:
    if args.backport:
        return targets_from_args(args)
    return (load_config(args.config) if args.config else None), ()


def _policy(args: argparse.Namespace, cfg: Config | None, objects: ControllerObjects) -> flow.EndPolicy:
    given = args.resume_after or (cfg.break_glass if cfg else BreakGlass()).resume_after
    by, _ = guards.actor(objects, args.actor)
    return flow.EndPolicy(resume_after=bg.ResumeAfter(given), force=bool(getattr(args, "force", False)), by=by)


def _backing_for(
    args: argparse.Namespace, cfg: Config | None, targets: Sequence[Target], workdir: Path
) -> flow.BackingFor:
    def backing_for(item: flow.Held) -> flow.Backing | None:
        target = targets[0] if cfg is None or args.target else matching_target(item, targets)
        if target is None:
            return None
        return cycle_backing(
            TargetRun(
                spec=spec_for(target, incident=args.incident),
                edges=edges_for(args, cfg, target),
                options=CycleOptions(workdir=workdir, dry_run=args.dry_run),
            )
        )

    return backing_for


def _workdir(args: argparse.Namespace, cfg: Config | None, tmp: str) -> Path:
    return Path(args.workdir or (Path(cfg.state_dir) / "repos" if cfg and cfg.state_dir else tmp))


def cmd_end(args: argparse.Namespace) -> int:
    ref = _ref(args)
    assert ref is not None
    objects = _objects(args)
    item = flow.get_held(objects=objects, ref=ref)
    if item is None:
        raise InputError(f"{ref.named()} is not in break-glass")
    if item.record.held_for is not None:
        raise InputError(f"{describe(ref)} was suspended as the parent of {describe(item.record.held_for)}: "
                         "end that one (it restores its parents too)")  # fmt: skip
    cfg, targets = _targets(args)
    policy = _policy(args, cfg, objects)
    with tempfile.TemporaryDirectory(prefix="writeback-breakglass-") as tmp:
        backing = _backing_for(args, cfg, targets, _workdir(args, cfg, tmp))(item) if args.backport else None
        if args.backport and backing is None:
            names = ", ".join(t.name for t in targets)
            raise InputError(f"{args.config}: no target backports {ref.named()} (have: {names}); "
                             "name one with --target")  # fmt: skip
        ended = flow.end(objects=objects, item=item, backing=backing, policy=policy, dry_run=args.dry_run)
    output.warn_resumed(ended, backport=args.backport, policy=policy)
    return output.report([ended], json_output=args.output == "json")


def cmd_expire(args: argparse.Namespace) -> int:
    ref = _ref(args)
    objects = _objects(args)
    cfg, targets = _targets(args)
    if args.backport and cfg is None and ref is None:
        raise InputError("expire without --config backports with the repo and forge flags: name the controller "
                         "object (--argocd-app, --flux-kustomization or --flux-helmrelease)")  # fmt: skip
    policy = _policy(args, cfg, objects)
    if ref is not None:
        one = flow.get_held(objects=objects, ref=ref)
        found = [one] if one is not None else []
    else:
        found = flow.held(objects=objects, namespace=_scope(args))
    with tempfile.TemporaryDirectory(prefix="writeback-breakglass-") as tmp:
        backing_for = _backing_for(args, cfg, targets, _workdir(args, cfg, tmp)) if args.backport else None
        ended = flow.sweep(objects=objects, found=found, backing_for=backing_for, policy=policy, dry_run=args.dry_run)
    if not ended and args.output == "text":
        print(f"{ref.named()}: no expired break-glass" if ref else "no expired break-glass")
    for e in ended:
        output.warn_resumed(e, backport=args.backport, policy=policy)
    return output.report(ended, json_output=args.output == "json")
