"""What a change set's pull request says: ONE builder of the render input, for ``plan``'s preview and ``run``'s PR.

    pr = PullRequestText.for_spec(spec, cluster_name="prod", forge=forge.kind)
    rendered = pr.render(change_set, verification=line, hotfixes=captured)

The preview and the real PR differ only in what only ``run`` knows: the forge it talks to (``forge``), the
server-side verification line, and the hotfixes the watch captured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from writeback import config
from writeback.adapters.forges import registry as forges
from writeback.adapters.forges.base import ForgeKind
from writeback.adapters.templating import load_templates
from writeback.config import Config
from writeback.errors import ConfigError
from writeback.model import CapturedHotfix, ChangeSet, PullRequestSpec
from writeback.pipeline.publish_settings import PublishSettings
from writeback.pipeline.targets import TargetSpec
from writeback.pr.text import Rendered, RenderInput, check_templates, render

__all__ = ["PullRequestText", "check_config_templates", "preview", "publish_settings"]


def check_config_templates(cfg: Config, *, source: str) -> None:
    """Every target's templates (packaged, or its ``templates_dir``) compile and render a sample change set, so
    that a broken template fails when the configuration loads, not when the first PR is due."""
    for i, target in enumerate(cfg.targets):
        where = f"{source}: targets[{i}].pull_request.templates_dir"
        try:
            texts = load_templates(override_dir=target.pull_request.templates_dir)
        except ConfigError as e:
            raise ConfigError(f"{source}: targets[{i}].{e}") from e
        check_templates(texts, where=where)


@dataclass(frozen=True, slots=True, kw_only=True)
class PullRequestText:
    """The templates and the settings a target's PR texts are rendered with."""

    templates: Mapping[str, str]
    cluster: str
    base: str = "main"
    forge: ForgeKind = forges.DEFAULT
    incident: str | None = None
    security_labels: tuple[str, ...] = ("security-review",)

    @classmethod
    def for_spec(cls, spec: TargetSpec, *, cluster_name: str, forge: ForgeKind | None = None) -> PullRequestText:
        """``spec``'s PR settings (templates, base, incident, security labels); ``forge``: the forge's kind
        (default: the target's configured forge, else the first registered)."""
        target = spec.target
        if forge is None:
            configured = target.forge.kind if target is not None and target.forge is not None else None
            forge = forges.by_name(configured) if configured else forges.DEFAULT
        if target is None:
            return cls(templates=load_templates(), cluster=cluster_name or "live", forge=forge,
                       incident=spec.incident)  # fmt: skip
        return cls(
            templates=load_templates(override_dir=target.pull_request.templates_dir),
            cluster=cluster_name or target.cluster or "live",
            base=target.base,
            forge=forge,
            incident=spec.incident,
            security_labels=target.pull_request.security_labels,
        )

    def render(
        self, cs: ChangeSet, *, verification: str | None = None, hotfixes: Sequence[CapturedHotfix] = ()
    ) -> Rendered:
        data = RenderInput(
            change_set=cs,
            cluster=self.cluster,
            base=self.base,
            request_name=self.forge.request_name,
            body_limit=self.forge.body_limit,
            incident=self.incident,
            verification=verification,
            security_labels=self.security_labels,
            hotfixes=tuple(hotfixes),
        )
        return render(templates=self.templates, data=data)


def publish_settings(spec: TargetSpec) -> PublishSettings:
    """The branch, labels, reviewers, assignees and draft of ``spec``'s PRs (the defaults without a config target,
    as ``run`` gives a target built from flags)."""
    if spec.target is not None:
        return PublishSettings.from_target(spec.target)
    return PublishSettings.from_pull_request(config.PullRequest(), target=spec.name)


def preview(spec: TargetSpec, cs: ChangeSet, *, cluster_name: str, verification: str | None = None) -> PullRequestSpec:
    """The pull request ``run`` would open for ``cs`` (``plan``): the same texts and settings, by the same code
    (``verification``: what plan knows of it already, a source's own proof)."""
    rendered = PullRequestText.for_spec(spec, cluster_name=cluster_name).render(cs, verification=verification)
    return publish_settings(spec).pull_request(cs, rendered)
