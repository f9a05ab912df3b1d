"""The configuration file: one YAML document, validated with pydantic.

Every error names the key path (``targets[1].forge.auth.token``) and the problem.
The CLI flags of ``diff``/``plan``/``run`` build the same models, so the pipeline
sees one shape whichever way it was configured.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from writeback.config_errors import Positions, describe, yaml_positions
from writeback.credentials import TOKEN_NOT_NAME, looks_like_credential
from writeback.durations import DurationError, parse_duration
from writeback.errors import ConfigError, YamlError
from writeback.yaml.reading import load_all

_NAME = re.compile(r"^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
class _Model(BaseModel):
    # hide_input_in_errors: a traceback (--debug) never shows a value, which may be a pasted secret
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)


class SecretRef(_Model):
    """A secret given by reference only: an environment variable or a file."""

    env: str | None = Field(default=None, description="Name of the environment variable that holds it.")
    file: str | None = Field(default=None, description="Path of a file that holds it (trailing newline ignored).")

    @model_validator(mode="before")
    @classmethod
    def _no_inline(cls, data: Any) -> Any:
        if isinstance(data, str | bytes | int):  # never echo the value: it is likely the secret itself
            raise ValueError(
                "inline secrets are rejected: give a reference, {env: VAR_NAME} or {file: /path/to/file}, "
                "never the secret value itself"
            )
        return data

    @field_validator("env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:  # never echo the value: it may be the token itself
        if v is None:
            return v
        if looks_like_credential(v):
            raise ValueError(TOKEN_NOT_NAME)
        if not _ENV_NAME.match(v):
            raise ValueError("not an environment variable name (letters, digits and _, not starting with a digit)")
        return v

    @field_validator("file")
    @classmethod
    def _file_name(cls, v: str | None) -> str | None:
        if v is not None and "/" not in v and looks_like_credential(v):
            raise ValueError("this looks like a token, not a file path: give the path of the file that holds it")
        return v

    @model_validator(mode="after")
    def _one(self) -> SecretRef:
        if bool(self.env) == bool(self.file):
            raise ValueError("give exactly one of 'env' or 'file'")
        return self


class ClusterSettings(_Model):
    name: str
    kubeconfig: str | None = Field(default=None, description="Path of a kubeconfig; omit with in_cluster.")
    context: str | None = None
    in_cluster: bool = False


class Selector(_Model):
    """Which live resources to snapshot, by group/version/kind, namespace and labels."""

    api_version: str = Field(alias="apiVersion", description="e.g. apps/v1, v1")
    kind: str
    namespaces: tuple[str, ...] = ()
    label_selector: str | None = Field(default=None, alias="labelSelector")
    exclude: tuple[str, ...] = Field(default=(), description="names or namespace/name to leave out")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _path_patterns(v: tuple[str, ...]) -> tuple[str, ...]:
    """Check path patterns; a syntax error becomes a validation error naming the key path."""
    from writeback.errors import PathSyntaxError
    from writeback.kube.paths import parse_pattern

    for p in v:
        try:
            parse_pattern(p)
        except PathSyntaxError as e:
            raise ValueError(str(e)) from e
    return v


class IgnoreRule(_Model):
    """Paths never written back, in the path grammar, optionally narrowed to kinds/names."""

    paths: tuple[str, ...]
    kind: str | None = None
    group: str | None = None
    name: str | None = None
    namespace: str | None = None
    managers: tuple[str, ...] = Field(default=(), description="only when owned by one of these managers")
    reason: str = "matched a configured ignore rule"

    @field_validator("paths")
    @classmethod
    def _paths(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _path_patterns(v)


class Policy(_Model):
    """Which managers' changes are written back. Defaults are documented in the README."""

    controller_managers: tuple[str, ...] = Field(
        default=(
            "kube-controller-manager",
            "horizontal-pod-autoscaler",
            "keda-operator",
            "vpa-updater",
            "vpa-recommender",
            "cluster-autoscaler",
            "clusterrole-aggregation-controller",
            "gotk-*",
            "source-controller",
        ),
        description="glob patterns of managers whose fields are never written back (gotk-* and source-controller: "
        "Flux's own status and finalizers on its Kustomizations, HelmReleases and sources)",
    )
    gitops_managers: tuple[str, ...] = Field(
        default=(
            "argocd-controller",
            "argocd-application-controller",
            "kustomize-controller",
            "helm-controller",
            "writeback-dryrun",
        ),
        description="glob patterns of the GitOps controller's own managers (pending or failed sync)",
    )
    extra_controller_managers: tuple[str, ...] = ()
    flag_paths: tuple[str, ...] = Field(default=(), description="extra security-sensitive paths (flag)")
    sensitive_paths: tuple[str, ...] = Field(default=(), description="paths whose values are redacted")
    presets: tuple[str, ...] = Field(default=("istio", "linkerd", "vault"), description="webhook presets on")
    include_secrets: bool = False
    allowed_registries: tuple[str, ...] = ()
    write_unattributed: bool = Field(
        default=False,
        description="write back drift of live objects without managedFields (no evidence of who made it)",
    )

    @field_validator("flag_paths", "sensitive_paths")
    @classmethod
    def _paths(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _path_patterns(v)


class ForgeSettings(_Model):
    kind: Literal["github", "gitlab"]
    url: str | None = Field(default=None, description="API base for GitHub Enterprise or self-hosted GitLab")
    project: str | None = Field(default=None, description="owner/name (GitHub) or group/project (GitLab)")
    token: SecretRef | None = None
    app_id: int | None = Field(default=None, description="GitHub App id (with private_key and installation_id)")
    private_key: SecretRef | None = None
    installation_id: int | None = None
    max_wait_seconds: float = Field(default=60.0, ge=0)
    max_retries: int = Field(default=5, ge=0, description="retries of a failed or rate-limited forge request")
    backoff_seconds: float = Field(default=0.5, ge=0, description="backoff factor between retries (0: none)")
    throttle: bool = Field(default=True, description="PyGithub's pause between requests (GitHub's guidance)")
    timeout_seconds: float = Field(default=15.0, gt=0, description="one forge request's connect and read timeout")


class Git(_Model):
    author_name: str = "writeback[bot]"
    author_email: str = "writeback@users.noreply.localhost"
    signoff: bool = False
    ssh_key: SecretRef | None = None
    protected_branches: tuple[str, ...] = Field(
        default=("main", "master", "release/*", "release-*"),
        description="glob patterns of branches the bot never pushes to (the base branch never, whatever this says)",
    )


class PullRequest(_Model):
    labels: tuple[str, ...] = ("writeback",)
    security_labels: tuple[str, ...] = ("security-review",)
    reviewers: tuple[str, ...] = ()
    assignees: tuple[str, ...] = ()
    draft: bool = False
    branch_template: str = "writeback/{target}/{changeset}"
    templates_dir: str | None = None
    reopen_closed: bool = Field(default=False, description="reopen a PR a person closed for the same fingerprint")
    incident: str | None = None
    fingerprint_key: SecretRef | None = Field(default=None, description="HMAC key for sensitive values")

    @field_validator("branch_template")
    @classmethod
    def _branch(cls, v: str) -> str:
        if "{changeset}" not in v:
            raise ValueError("must contain {changeset}: each change set needs its own branch")
        try:
            v.format(target="t", changeset="c")
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"only {{target}} and {{changeset}} can be used ({type(e).__name__}: {e})") from None
        return v


