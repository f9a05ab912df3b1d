"""The settings the lower layers take, validated with pydantic: secret references, selectors, ignore rules and the
decision policy. ``writeback.config`` builds the whole configuration file from these and the registries.

Every model is frozen, forbids unknown keys and never shows an input value in a traceback (it may be a secret).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from writeback.credentials import TOKEN_NOT_NAME, looks_like_credential
from writeback.gitops.registry import gitops_managers
from writeback.kube.wellknown import DRY_RUN_MANAGER

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SettingsModel(BaseModel):
    # hide_input_in_errors: a traceback (--debug) never shows a value, which may be a pasted secret
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)


class SecretRef(SettingsModel):
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


class ClusterSettings(SettingsModel):
    name: str
    kubeconfig: str | None = Field(default=None, description="Path of a kubeconfig; omit with in_cluster.")
    context: str | None = None
    in_cluster: bool = False


class Selector(SettingsModel):
    """Which live resources to snapshot, by group/version/kind, namespace and labels."""

    api_version: str = Field(alias="apiVersion", description="e.g. apps/v1, v1")
    kind: str
    namespaces: tuple[str, ...] = ()
    label_selector: str | None = Field(default=None, alias="labelSelector")
    exclude: tuple[str, ...] = Field(default=(), description="names or namespace/name to leave out")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("label_selector")
    @classmethod
    def _selector(cls, v: str | None) -> str | None:
        """The API server's grammar, checked when the configuration loads (offline filters match with it too)."""
        from writeback.kube.selectors import SelectorSyntaxError, parse_selector

        if v is not None:
            try:
                parse_selector(v)
            except SelectorSyntaxError as e:
                raise ValueError(str(e)) from e
        return v


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


class IgnoreRule(SettingsModel):
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


class Policy(SettingsModel):
    """Which managers' changes are written back. Defaults are documented in the README."""

    controller_managers: tuple[str, ...] = Field(
        default=(
            # the control plane's own objects and fields: Service default/kubernetes, the kube-system ConfigMaps,
            # the bootstrap RBAC, PriorityClasses and APIServices (kube-apiserver), the flow-control objects and the
            # default ServiceCIDR; they are never `new`, and their fields are never written back
            "kube-apiserver",
            "api-priority-and-fairness-config-*",
            "kubernetes-service-cidr-controller",
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
        description="glob patterns of managers whose fields are never written back, and whose objects are never "
        "new (kube-apiserver and the API server's own controllers: the objects the control plane creates itself; "
        "gotk-* and source-controller: Flux's own status and finalizers on its Kustomizations, HelmReleases and "
        "sources)",
    )
    gitops_managers: tuple[str, ...] = Field(
        default=(*gitops_managers(), DRY_RUN_MANAGER),
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
