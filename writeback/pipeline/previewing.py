"""What ``writeback plan --output text`` shows before each diff: the PR title and body that would be opened."""

from __future__ import annotations

from collections.abc import Callable

from writeback import config
from writeback.adapters.templating import load_templates
from writeback.core.rendering import RenderInput, render
from writeback.model import ChangeSet

_LIMITS = {"github": 65536, "gitlab": 1_000_000}


def pr_preview(*, target: config.Target | None, cluster_name: str = "") -> Callable[[ChangeSet], str]:
    """A change-set renderer: ``title:`` line, then the body, indented, as the forge would receive it."""
    templates = load_templates(override_dir=target.pull_request.templates_dir if target else None)
    platform = target.forge.kind if target and target.forge else "github"

    def preview(cs: ChangeSet) -> str:
        data = RenderInput(
            change_set=cs,
            cluster=cluster_name or (target.cluster if target and target.cluster else "") or "live",
            base=target.base if target else "main",
            platform=platform,
            body_limit=_LIMITS[platform],
            incident=target.pull_request.incident if target else None,
            security_labels=target.pull_request.security_labels if target else ("security-review",),
        )
        rendered = render(templates=templates, data=data)
        body = "".join(f"    {line}".rstrip() + "\n" for line in rendered.body.splitlines())
        return f"pull request title: {rendered.title}\npull request body:\n{body}\n"

    return preview
