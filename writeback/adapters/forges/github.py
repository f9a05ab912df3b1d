"""GitHub as a kind of forge: its settings (a token, or a GitHub App) and its opener. The client is in
``github_api`` (PyGithub), imported only when a GitHub forge is opened."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from writeback.adapters.forges.base import Forge, ForgeSettings, Opening
from writeback.errors import ConfigError
from writeback.settings import SecretRef


class GitHubSettings(ForgeSettings):
    kind: Literal["github"] = "github"
    app_id: int | None = Field(default=None, description="GitHub App id (with private_key and installation_id)")
    private_key: SecretRef | None = None
    installation_id: int | None = None


@dataclass(frozen=True, slots=True)
class _GitHub:
    name: str = "github"
    title: str = "GitHub"
    request_name: str = "pull request"
    git_username: str = "x-access-token"
    body_limit: int = 65536
    settings: type[ForgeSettings] = GitHubSettings

    def open(self, opening: Opening) -> Forge:
        from writeback.adapters.forges.github_api import github_forge

        s = opening.settings
        assert isinstance(s, GitHubSettings)
        private_key = None
        if opening.token is None:
            if s.app_id is None or s.private_key is None:
                where = opening.flag_names.get("token") or opening.key
                raise ConfigError(f"{where}: GitHub needs token, or app_id with private_key (GitHub App)")
            private_key = opening.secret(s.private_key, f"{opening.key}.private_key")
        return github_forge(
            project=opening.project, base_url=s.url, token=opening.token, app_id=s.app_id, private_key=private_key,
            installation_id=s.installation_id, policy=opening.policy, key=f"{opening.key}.private_key", kind=self,
        )  # fmt: skip


KIND = _GitHub()