class Schedule(_Model):
    """When a target runs in service mode: every ``interval_seconds``, or on a ``cron`` line (which wins)."""

    interval_seconds: float | None = Field(default=300.0, gt=0, description="seconds between cycles")
    cron: str | None = Field(default=None, description="5-field crontab line (UTC); replaces the interval")
    jitter_seconds: float = Field(default=10.0, ge=0, description="random delay added to each run")
    retry_initial_seconds: float = Field(default=10.0, gt=0, description="first retry delay after a failed cycle")
    retry_max_seconds: float = Field(default=600.0, gt=0, description="cap of the exponential retry delay")

    @field_validator("cron")
    @classmethod
    def _cron(cls, v: str | None) -> str | None:
        if v is not None:
            from apscheduler.triggers.cron import CronTrigger

            try:
                CronTrigger.from_crontab(v, timezone="UTC")
            except ValueError as e:
                raise ValueError(f"not a valid crontab line ({e})") from None
        return v

    @model_validator(mode="after")
    def _when(self) -> Schedule:
        if self.cron is None and self.interval_seconds is None:
            raise ValueError("give 'interval_seconds' or 'cron'")
        return self


class Target(_Model):
    name: Annotated[str, Field(description="slug: lowercase letters, digits, '.', '_' and '-'")]
    cluster: str | None = None
    selectors: tuple[Selector, ...] = ()
    repo_url: str
    base: str = "main"
    path: str = "."
    source: Literal["plain", "kustomize", "markers"] | None = Field(
        default=None, description="how the manifests are produced; unset: kustomize if path holds a kustomization"
    )
    edit_base: bool = Field(default=False, description="kustomize: edit the shared base instead of the overlay")
    namespace: str | None = None
    forge: ForgeSettings | None = None
    git: Git = Git()
    pull_request: PullRequest = PullRequest()
    schedule: Schedule = Schedule()
    policy: Policy = Policy()
    ignore: tuple[IgnoreRule, ...] = ()
    argocd_application: str | None = Field(default=None, description="namespace/name of the Argo CD Application")
    flux_kustomization: str | None = Field(default=None, description="namespace/name of the Flux Kustomization")
    revision: str | None = None

    @field_validator("repo_url")
    @classmethod
    def _no_credentials(cls, v: str) -> str:
        parts = urlsplit(v)
        if (parts.scheme in ("http", "https") and "@" in parts.netloc) or parts.password is not None:
            raise ValueError(  # never echo the URL: it holds the credential
                "credentials in the URL are rejected: give the token by reference (forge.token: {env: VAR_NAME})"
            )
        return v

    @field_validator("name")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be a slug: lowercase letters, digits, '.', '_' and '-'")
        if ".." in v or v.endswith(".lock"):  # it names the bot branch: git refuses these in ref names
            raise ValueError("must not contain '..' or end in '.lock' (it is part of a git branch name)")
        return v


