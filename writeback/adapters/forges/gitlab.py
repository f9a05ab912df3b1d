"""GitLab as a kind of forge: its settings (a token) and its opener. The client is in ``gitlab_api``
(python-gitlab), imported only when a GitLab forge is opened."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from writeback.adapters.forges.base import Forge, ForgeSettings, Opening
from writeback.errors import ConfigError


class GitLabSettings(ForgeSettings):
    kind: Literal["gitlab"] = "gitlab"


@dataclass(frozen=True, slots=True)
class _GitLab:
    name: str = "gitlab"
    title: str = "GitLab"
    request_name: str = "merge request"
    git_username: str = "oauth2"
    body_limit: int = 1_000_000
    settings: type[ForgeSettings] = GitLabSettings

    def open(self, opening: Opening) -> Forge:
        from writeback.adapters.forges.gitlab_api import gitlab_forge

        if opening.token is None:
            where = opening.flag_names.get("token") or f"{opening.key}.token"
            raise ConfigError(f"{where}: GitLab needs a token ({{env: VAR}} or {{file: PATH}})")
        return gitlab_forge(project=opening.project, url=opening.settings.url, token=opening.token,
                            policy=opening.policy, kind=self)  # fmt: skip


KIND = _GitLab()
