"""Which lists a drift run snapshots, and the offline filters over a dump: derived from Git or from selectors."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from writeback.drift.scoping import Scope, filter_desired, filter_dump, scopes_for
from writeback.kube.refs import ObjectRef
from writeback.model import DesiredObject, LiveObject, Source
from writeback.settings import Selector


def ref(api_version: str, kind: str, name: str, namespace: str | None = None) -> ObjectRef:
    return ObjectRef(api_version=api_version, kind=kind, namespace=namespace, name=name)


def desired(r: ObjectRef) -> DesiredObject:
    meta = {"name": r.name, **({"namespace": r.namespace} if r.namespace else {})}
    return DesiredObject(ref=r, body={"apiVersion": r.api_version, "kind": r.kind, "metadata": meta}, file="a.yaml")


def live(r: ObjectRef, **labels: str) -> LiveObject:
    meta: dict[str, Any] = {"name": r.name, "labels": labels, **({"namespace": r.namespace} if r.namespace else {})}
    return LiveObject(ref=r, body={"apiVersion": r.api_version, "kind": r.kind, "metadata": meta}, source=Source.FILE)


def selector(**fields: Any) -> Selector:
    return Selector.model_validate(fields)


WEB = ref("apps/v1", "Deployment", "web", "shop")
API = ref("apps/v1", "Deployment", "api", "pay")
NS = ref("v1", "Namespace", "shop")
TOKEN = ref("v1", "Secret", "token", "shop")
GIT = [desired(r) for r in (WEB, API, NS, TOKEN)]


def test_without_selectors_the_kinds_git_declares_in_its_namespaces_and_no_secrets() -> None:
    scopes = scopes_for(desired=GIT, namespaces=("extra",))
    assert [(s.selector.api_version, s.selector.kind, s.selector.namespaces, s.names) for s in scopes] == [
        ("apps/v1", "Deployment", ("extra", "pay", "shop"), None),
        ("v1", "Namespace", (), frozenset({"shop"})),  # cluster-scoped: only the names Git declares
    ]
    with_secrets = scopes_for(desired=GIT, include_secrets=True)
    assert ("v1", "Secret") in {(s.selector.api_version, s.selector.kind) for s in with_secrets}


def test_configured_selectors_are_the_scopes_and_filter_the_git_side() -> None:
    chosen = selector(apiVersion="apps/v1", kind="Deployment", namespaces=["shop"])
    secrets = selector(apiVersion="v1", kind="Secret")
    scopes = scopes_for(desired=GIT, selectors=(chosen, secrets))
    assert scopes == [Scope(selector=chosen)]
    assert filter_desired(objects=GIT, scopes=scopes) == (GIT[0],)


def test_a_dump_is_filtered_by_kind_namespace_names_exclusions_and_labels() -> None:
    other = ref("apps/v1", "Deployment", "other", "shop")
    dump = [live(WEB, app="web", tier="front"), live(API, app="api"), live(other, app="web"), live(NS)]
    by_labels = selector(apiVersion="apps/v1", kind="Deployment", labelSelector="app=web,tier!=back,!canary")
    assert [o.ref for o in filter_dump(objects=dump, scopes=[Scope(selector=by_labels)])] == [WEB, other]
    excluded = selector(apiVersion="apps/v1", kind="Deployment", namespaces=["shop"], exclude=["shop/other"])
    assert [o.ref for o in filter_dump(objects=dump, scopes=[Scope(selector=excluded)])] == [WEB]
    named = Scope(selector=selector(apiVersion="v1", kind="Namespace"), names=frozenset({"kube-system"}))
    assert filter_dump(objects=dump, scopes=[named]) == ()
    assert [
        o.ref for o in filter_dump(objects=dump, scopes=[Scope(selector=selector(apiVersion="v1", kind="Namespace"))])
    ] == [NS]


def test_a_label_the_gitops_tool_adds_on_apply_selects_the_git_side_too() -> None:
    """Git never carries Flux's tracking labels: selecting a Kustomization's objects by them keeps Git's objects
    (else every drift of the target would silently vanish), while the other terms still filter."""
    flux = "kustomize.toolkit.fluxcd.io/name=shop,kustomize.toolkit.fluxcd.io/namespace=flux-system"
    tier = desired(ref("apps/v1", "Deployment", "db", "shop"))
    tier.body["metadata"]["labels"] = {"tier": "back"}
    declared = desired(ref("apps/v1", "Deployment", "legacy", "shop"))
    declared.body["metadata"]["labels"] = {"kustomize.toolkit.fluxcd.io/name": "other"}  # Git says so itself
    git = [GIT[0], tier, declared]
    scope = Scope(selector=selector(apiVersion="apps/v1", kind="Deployment", labelSelector=f"{flux},tier!=back"))
    assert filter_desired(objects=git, scopes=[scope]) == (GIT[0],)
    # a live object must really carry the label
    dump = [live(WEB), live(WEB, **{"kustomize.toolkit.fluxcd.io/name": "shop",
                                    "kustomize.toolkit.fluxcd.io/namespace": "flux-system"})]  # fmt: skip
    assert filter_dump(objects=dump, scopes=[scope]) == (dump[1],)


def test_a_dump_is_filtered_with_the_api_servers_selector_grammar() -> None:
    canary = ref("apps/v1", "Deployment", "canary", "shop")
    dump = [live(WEB, app="web", tier="front"), live(API, app="api"), live(canary, app="web", track="canary")]
    set_based = selector(
        apiVersion="apps/v1", kind="Deployment", labelSelector="app in (web, api),track notin (canary)"
    )
    assert [o.ref for o in filter_dump(objects=dump, scopes=[Scope(selector=set_based)])] == [WEB, API]


def test_a_selector_the_api_server_would_refuse_fails_when_the_configuration_loads() -> None:
    with pytest.raises(ValidationError, match=r"labelSelector[\s\S]*label selector 'app in web'"):
        selector(apiVersion="apps/v1", kind="Deployment", labelSelector="app in web")
