"""Object references: NS/NAME text both ways, the API group, "is it a Secret", and how messages name an object."""

from __future__ import annotations

import pytest

from writeback.errors import InputError
from writeback.gitops.registry import describe
from writeback.kube.refs import ObjectRef, group_of, is_secret, split_ns_name

WEB = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="shop", name="web")
NODE = ObjectRef(api_version="v1", kind="Node", namespace=None, name="n1")
APP = ObjectRef(api_version="argoproj.io/v1alpha1", kind="Application", namespace="argocd", name="web")


def test_ns_name_reads_back_and_bad_text_names_what_gave_it() -> None:
    assert split_ns_name(WEB.ns_name, what="--x") == ("shop", "web")
    assert NODE.ns_name == "n1"
    for bad in ("web", "/web", "shop/", "a/b/c", ""):
        with pytest.raises(InputError, match=rf"^--argocd-app {bad!r}: expected NAMESPACE/NAME$"):
            split_ns_name(bad, what="--argocd-app")


def test_one_way_to_name_an_object() -> None:
    assert (str(WEB), WEB.named(), WEB.named("Argo CD Application")) == (
        "Deployment.apps shop/web", "Deployment shop/web", "Argo CD Application shop/web")  # fmt: skip
    assert (str(NODE), NODE.named()) == ("Node n1", "Node n1")
    assert describe(APP) == "Argo CD Application argocd/web" and describe(WEB) == "Deployment shop/web"


def test_group_secret_and_json() -> None:
    assert (group_of("apps/v1"), group_of("v1"), group_of("argoproj.io/v1alpha1")) == ("apps", "", "argoproj.io")
    assert is_secret("v1", "Secret") and not is_secret("bitnami.com/v1alpha1", "Secret")
    assert ObjectRef(api_version="v1", kind="Secret", namespace="a", name="b").is_secret and not WEB.is_secret
    for ref in (WEB, NODE):
        assert ObjectRef.from_json(ref.as_json()) == ref
