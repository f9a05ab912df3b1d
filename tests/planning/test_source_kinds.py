"""A target's source kind is detected once (``sources.registry.resolve``): from the checkout when detecting drift,
from the repo texts when planning, with the same answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from writeback.errors import InputError
from writeback.pipeline.detecting import resolve_source
from writeback.pipeline.planning import plan_files
from writeback.pipeline.targets import TargetSpec
from writeback.sources import registry

DEPLOYMENT = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n"
FILES = {
    "apps/web/kustomization.yaml": "resources: [deployment.yaml]\n",
    "apps/web/deployment.yaml": DEPLOYMENT,
    "plain/deployment.yaml": DEPLOYMENT,
}


@pytest.mark.parametrize(("path", "kind"), [("apps/web", "kustomize"), ("./apps/web/", "kustomize"),
                                            ("apps", "plain"), ("plain", "plain"), (".", "plain")])  # fmt: skip
def test_the_checkout_and_the_repo_texts_give_the_same_kind(tmp_path: Path, path: str, kind: str) -> None:
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert resolve_source(repo=tmp_path, path=path).name == kind
    assert registry.resolve(None, exists=FILES.__contains__, path=path).name == kind
    planned = plan_files(files=FILES, drifts=[], spec=TargetSpec(name="t", path=path))
    assert planned.source.name == kind
    named = plan_files(files=FILES, drifts=[], spec=TargetSpec(name="t", path=path, source="markers"))
    assert named.source.name == "markers"  # a named kind wins


def test_an_unknown_kind_is_an_input_error() -> None:
    with pytest.raises(InputError, match="unknown source 'helmfile' \\(known: "):
        registry.resolve("helmfile", exists=FILES.__contains__, path=".")
