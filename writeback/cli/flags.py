"""The flags shared by ``diff``, ``plan``, ``run`` and ``break-glass``: where live and Git come from, the output
format, one target's repo and forge without a config file, and the names errors give the settings flags set."""

from __future__ import annotations

import argparse
import re
from typing import Any

from writeback.gitops.registry import SUSPENDABLE
from writeback.sources import registry as sources
from writeback.sources.base import OptionKind

STDIN = "-"  # ``--live -``: the dump comes on standard input


def add_source_flags(parser: argparse.ArgumentParser, *, repo: bool = True) -> None:
    """--config/--target, the live side (--live or a cluster), the Git side, namespaces and revision
    (``repo``: with ``--repo``, the local checkout; ``run`` clones the repository itself)."""
    g = parser.add_argument_group("configuration")
    g.add_argument("--config", metavar="FILE", help="the configuration file (settings per target)")
    g.add_argument("--target", metavar="NAME", help="the target of --config to use (needed if it has several)")
    live = parser.add_argument_group("live side (one of)")
    live.add_argument(
        "--live", metavar="PATH",
        help="offline: a file or directory of `kubectl get -o yaml --show-managed-fields` dumps; - reads the dump "
        "from standard input",
    )  # fmt: skip
    live.add_argument(
        "--kubeconfig", metavar="PATH", help="kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)"
    )
    live.add_argument("--context", metavar="NAME", help="kubeconfig context (default: the current one)")
    live.add_argument(
        "--all-namespaces", "-A", action="store_true",
        help="compare Git's kinds in every namespace (offline: every namespace of the dump), not only in the "
        "namespaces Git uses and -n names: objects created elsewhere show as new",
    )  # fmt: skip
    live.add_argument(
        "--kinds", metavar="KIND[,KIND...]", type=kind_names, action="extend",
        help="compare only these kinds, by kubectl's names (deploy,cm,Service,clusterissuers.cert-manager.io); "
        "with --live, a kind named here that the dump does not hold reads as deleted (without --kinds, a kind the "
        "dump holds no object of is not compared)",
    )  # fmt: skip
    live.add_argument(
        "--allow-empty-live",
        action="store_true",
        help="--live: a dump with nothing to compare is expected (else an input error: all of Git would be deleted)",
    )
    git = parser.add_argument_group("Git side")
    if repo:
        git.add_argument("--repo", metavar="DIR", help="the local Git repository with the manifests (default: the "
                         "repository the current directory is in, found as git finds it; else .)")  # fmt: skip
        git.add_argument("--path", metavar="SUBDIR", help="the manifests' directory (or one manifest file) in the "
                         "repository; relative to the current directory, as git's paths are (default: the current "
                         "directory); with --repo, relative to it (default: its top)")  # fmt: skip
    else:
        git.add_argument("--path", metavar="SUBDIR", help="the manifests' directory (or one manifest file) in the "
                         "repository (default: its top)")  # fmt: skip
    add_namespace_flag(git, help="the namespace of manifests that name none, also snapshotted (one namespace per "
                       "-n; the first is the default)")  # fmt: skip
    git.add_argument("--revision", metavar="REV", help="compare with this commit (default: the controller's, HEAD)")
    for controller in SUSPENDABLE:
        if controller.flag:
            git.add_argument(controller.flag, metavar="NS/NAME", dest=flag_dest(controller.flag), help=controller.help)
    git.add_argument(
        "--source",
        choices=sources.names(),
        help="how the manifests are produced (default: the target's, else the first kind that claims the target: the "
        "controller object it follows, or its --path)",
    )
    for option in sources.options():
        action = "append" if option.kind is OptionKind.LIST else "store"
        git.add_argument(option.flag, metavar=option.metavar, dest=flag_dest(option.flag), help=option.help,
                         action=action)  # fmt: skip
    git.add_argument("--page-size", type=int, default=None, metavar="N", help=argparse.SUPPRESS)


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def namespace_name(text: str) -> str:
    """``-n``'s value: one namespace name, a DNS-1123 label (as the API server validates it)."""
    if len(text) > 63 or not _DNS_LABEL.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a namespace name: lower-case letters, digits and '-', starting and ending with a "
            "letter or digit, at most 63 characters (RFC 1123 label)"
        )
    return text


def kind_names(text: str) -> list[str]:
    """``--kinds``' value: kind names, comma or space separated."""
    from writeback.kube.kindnames import split_names

    names = list(split_names(text))
    if not names:
        raise argparse.ArgumentTypeError("name at least one kind")
    return names


def add_namespace_flag(parser: Any, *, help: str, dest: str = "namespaces") -> None:
    """``--namespace/-n NS``: one validated namespace per ``-n`` (as kubectl), repeatable where ``dest`` collects."""
    parser.add_argument("--namespace", "-n", metavar="NS", type=namespace_name, action="append", dest=dest, help=help)


def add_format_flag(parser: argparse.ArgumentParser) -> None:
    """``--output/-o text|json|yaml``: json and yaml print the versioned document (``cli.documents``)."""
    parser.add_argument("--output", "-o", choices=("text", "json", "yaml"), default="text",
                        help="output format: text, or the versioned document (apiVersion writeback/v1) as json or "
                        "yaml")  # fmt: skip


def add_output_flags(parser: argparse.ArgumentParser) -> None:
    add_format_flag(parser)
    parser.add_argument(
        "--explain", action="store_true",
        help="also name the rule that decided each drift, and list every dropped field and its rule",
    )  # fmt: skip
    from writeback.cli.exits import actionable_words

    parser.add_argument("--exit-code", action="store_true", help=f"exit 1 on drift: {actionable_words()}")


def flag_dest(flag: str) -> str:
    """The argparse destination of a ``--long-flag``: ``long_flag``."""
    return flag.removeprefix("--").replace("-", "_")


# ---------------------------------------------------------------- repo and forge flags (run, break-glass)

# What errors call a setting of a target built from flags: the flag that set it, not a config key.
FLAG_NAMES: dict[str, str] = {
    "name": "--path (the target is named after it)",
    "repo_url": "--repo-url",
    "base": "--base",
    "path": "--path",
    "namespace": "--namespace",
    "revision": "--revision",
    **{c.config_key: c.flag for c in SUSPENDABLE if c.config_key and c.flag},
    "source": "--source",
    **{o.config_key: o.flag for o in sources.options()},
    "forge": "--forge",
    "forge.kind": "--forge",
    "forge.url": "--forge-url",
    "forge.project": "--forge-project",
    "forge.token": "--token-env",
    "forge.token.env": "--token-env",
}


def add_repo_forge_flags(parser: argparse.ArgumentParser) -> None:
    """The repo and forge of one target without a config file (``run``, ``break-glass``)."""
    from writeback.adapters.forges import registry as forges

    g = parser.add_argument_group("repo and forge (without --config)")
    g.add_argument("--repo-url", metavar="URL", help="what git clones and pushes to: https, ssh or a local path")
    g.add_argument("--base", metavar="BRANCH", help="the base branch pull requests target (default: main)")
    g.add_argument("--forge", choices=forges.names(), help="where pull/merge requests are opened")
    g.add_argument("--forge-url", metavar="URL", help="API base: GitHub Enterprise or self-hosted GitLab")
    g.add_argument("--forge-project", metavar="OWNER/NAME", help="the forge project (default: derived from --repo-url)")
    g.add_argument("--token-env", metavar="VAR", help="environment variable holding the forge token")
    g.add_argument("--incident", metavar="TEXT", help="incident link or rationale for the PR body")
