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
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    Field,
    PlainSerializer,
    ValidationError,
    WithJsonSchema,
    create_model,
    field_validator,
    model_validator,
)

from writeback.adapters.forges.base import ForgeSettings
from writeback.adapters.forges.registry import FORGES
from writeback.config_errors import KeyProblem, Positions, key_problems, yaml_positions
from writeback.durations import DurationError, format_duration, parse_duration
from writeback.errors import ConfigError, YamlError
from writeback.gitops.base import GitOpsController
from writeback.gitops.registry import SUSPENDABLE
from writeback.settings import ClusterSettings, IgnoreRule, Policy, SecretRef, Selector, SettingsModel
from writeback.sources.base import OptionKind
from writeback.sources.registry import SOURCES, options
from writeback.sources.registry import names as source_names
from writeback.yaml.reading import load_all

_NAME = re.compile(r"^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$")


class Git(SettingsModel):
    author_name: str = "writeback[bot]"
    author_email: str = "writeback@users.noreply.localhost"
    signoff: bool = False
    ssh_key: SecretRef | None = None
    protected_branches: tuple[str, ...] = Field(
        default=("main", "master", "release/*", "release-*"),
        description="glob patterns of branches the bot never pushes to (the base branch never, whatever this says)",
    )


class PullRequest(SettingsModel):
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


class Schedule(SettingsModel):
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


class TargetSettings(SettingsModel):
    """One target's settings; ``Target`` adds a key per registered GitOps controller (``argocd_application``, ...)
    and per option a registered source kind takes (``chart_cache``, ``kube_version``)."""

    name: Annotated[str, Field(description="slug: lowercase letters, digits, '.', '_' and '-'")]
    cluster: str | None = None
    selectors: tuple[Selector, ...] = ()
    repo_url: str
    base: str = "main"
    path: str = "."
    source: str | None = Field(
        default=None,
        description="how the manifests are produced ("
        + "; ".join(f"{s.name}: {s.help}" for s in SOURCES)
        + "); unset: the first that claims the path (kustomize if it holds a kustomization, else plain)",
        json_schema_extra={"enum": [*source_names(), None]},
    )
    edit_base: bool = Field(default=False, description="kustomize: edit the shared base instead of the overlay")
    namespace: str | None = None
    forge: ForgeSettings | None = None
    git: Git = Git()
    pull_request: PullRequest = PullRequest()
    schedule: Schedule = Schedule()
    policy: Policy = Policy()
    ignore: tuple[IgnoreRule, ...] = ()
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

    @field_validator("source")
    @classmethod
    def _source(cls, v: str | None) -> str | None:
        if v is not None and v not in source_names():
            raise ValueError(f"unknown source {v!r}: one of {', '.join(source_names())}")
        return v

    @field_validator("name")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be a slug: lowercase letters, digits, '.', '_' and '-'")
        if ".." in v or v.endswith(".lock"):  # it names the bot branch: git refuses these in ref names
            raise ValueError("must not contain '..' or end in '.lock' (it is part of a git branch name)")
        return v

    def controller_objects(self) -> tuple[tuple[GitOpsController, str], ...]:
        """The GitOps controller objects this target names, by their config keys: (kind, ``NAMESPACE/NAME``)."""
        found = ((c, getattr(self, c.config_key, None)) for c in SUSPENDABLE if c.config_key)
        return tuple((c, value) for c, value in found if isinstance(value, str))


def _forge_field() -> Any:
    """``forge``: the registered forges' settings models, told apart by ``kind``."""
    models = tuple(f.settings for f in FORGES)
    union = models[0] if len(models) == 1 else Annotated[Union[models], Field(discriminator="kind")]  # noqa: UP007
    return (union | None, Field(default=None, json_schema_extra=_forge_schema))