class MetricsSettings(_Model):
    """The HTTP server for /metrics, /healthz and /readyz (service mode only)."""

    address: str = Field(default="0.0.0.0:9090", description="host:port to listen on (port 0: any free port)")
    ready_intervals: float = Field(default=3.0, gt=0, description="/readyz fails when a cycle is older than this")
    persistent_cycles: int = Field(default=3, ge=1, description="drift seen this many cycles counts as persistent")

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        host, sep, port = v.rpartition(":")
        if not sep or not host or not port.isdigit() or int(port) > 65535:
            raise ValueError("must be host:port, e.g. 0.0.0.0:9090")
        return v


class Leader(_Model):
    enabled: bool = False
    namespace: str = "writeback"
    lease_seconds: float = Field(default=15.0, gt=0)
    identity: str | None = None


class Watch(_Model):
    """Service mode: a watch-based cache per selected kind, and hotfix capture."""

    enabled: bool = Field(default=True, description="keep a watch cache (informer) instead of listing each cycle")
    capture_hotfixes: bool = Field(default=True, description="persist a person's write seen by the watch")
    debounce_seconds: float = Field(default=3.0, ge=0, description="wait this long after a write, then evaluate")
    capture_ttl_seconds: float = Field(default=7 * 86400.0, gt=0, description="forget a capture after this long")


class BreakGlass(_Model):
    """``writeback break-glass`` and the service's break-glass step."""

    max_ttl: timedelta = Field(default=timedelta(hours=24), description="longest --ttl (2h, 30m, 1d; at most 30d)")
    resume_after: Literal["merged", "opened"] = Field(
        default="merged",
        description="when auto-sync resumes after `end`: once the backport PR is merged and the controller's "
        "source has the merge commit, or as soon as the PR is open (the controller then reverts the hotfix)",
    )

    @field_validator("max_ttl", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> Any:
        if not isinstance(v, str):
            raise ValueError("expected a duration such as 2h, 30m, 1h30m or 1d")
        try:
            return parse_duration(v)
        except DurationError as e:
            raise ValueError(f"{v!r}: {e}") from e


class Config(_Model):
    clusters: tuple[ClusterSettings, ...] = ()
    targets: tuple[Target, ...]
    metrics: MetricsSettings = MetricsSettings()
    leader: Leader = Leader()
    watch: Watch = Watch()
    break_glass: BreakGlass = BreakGlass()
    state_dir: str | None = Field(default=None, description="directory for durable state (hotfix captures)")
    state_configmap: str | None = Field(
        default=None, description="namespace/name of a ConfigMap for durable state (in-cluster); never a Secret"
    )
    shutdown_grace_seconds: float = Field(
        default=30.0, ge=0, description="on SIGTERM, wait this long for the running step to finish"
    )

    @model_validator(mode="after")
    def _refs(self) -> Config:
        if not self.targets:
            raise ValueError("targets: give at least one target (the list is empty)")
        names = [t.name for t in self.targets]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"targets: target names must be unique: {', '.join(dupes)}")
        known = {c.name for c in self.clusters}
        for i, t in enumerate(self.targets):
            if t.cluster is not None and t.cluster not in known:
                raise ValueError(f"targets[{i}].cluster: unknown cluster {t.cluster!r}")
        return self


class InvalidConfig(ConfigError):
    """A configuration that failed validation; ``problems``: one line per error (``FILE:LINE:COL: key: why``)."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("invalid configuration:\n  " + "\n  ".join(problems))
        self.problems = tuple(problems)


def _hidden(models: Sequence[type[BaseModel]], loc: tuple[int | str, ...]) -> bool:
    """Where a bad value is never shown: under a secret reference, and URLs (they may hold credentials)."""
    return SecretRef in models or (bool(loc) and str(loc[-1]) in ("repo_url", "url"))


def parse_config(
    data: Any,
    *,
    source: str,
    positions: Positions | None = None,
    flags: Mapping[tuple[int | str, ...], str] | None = None,
) -> Config:
    """Validate parsed YAML; errors name ``source`` (with ``positions``: the line and column) and every bad key
    path, or the flag that set it (``flags``: key path -> flag, for a configuration built from flags)."""
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        lines = describe(e.errors(), root=Config, source=source, positions=positions, flags=flags, hidden=_hidden)
        raise InvalidConfig(lines) from e


def load_config(path: str | Path) -> Config:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the configuration file: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: the configuration file is not UTF-8 text: {e.reason}") from e
    try:
        docs = load_all(text, source=str(p))
    except YamlError as e:
        raise ConfigError(str(e)) from e
    if len(docs) > 1:
        raise ConfigError(f"{p}: the configuration must be one YAML document, not {len(docs)}")
    data = docs[0] if docs else None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: the configuration must be a mapping with a 'targets' key")
    try:
        return parse_config(data, source=str(p))
    except InvalidConfig:  # only now: where each bad key sits in the file
        return parse_config(data, source=str(p), positions=yaml_positions(text))
