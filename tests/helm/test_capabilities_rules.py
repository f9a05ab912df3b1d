"""The cluster's capabilities as each controller hands them to Helm, one rule per test (pure): Argo CD's version
and API versions (gitops-engine ``GetServerVersion``, ``GetAPIResources`` + ``APIResourcesToStrings``), Flux's
(Helm's ``getCapabilities``/``GetVersionSet``), what the user gives (flags, config keys) winning part by part, and
the Application's own ``helm.kubeVersion``/``apiVersions`` winning over both. The real cluster's discovery and a
render that branches on it: tests/helm/test_capabilities.py."""

from __future__ import annotations

import argparse

import pytest

from writeback.cli import build_parser
from writeback.config import parse_config
from writeback.gitops import argocd, flux
from writeback.kube.discovery import Discovery, ServedResource
from writeback.pipeline.targets import tools_for
from writeback.sources.base import Tools
from writeback.sources.helm.capabilities import ClusterFacts, for_argocd, for_flux, kube_version_of
from writeback.sources.helm.repo import Followed, releases
from writeback.sources.helm.running import _facts

LW = frozenset({"get", "list", "watch", "create", "delete"})
DISCOVERY = Discovery(
    git_version="v1.30.4+k3s1",
    group_versions=("v1", "apps/v1", "autoscaling/v2", "autoscaling/v1", "metrics.k8s.io/v1beta1"),
    preferred=("v1", "apps/v1", "autoscaling/v2"),
    resources=(
        ServedResource(group_version="v1", name="pods", kind="Pod", verbs=LW),
        ServedResource(group_version="v1", name="pods/log", kind="Pod", verbs=frozenset({"get"})),
        ServedResource(group_version="v1", name="bindings", kind="Binding", verbs=frozenset({"create"})),
        ServedResource(group_version="apps/v1", name="deployments", kind="Deployment", verbs=LW),
        ServedResource(
            group_version="apps/v1", name="deployments/scale", kind="Scale", verbs=frozenset({"get", "patch", "update"})
        ),
        ServedResource(
            group_version="autoscaling/v2", name="horizontalpodautoscalers", kind="HorizontalPodAutoscaler", verbs=LW
        ),
        ServedResource(
            group_version="autoscaling/v1", name="horizontalpodautoscalers", kind="HorizontalPodAutoscaler", verbs=LW
        ),
    ),
)


@pytest.mark.parametrize(
    ("git_version", "expected"),
    [
        ("v1.31.2", "v1.31.2"),
        ("v1.30.4+k3s1", "v1.30.4"),
        ("v1.31.2-gke.1000", "v1.31.2"),
        ("v1.29.8-eks-a737599", "v1.29.8"),
        ("1.28.3", "v1.28.3"),
        ("v1.32", "v1.32"),
    ],
)
def test_argocd_names_the_cluster_by_its_version_without_the_vendor_suffix(git_version: str, expected: str) -> None:
    assert kube_version_of(git_version) == expected


def test_argocd_passes_every_listable_and_watchable_resource_of_every_served_version() -> None:
    caps = for_argocd(DISCOVERY)

    assert caps.kube_version == "v1.30.4"
    assert caps.api_versions == (
        "apps/v1",
        "apps/v1/Deployment",
        "autoscaling/v1",
        "autoscaling/v1/HorizontalPodAutoscaler",  # not only the preferred version
        "autoscaling/v2",
        "autoscaling/v2/HorizontalPodAutoscaler",
        "v1",
        "v1/Pod",
    )  # no Binding (create only), no subresource, no group/version without such a resource (metrics)


def test_flux_passes_the_git_version_and_helms_version_set() -> None:
    caps = for_flux(DISCOVERY)

    assert caps.kube_version == "v1.30.4+k3s1"
    assert caps.api_versions == (
        "apps/v1",
        "apps/v1/Deployment",
        "apps/v1/Scale",  # a subresource's kind, as GetVersionSet joins it to its group/version
        "autoscaling/v1",
        "autoscaling/v1/HorizontalPodAutoscaler",
        "autoscaling/v2",
        "autoscaling/v2/HorizontalPodAutoscaler",
        "metrics.k8s.io/v1beta1",
        "v1",
        "v1/Binding",
        "v1/Pod",
    )


def test_nothing_known_leaves_helms_defaults_and_what_is_given_wins_part_by_part() -> None:
    assert for_argocd(None).kube_version is None and for_flux(None).api_versions == ()
    given = ClusterFacts(discovery=DISCOVERY, kube_version="v1.33.0")
    assert given.argocd().kube_version == "v1.33.0" and given.flux().kube_version == "v1.33.0"
    assert given.argocd().api_versions == for_argocd(DISCOVERY).api_versions
    offline = ClusterFacts(api_versions=("monitoring.coreos.com/v1",))
    assert offline.argocd().kube_version is None
    assert offline.flux().api_versions == ("monitoring.coreos.com/v1",)


