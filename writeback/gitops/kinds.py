"""The GitOps controller kinds, defined once: what writeback reads (revisions) and break-glass suspends.

Argo CD: Application (auto-sync is ``spec.syncPolicy.automated``) and ApplicationSet (a parent: it re-applies
its Applications unless ``spec.ignoreApplicationDifferences`` covers their ``syncPolicy``).
Flux: Kustomization and HelmRelease (``spec.suspend``), and GitRepository (the source whose artifact revision
says which commit the controller has).
"""

from __future__ import annotations

from dataclasses import dataclass

from writeback.errors import InputError
from writeback.kube.refs import ObjectRef


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerKind:
    """One kind of GitOps controller object."""

    name: str  # "argocd" | "argocd-applicationset" | "flux-kustomization" | "flux-helmrelease" | ...
    flag: str  # the CLI flag that names one ("" when none does)
    api_version: str
    kind: str
    path: tuple[str, ...]  # the field that holds auto-sync (break-glass changes only this field)

    @property
    def group(self) -> str:
        return self.api_version.partition("/")[0]

    @property
    def title(self) -> str:
        """``Argo CD Application``, ``Flux Kustomization``: how messages name the kind."""
        return ("Argo CD " if self.group == "argoproj.io" else "Flux ") + self.kind

    def ref(self, text: str) -> ObjectRef:
        """``NAMESPACE/NAME`` -> the object's ref; an InputError naming the flag otherwise."""
        ns, sep, name = text.partition("/")
        if not sep or not ns or not name or "/" in name:
            raise InputError(f"{self.flag or self.kind} {text!r}: expected NAMESPACE/NAME")
        return self.at(namespace=ns, name=name)

    def at(self, *, namespace: str, name: str) -> ObjectRef:
        return ObjectRef(api_version=self.api_version, kind=self.kind, namespace=namespace, name=name)

    def matches(self, ref: ObjectRef) -> bool:
        return (self.group, self.kind) == (ref.group, ref.kind)


ARGOCD = ControllerKind(
    name="argocd", flag="--argocd-app", api_version="argoproj.io/v1alpha1", kind="Application",
    path=("spec", "syncPolicy", "automated"),
)  # fmt: skip
ARGOCD_APPLICATIONSET = ControllerKind(
    name="argocd-applicationset", flag="", api_version="argoproj.io/v1alpha1", kind="ApplicationSet",
    path=("spec", "ignoreApplicationDifferences"),
)  # fmt: skip
FLUX_KUSTOMIZATION = ControllerKind(
    name="flux-kustomization", flag="--flux-kustomization", api_version="kustomize.toolkit.fluxcd.io/v1",
    kind="Kustomization", path=("spec", "suspend"),
)  # fmt: skip
FLUX_HELMRELEASE = ControllerKind(
    name="flux-helmrelease", flag="--flux-helmrelease", api_version="helm.toolkit.fluxcd.io/v2", kind="HelmRelease",
    path=("spec", "suspend"),
)  # fmt: skip
FLUX_GITREPOSITORY = ControllerKind(
    name="flux-gitrepository", flag="", api_version="source.toolkit.fluxcd.io/v1", kind="GitRepository",
    path=("spec", "suspend"),
)  # fmt: skip

# the kinds a person can break-glass by flag (status and expire list these)
SUSPENDABLE: tuple[ControllerKind, ...] = (ARGOCD, FLUX_KUSTOMIZATION, FLUX_HELMRELEASE)
# the kinds that may hold a break-glass record: the above, and the parents --include-parents suspends
RECORDED: tuple[ControllerKind, ...] = (*SUSPENDABLE, ARGOCD_APPLICATIONSET)
KNOWN: tuple[ControllerKind, ...] = (*RECORDED, FLUX_GITREPOSITORY)


def title_of(ref: ObjectRef) -> str:
    """``Argo CD Application``, ``Flux GitRepository``; the bare kind for any other object."""
    return next((k.title for k in KNOWN if k.matches(ref)), ref.kind)


def kind_of(ref: ObjectRef) -> ControllerKind:
    for k in RECORDED:
        if k.matches(ref):
            return k
    raise InputError(f"{ref}: break-glass works on Argo CD Applications and Flux Kustomizations/HelmReleases")
