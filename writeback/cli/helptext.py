"""What ``--help`` says beyond the flags: per command its examples, exit codes and the environment it reads.

One table for every command, attached to the parser tree once it is built (:func:`attach`), so that the command
modules keep to their flags and the texts live in one place.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass

from writeback.cli import exits

__all__ = ["COMMANDS", "CommandHelp", "Formatter", "attach", "epilog", "summary", "walk"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandHelp:
    summary: str = ""  # the one line ``writeback --help`` shows for the command
    examples: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()
    description: str | None = None  # only where the command module gives none


_KUBECONFIG = ("KUBECONFIG", "the kubeconfig when --kubeconfig is not given (then ~/.kube/config, then in-cluster)")
_KUSTOMIZE = ("WRITEBACK_KUSTOMIZE, WRITEBACK_HELM", "the programs source kinds run (default: kustomize, helm on PATH)")
_COLOR = ("NO_COLOR", "set and not empty: no colour with --color auto")
_TOKENS = (
    "$VAR of --token-env, {env: VAR} in the config",
    "the forge token (e.g. GITHUB_TOKEN, GITLAB_TOKEN) and other secrets, read by reference only",
)
_USER = ("USER, LOGNAME", "who started a break-glass (else the kubeconfig user)")
_LIVE = "kubectl get deploy,cm -n shop -o yaml --show-managed-fields"

_DETECT = (
    _KUBECONFIG,
    _KUSTOMIZE,
    ("$VAR of pull_request.fingerprint_key", "the HMAC key of sensitive values"),
    _COLOR,
)

COMMANDS: dict[tuple[str, ...], CommandHelp] = {
    (): CommandHelp(
        examples=(
            f"{_LIVE} | writeback diff --live - --path apps/shop",
            "writeback plan --live examples/hotfix/live.yaml --path examples/hotfix/gitops",
            "writeback run --once --config /etc/writeback/config.yaml",
            "kubectl writeback diff --path apps/shop          # the same, as a kubectl plugin",
            'eval "$(writeback completion bash)"              # tab completion (bash; zsh: completion zsh)',
        ),
        environment=(_KUBECONFIG, _KUSTOMIZE, _TOKENS, _COLOR),
    ),
    ("diff",): CommandHelp(
        summary="show the live changes and what writeback would do with each",
        examples=(
            "writeback diff --path apps/shop                  # the cluster of $KUBECONFIG against ./apps/shop",
            f"{_LIVE} | writeback diff --live - --path apps/shop",
            "writeback diff --live dumps/ --repo ~/gitops --path overlays/prod --explain",
            "writeback diff --config config.yaml --target prod --output json | jq '.drifts[].path'",
            "writeback diff --path apps/shop --exit-code || echo 'someone changed the cluster'",
        ),
        environment=_DETECT,
    ),
    ("plan",): CommandHelp(
        summary="show the patches writeback would propose, grouped in change sets (commits nothing)",
        examples=(
            "writeback plan --live examples/hotfix/live.yaml --path examples/hotfix/gitops",
            "writeback plan --path overlays/prod > pr.md      # the preview on stdout, notes on stderr",
            "writeback plan --config config.yaml --target prod --output json | jq '.changesets[].pullRequest.title'",
        ),
        environment=_DETECT,
    ),
    ("run",): CommandHelp(
        summary="one full cycle: snapshot, plan, push the bot branch, open/update/close the pull requests",
        examples=(
            "writeback run --once --config /etc/writeback/config.yaml",
            "GITHUB_TOKEN=... writeback run --once --repo-url https://github.com/acme/gitops.git --forge github \\\n"
            "    --token-env GITHUB_TOKEN --path apps/prod --exit-code",
            "writeback run --config /etc/writeback/config.yaml  # the service: every target on its schedule",
        ),
        environment=(*_DETECT[:2], _TOKENS, _COLOR),
    ),
    ("config",): CommandHelp(
        summary="validate configuration files or print their JSON Schema",
        examples=("writeback config validate config/*.yaml", "writeback config schema > writeback.schema.json"),
    ),
    ("config", "validate"): CommandHelp(
        examples=("writeback config validate config/*.yaml", "writeback config validate prod.yaml --output json"),
    ),
    ("config", "schema"): CommandHelp(
        examples=("writeback config schema > writeback.schema.json",),
    ),
    ("completion",): CommandHelp(
        summary="print the shell completion script (bash, zsh or fish)",
        examples=(
            'eval "$(writeback completion bash)"              # in ~/.bashrc',
            'writeback completion zsh > "${fpath[1]}/_writeback"  # then restart zsh',
        ),
    ),
    ("break-glass",): CommandHelp(
        summary="pause Argo CD/Flux auto-sync during an incident; backport by PR before it resumes",
        examples=(
            'writeback break-glass start --argocd-app argocd/shop --reason "checkout 500s" --ttl 2h',
            "writeback break-glass status -A",
            "writeback break-glass end --argocd-app argocd/shop --config config.yaml",
        ),
        environment=(_KUBECONFIG, _TOKENS, _USER),
    ),
    ("break-glass", "start"): CommandHelp(
        description="Suspend the auto-sync of one Argo CD Application, Flux Kustomization or HelmRelease, with a "
        "reason and a TTL. The record (who, why, the incident, the expiry and the previous setting) is an "
        "annotation on the object itself, so every tool and every colleague sees it.",
        examples=(
            'writeback break-glass start --argocd-app argocd/shop --reason "checkout 500s: FEATURE_X off" --ttl 2h',
            'writeback break-glass start --flux-kustomization flux-system/shop --reason "..." --ttl 30m --dry-run',
            'writeback break-glass start --argocd-app argocd/shop --reason "still on it" --ttl 1h --extend',
        ),
        environment=(_KUBECONFIG, _USER),
    ),
    ("break-glass", "status"): CommandHelp(
        description="List the running break-glasses: who paused what, why, the incident, and the time left.",
        examples=("writeback break-glass status -A", "writeback break-glass status --argocd-app argocd/shop -o json"),
        environment=(_KUBECONFIG,),
    ),
    ("break-glass", "end"): CommandHelp(
        description="End one break-glass: first ensure the backport pull request of the live state (as `run "
        "--once` would), and only then restore auto-sync exactly as it was. If the backport fails, auto-sync stays "
        "suspended, so the hotfix is never lost.",
        examples=(
            "writeback break-glass end --argocd-app argocd/shop --config config.yaml",
            "writeback break-glass end --argocd-app argocd/shop --repo-url https://github.com/acme/gitops.git \\\n"
            "    --forge github --token-env GITHUB_TOKEN --path apps/shop",
        ),
        environment=(_KUBECONFIG, _KUSTOMIZE, _TOKENS),
    ),
    ("break-glass", "expire"): CommandHelp(
        description="End every break-glass whose TTL has passed (in the context's namespace, or -A), each with "
        "its backport pull request first, as `end` does. Meant for a CronJob or the service.",
        examples=("writeback break-glass expire -A --config config.yaml",),
        environment=(_KUBECONFIG, _KUSTOMIZE, _TOKENS),
    ),
}


def summary(command: str) -> str:
    """The one-line help of a top-level command."""
    return COMMANDS[(command,)].summary


class Formatter(argparse.HelpFormatter):
    """Wraps prose paragraphs (descriptions) and keeps titled lists (``examples:``, ...) exactly as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for para in text.split("\n\n"):
            if para.split("\n", 1)[0].endswith(":"):
                paragraphs.append("\n".join(indent + line for line in para.splitlines()))
            else:
                paragraphs.append(super()._fill_text(para, width, indent))
        return "\n\n".join(paragraphs)