def test_discovery_is_read_only_when_something_is_not_given() -> None:
    reads: list[int] = []

    def read() -> Discovery:
        reads.append(1)
        return DISCOVERY

    assert _facts(Tools()).discovery is None  # offline
    assert _facts(Tools(discovery=read)).discovery is DISCOVERY and len(reads) == 1
    both = Tools(texts={"kube-version": ("v1.33.0",), "api-versions": ("x.io/v1",)}, discovery=read)
    facts = _facts(both)
    assert facts.discovery is None and len(reads) == 1
    assert (facts.argocd().kube_version, facts.argocd().api_versions) == ("v1.33.0", ("x.io/v1",))


APP = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Application",
    "metadata": {"name": "web", "namespace": "argocd"},
    "spec": {
        "source": {"repoURL": "https://git.example/p.git", "path": "chart", "helm": {"valueFiles": ["values.yaml"]}},
        "destination": {"namespace": "shop"},
    },
}
HR = {
    "apiVersion": "helm.toolkit.fluxcd.io/v2",
    "kind": "HelmRelease",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {"chart": {"spec": {"chart": "./chart", "sourceRef": {"kind": "GitRepository", "name": "p"}}}},
}
FILES = {"chart/Chart.yaml": "apiVersion: v2\nname: chart\nversion: 0.1.0\n", "chart/values.yaml": "a: 1\n"}


def test_each_controllers_release_renders_with_its_own_capabilities_and_an_application_setting_wins() -> None:
    facts = ClusterFacts(discovery=DISCOVERY)
    app = Followed(controller=argocd.APPLICATION, ref=argocd.APPLICATION.at(namespace="argocd", name="web"), body=APP)
    hr = Followed(controller=flux.HELM_RELEASE, ref=flux.HELM_RELEASE.at(namespace="shop", name="web"), body=HR)

    (a,), _ = releases(app, FILES, facts)
    (h,), _ = releases(hr, FILES, facts)
    (plain,), _ = releases(app, FILES)

    assert (a.kube_version, a.api_versions) == (for_argocd(DISCOVERY).kube_version, for_argocd(DISCOVERY).api_versions)
    assert (h.kube_version, h.api_versions) == ("v1.30.4+k3s1", for_flux(DISCOVERY).api_versions)
    assert (plain.kube_version, plain.api_versions) == (None, ())  # nothing known: helm's defaults
    source = {**APP["spec"]["source"], "helm": {"kubeVersion": "1.29.0", "apiVersions": ["x.io/v1"]}}  # type: ignore[index]
    own = {**APP, "spec": {**APP["spec"], "source": source}}  # type: ignore[dict-item]
    (o,), _ = releases(Followed(controller=app.controller, ref=app.ref, body=own), FILES, facts)
    assert (o.kube_version, o.api_versions) == ("1.29.0", ("x.io/v1",))


def test_flags_beat_config_keys_and_lists_split_on_commas() -> None:
    (target,) = parse_config(
        {"targets": [{"name": "web", "repo_url": "https://git.example/p.git", "kube_version": "v1.31.0",
                      "api_versions": ["a.io/v1", "b.io/v1/Thing,c.io/v2"], "chart_cache": "~/charts"}]},
        source="test",
    ).targets  # fmt: skip

    tools = tools_for(target)

    assert tools.text("kube-version") == "v1.31.0"
    assert tools.values("api-versions") == ("a.io/v1", "b.io/v1/Thing", "c.io/v2")
    assert tools.get("chart-cache") is not None and "~" not in str(tools.get("chart-cache"))
    given = tools_for(target, given={"kube-version": "v1.32.1", "api-versions": ["x.io/v1,y.io/v1", "z.io/v1"]})
    assert given.text("kube-version") == "v1.32.1"
    assert given.values("api-versions") == ("x.io/v1", "y.io/v1", "z.io/v1")


def test_the_flags_are_helms_and_repeatable() -> None:
    args = build_parser().parse_args(
        ["plan", "--kube-version", "v1.31.0", "--api-versions", "a.io/v1,b.io/v1", "--api-versions", "c.io/v1"]
    )
    assert args.kube_version == "v1.31.0" and args.api_versions == ["a.io/v1,b.io/v1", "c.io/v1"]
    text = " ".join(_subparser("diff").format_help().split())
    assert "--kube-version VERSION" in text and "--api-versions GROUP/VERSION[/KIND]" in text


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = action.choices[name]
    return found