def _forge_schema(schema: dict[str, Any]) -> None:
    """The schema names the known kinds on ``kind`` itself, so that a wrong kind is reported there."""
    for option in schema.get("anyOf", ()):
        if "oneOf" in option:
            option.update(type="object", required=["kind"], properties={"kind": {"enum": [f.name for f in FORGES]}})


if TYPE_CHECKING:
    Target = TargetSettings
else:
    Target = create_model(
        "Target",
        __base__=TargetSettings,
        __module__=__name__,
        forge=_forge_field(),
        **{
            c.config_key: (str | None, Field(default=None, description=f"namespace/name of the {c.title}"))
            for c in SUSPENDABLE
            if c.config_key
        },
        **{
            o.config_key: (tuple[str, ...], Field(default=(), description=o.help))
            if o.kind is OptionKind.LIST
            else (str | None, Field(default=None, description=o.help))
            for o in options()
        },
    )


class MetricsSettings(SettingsModel):
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


class Leader(SettingsModel):
    enabled: bool = False
    namespace: str = "writeback"
    lease_seconds: float = Field(default=15.0, gt=0)
    identity: str | None = None


class Watch(SettingsModel):
    """Service mode: a watch-based cache per selected kind, and hotfix capture."""

    enabled: bool = Field(default=True, description="keep a watch cache (informer) instead of listing each cycle")
    capture_hotfixes: bool = Field(default=True, description="persist a person's write seen by the watch")
    debounce_seconds: float = Field(default=3.0, ge=0, description="wait this long after a write, then evaluate")
    capture_ttl_seconds: float = Field(default=7 * 86400.0, gt=0, description="forget a capture after this long")


# A duration as the file spells it (``2h``, ``30m``, ``1h30m``, ``1d``): the schema says so, and a default is shown
# that way (not as ISO 8601 ``P1D``, which the validator does not take).
Duration = Annotated[
    timedelta,
    PlainSerializer(format_duration, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "pattern": "^([0-9]+[dhmsDHMS])+$"}),
]


class BreakGlass(SettingsModel):
    """``writeback break-glass`` and the service's break-glass step."""

    max_ttl: Duration = Field(
        default=timedelta(hours=24), description="longest --ttl (2h, 30m, 1d; at most 30d)",
        json_schema_extra={"default": format_duration(timedelta(hours=24)), "examples": ["2h", "30m", "1h30m", "1d"]},
    )  # fmt: skip
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


class Config(SettingsModel):
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
    """A configuration that failed validation; ``problems``: one line per error (``FILE:LINE:COL: key: why``),
    ``details``: the same, each with its file, line, column and key path (``config_errors.KeyProblem``)."""

    def __init__(self, problems: Sequence[str], *, details: Sequence[KeyProblem] = ()) -> None:
        super().__init__("invalid configuration:\n  " + "\n  ".join(problems))
        self.problems = tuple(problems)
        self.details = tuple(details)


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
        errors = [_untagged(err) for err in e.errors()]
        items = key_problems(errors, root=Config, source=source, positions=positions, flags=flags, hidden=_hidden)
        raise InvalidConfig([str(i) for i in items], details=items) from e


def _untagged(error: Mapping[str, Any]) -> dict[str, Any]:
    """An error under ``forge`` as the file spells it: without the union's tag in its key path, and a bad or
    missing ``kind`` named as that key."""
    err: dict[str, Any] = dict(error)
    loc = tuple(err["loc"])
    kinds = {f.name for f in FORGES}
    for i in range(1, len(loc)):
        if loc[i - 1] == "forge" and loc[i] in kinds:
            loc = loc[:i] + loc[i + 1 :]
            break
    if err["type"] == "union_tag_invalid":
        known = " or ".join(repr(f.name) for f in FORGES)
        err.update(loc=(*loc, "kind"), type="literal_error", msg=f"Input should be {known}")
    elif err["type"] == "union_tag_not_found":
        err.update(loc=(*loc, "kind"), type="missing", msg="Field required")
    else:
        err["loc"] = loc
    return err


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
