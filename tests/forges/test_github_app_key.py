"""A GitHub App private key that cannot sign is a config error naming the key, never an unwrapped jwt error."""

from __future__ import annotations

import pytest

from writeback import settings
from writeback.adapters.forges.github import GitHubSettings
from writeback.adapters.forges.opening import open_forge
from writeback.errors import ConfigError


def test_an_unusable_app_key_is_a_config_error() -> None:
    forge = GitHubSettings(app_id=321, installation_id=4242, private_key=settings.SecretRef(env="K"))
    with pytest.raises(ConfigError, match=r"^targets\[0\]\.forge\.private_key: cannot sign a GitHub App JWT") as e:
        open_forge(forge, repo_url="https://github.com/a/b.git", key="targets[0].forge", environ={"K": "not-a-key"})
    assert "not-a-key" not in str(e.value)