def epilog(h: CommandHelp, *, command: str = "") -> str:
    """The examples, exit codes (``exits.meanings`` of the top-level ``command``) and environment as text under the
    flags."""
    parts: list[str] = []
    if h.examples:
        parts.append("examples:\n" + "\n".join(f"  {line}" for line in h.examples))
    codes = exits.meanings(command)  # one line each, as written (the Formatter keeps titled lists)
    parts.append("exit codes:\n" + "\n".join(f"  {int(code):<4} {why}" for code, why in codes))
    if h.environment:
        width = max(len(name) for name, _ in h.environment)
        env = "\n".join(f"  {name:<{width}}  {why}" for name, why in h.environment)
        parts.append("environment:\n" + env)
    return "\n\n".join(parts)


def walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser of the tree with its command path (``()``, ``("diff",)``, ``("break-glass", "end")``)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, (*path, name))


def attach(parser: argparse.ArgumentParser, *, skip: frozenset[tuple[str, ...]] = frozenset()) -> None:
    """Give each parser of the tree its examples, exit codes and environment (and a description where missing);
    ``skip``: the commands listed by name only (their help is never printed from this tree)."""
    for path, p in walk(parser):
        h = COMMANDS.get(path)
        if h is None or path in skip:
            continue
        if h.description and not p.description:
            p.description = h.description
        p.epilog = epilog(h, command=path[0] if path else "")
        p.formatter_class = Formatter
