"""Open the configured forge: read its secrets (env var or file), derive the project from the repo URL, and hand
the rest to the forge's kind (``registry``)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from writeback.adapters.forges.base import Forge, ForgeSettings, Opening, RetryPolicy
from writeback.adapters.forges.registry import by_name
from writeback.errors import ConfigError
from writeback.settings import SecretRef

_SCP = re.compile(r"^[\w.-]+@[\w.-]+:(?P<path>.+)$")  # git@github.com:owner/name.git


def read_secret(ref: SecretRef, *, key: str, environ: Mapping[str, str] | None = None) -> str:
    """The value a SecretRef points at; the error names the config key, never the value."""
    env = os.environ if environ is None else environ
    if ref.env:
        value = env.get(ref.env)
        if not value:
            raise ConfigError(f"{key}: the environment variable {ref.env} is not set")
        return value.strip()
    assert ref.file is not None
    try:
        return Path(ref.file).read_text(encoding="utf-8").strip()
    except OSError as e:
        raise ConfigError(f"{key}: cannot read {ref.file}: {e.strerror}") from e
    except UnicodeDecodeError as e:  # the message names the file, never its bytes
        raise ConfigError(f"{key}: {ref.file} is not UTF-8 text") from e


def derive_project(repo_url: str) -> str | None:
    """``owner/name`` (GitHub) or ``group/.../project`` (GitLab) from an https or scp-like git URL."""
    m = _SCP.match(repo_url)
    if m:
        path = m["path"]
    elif re.match(r"^(https?|ssh)://", repo_url):
        path = re.sub(r"^(https?|ssh)://[^/]+/", "", repo_url)
    else:
        return None  # a local path
    path = path.strip("/").removesuffix(".git")
    return path if path.count("/") >= 1 else None


def open_forge(
    forge: ForgeSettings,
    *,
    repo_url: str,
    key: str,
    policy: RetryPolicy | None = None,
    environ: Mapping[str, str] | None = None,
    names: Mapping[str, str] | None = None,
) -> Forge:
    """The forge of a target (``key`` is the config key path, for errors; ``names``: what errors call a sub-key
    instead, e.g. ``{"project": "--forge-project"}`` for a target built from flags)."""

    def name(sub: str) -> str:
        return (names or {}).get(sub) or f"{key}.{sub}"

    policy = policy or RetryPolicy(
        max_retries=forge.max_retries,
        max_wait_seconds=forge.max_wait_seconds,
        backoff_factor=forge.backoff_seconds,
        throttle=forge.throttle,
        timeout_seconds=forge.timeout_seconds,
    )
    project = forge.project or derive_project(repo_url)
    if not project:
        raise ConfigError(f"{name('project')}: cannot derive it from repo_url {repo_url!r}; set it (owner/name)")
    token = read_secret(forge.token, key=name("token"), environ=environ) if forge.token else None
    opening = Opening(
        settings=forge, project=project, token=token, policy=policy, key=key, flag_names=names or {},
        secret=lambda ref, where: read_secret(ref, key=where, environ=environ),
    )  # fmt: skip
    return by_name(forge.kind).open(opening)


def git_token(forge: Forge) -> tuple[str, str] | None:
    """(username, token) for git over HTTPS with the forge's credentials."""
    token = forge.git_token()
    return (forge.kind.git_username, token) if token else None
