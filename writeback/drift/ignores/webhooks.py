"""Webhook presets: what a known mutating-webhook injector (Istio, Linkerd, Vault) adds to pods. Pure.

Presets only explain fields Git does not declare (op ``add``): a person changing a declared
``sidecar.istio.io/inject`` is still drift. ``policy.presets`` chooses which are on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from writeback.kube.paths import match, parse_pattern
from writeback.kube.pathtypes import FieldPath, Key, PatternSegment
from writeback.model import Explanation, Op, Rule

__all__ = ["PRESETS", "Preset", "Presets", "choose_presets"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """What a mutating-webhook injector adds to pods and pod templates."""

    name: str
    paths: tuple[str, ...]  # patterns of whole items/fields it injects
    annotation_prefixes: tuple[str, ...] = ()
    label_prefixes: tuple[str, ...] = ()


def _pod(*items: str) -> tuple[str, ...]:
    return tuple(f"**.{i}" for i in items)


PRESETS: Mapping[str, Preset] = {
    "istio": Preset(
        name="istio",
        paths=_pod(
            "containers[name=istio-proxy]",
            "initContainers[name=istio-init]",
            "initContainers[name=istio-validation]",
            "initContainers[name=istio-proxy]",
            *(
                f"volumes[name={v}]"
                for v in (
                    "istio-envoy",
                    "istio-data",
                    "istio-podinfo",
                    "istio-token",
                    "istiod-ca-cert",
                    "workload-socket",
                    "credential-socket",
                    "workload-certs",
                )
            ),
        ),
        annotation_prefixes=(
            "sidecar.istio.io/",
            "traffic.sidecar.istio.io/",
            "status.sidecar.istio.io/",
            "istio.io/",
            "kubectl.kubernetes.io/default-container",
        ),
        label_prefixes=("security.istio.io/", "service.istio.io/", "istio.io/"),
    ),
    "linkerd": Preset(
        name="linkerd",
        paths=_pod(
            "containers[name=linkerd-proxy]",
            "initContainers[name=linkerd-init]",
            "initContainers[name=linkerd-network-validator]",
            "initContainers[name=linkerd-proxy]",
            "volumes[name=linkerd-identity-end-entity]",
            "volumes[name=linkerd-proxy-init-xtables-lock]",
            "volumes[name=linkerd-identity-token]",
        ),
        annotation_prefixes=("linkerd.io/", "viz.linkerd.io/"),
        label_prefixes=("linkerd.io/",),
    ),
    "vault": Preset(
        name="vault",
        paths=_pod(
            "containers[name=vault-agent]",
            "initContainers[name=vault-agent-init]",
            "volumes[name=home-init]",
            "volumes[name=home-sidecar]",
            "volumes[name=vault-secrets]",
            "containers[*].volumeMounts[mountPath=/vault/secrets]",
            "initContainers[*].volumeMounts[mountPath=/vault/secrets]",
        ),
        annotation_prefixes=("vault.hashicorp.com/agent-inject-status", "vault.hashicorp.com/agent-"),
    ),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Presets:
    """The enabled presets, their path patterns parsed once."""

    chosen: tuple[Preset, ...] = ()
    _patterns: tuple[tuple[tuple[PatternSegment, ...], ...], ...] = ()  # per preset, its parsed paths

    def explain(self, *, path: FieldPath, op: Op) -> Explanation | None:
        """The preset that explains an added field, or None."""
        if op is not Op.ADD:
            return None
        for preset, patterns in zip(self.chosen, self._patterns, strict=True):
            if any(match(p, path) for p in patterns) or _meta_prefix(path, preset):
                return Explanation(Rule.WEBHOOK_PRESET, f"injected by a mutating webhook ({preset.name} preset)")
        return None


def choose_presets(names: Sequence[str], *, notes: list[str]) -> Presets:
    """The presets ``names`` turns on; an unknown name becomes a note."""
    chosen: list[Preset] = []
    for name in names:
        if name in PRESETS:
            chosen.append(PRESETS[name])
        else:
            notes.append(f"unknown webhook preset {name!r} (known: {', '.join(sorted(PRESETS))})")
    return Presets(chosen=tuple(chosen), _patterns=tuple(tuple(parse_pattern(x) for x in p.paths) for p in chosen))


def _meta_prefix(path: FieldPath, preset: Preset) -> bool:
    if len(path) < 3 or not isinstance(path[-1], Key) or path[-3] != Key("metadata"):
        return False
    key, kind = path[-1].name, path[-2]
    prefixes = preset.annotation_prefixes if kind == Key("annotations") else ()
    prefixes = preset.label_prefixes if kind == Key("labels") else prefixes
    return any(key.startswith(p) for p in prefixes)
