"""Bodies held small (``writeback.bodies``): a settled live object's compact copy reads as the dict it stands for,
and shares Git's reference and name when they are the same object's."""

from __future__ import annotations

import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.core.support import desired_obj, live_obj
from writeback.bodies import CompactBody
from writeback.drift.settling import compacted
from writeback.kube.refs import ObjectRef

_TEXT = st.text(min_size=1, max_size=12)
_META = st.fixed_dictionaries(
    {}, optional={"name": _TEXT, "namespace": _TEXT, "uid": _TEXT, "resourceVersion": _TEXT, "labels": st.just({})}
)


def _listed(name: str = "web", namespace: str = "shop") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "uid": "0f4c-11", "resourceVersion": "812",
                     "labels": {"app": name}, "managedFields": [{"manager": "argocd-controller"}]},
        "spec": {"replicas": 3},
        "status": {"replicas": 3},
    }  # fmt: skip


@given(meta=_META, api_version=st.none() | _TEXT, kind=st.none() | _TEXT)
def test_a_compact_body_reads_as_the_dict_of_the_fields_it_keeps(
    meta: dict[str, Any], api_version: str | None, kind: str | None
) -> None:
    top: dict[str, Any] = {"spec": {"x": 1}, "metadata": meta}
    if api_version is not None:
        top["apiVersion"] = api_version
    if kind is not None:
        top["kind"] = kind
    body = CompactBody(top)
    kept_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in meta}
    want = {k: top[k] for k in ("apiVersion", "kind") if k in top} | {"metadata": kept_meta}
    assert dict(body) == want and body == want and list(body) == list(want) and len(body) == len(want)
    assert body.get("spec") is None and "spec" not in body and body.get("metadata") == kept_meta
    assert repr(body) == f"CompactBody({want!r})"
    assert dict(CompactBody({"kind": "ConfigMap", "metadata": None})) == {"kind": "ConfigMap", "metadata": {}}


def test_the_compact_copy_of_a_settled_object_keeps_its_names_and_versions_in_less_memory() -> None:
    listed = _listed()
    live = live_obj(listed)
    git = desired_obj({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "web", "namespace": "shop"}})  # fmt: skip

    compact = compacted(live, ref=git.ref)

    assert dict(compact.body) == {"apiVersion": "apps/v1", "kind": "Deployment",
                                  "metadata": {"name": "web", "namespace": "shop", "uid": "0f4c-11",
                                               "resourceVersion": "812"}}  # fmt: skip
    assert compact.ref is git.ref  # one reference (and one identity) for both sides
    assert compact.body["metadata"]["name"] is git.ref.name
    assert sys.getsizeof(compact.body) < sys.getsizeof({"apiVersion": 1, "kind": 2, "metadata": 3})


def test_the_compact_copy_keeps_its_own_reference_when_git_names_another_version() -> None:
    live = live_obj(_listed())
    other = ObjectRef(api_version="apps/v1beta2", kind="Deployment", namespace="shop", name="web")

    compact = compacted(live, ref=other)

    assert compact.ref is live.ref and compact.ref != other
    assert compact.ref.identity == other.identity  # the same object, as the engine pairs them
    assert compacted(live).ref is live.ref
