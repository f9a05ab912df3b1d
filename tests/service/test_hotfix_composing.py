"""Every captured write kept and composed (issue 22 §1), without a cluster: the pure pieces on the objects the real
API server and Flux produce (a VirtualService whose ``spec.http`` is an atomic list, a Deployment's env).

The end-to-end scenarios on the real Flux controllers are in ``tests/e2e/test_every_hotfix.py``."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from writeback.adapters.hotfix_store import DirectoryStore
from writeback.adapters.templating import load_templates
from writeback.capture.composing import compose, settled
from writeback.capture.hotfixes import own_change, person_wrote
from writeback.drift.ownership import parse_managed_fields
from writeback.kube.paths import format_path, parse_path
from writeback.kube.refs import ObjectRef
from writeback.model import Capture, ChangeSet, Decision, Drift, HotfixState, ManagerOperation, Op, Review
from writeback.pr.text import RenderInput, render
from writeback.settings import Policy

POLICY = Policy()
VS = ObjectRef(api_version="networking.istio.io/v1", kind="VirtualService", namespace="shop", name="checkout")
T0, T1, T2, T3, T4 = (f"2026-11-30T03:00:{s:02d}Z" for s in (0, 10, 12, 20, 22))
FLUX = "kustomize-controller"
HTTP: dict[str, Any] = {"f:spec": {"f:http": {}}}


def _entry(manager: str, op: str, time: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "manager": manager,
        "operation": op,
        "apiVersion": "networking.istio.io/v1",
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }


def _vs(w: tuple[int, int], *, retries: bool = False, entries: list[dict[str, Any]], rv: str) -> dict[str, Any]:
    route = [
        {"destination": {"host": "checkout", "subset": "v1"}, "weight": w[0]},
        {"destination": {"host": "checkout", "subset": "v2"}, "weight": w[1]},
    ]
    http: dict[str, Any] = {"route": route}
    if retries:
        http = {"retries": {"attempts": 3, "perTryTimeout": "2s"}, **http}
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": {"name": "checkout", "namespace": "shop", "resourceVersion": rv, "managedFields": entries},
        "spec": {"hosts": ["checkout"], "http": [http]},
    }


def _capture(previous: dict[str, Any], current: dict[str, Any]) -> Capture:
    """What the capturer stores for the write that made ``current`` out of ``previous``."""
    owner = person_wrote(previous, current, policy=POLICY)
    assert owner is not None
    return Capture(
        target="shop",
        ref=VS,
        manager=owner.manager,
        operation=owner.operation,
        time=owner.time,
        captured_at=owner.time or "",
        body=current,
        resource_version=current["metadata"]["resourceVersion"],
        changed=tuple(format_path(p) for p in own_change(previous, current)),
    )


# The history of the scenario, as the API server and Flux write it.
APPLIED = _vs((90, 10), entries=[_entry(FLUX, "Apply", T0, HTTP)], rv="100")
PATCHED = _vs(
    (0, 100), entries=[_entry(FLUX, "Apply", T0, {"f:spec": {}}), _entry("kubectl-patch", "Update", T1, HTTP)], rv="101"
)
REVERTED = _vs((90, 10), entries=[_entry(FLUX, "Apply", T2, HTTP)], rv="102")
EDITED = _vs(
    (90, 10),
    retries=True,
    entries=[_entry(FLUX, "Apply", T2, {"f:spec": {}}), _entry("kubectl-edit", "Update", T3, HTTP)],
    rv="103",
)
REVERTED_AGAIN = _vs((90, 10), entries=[_entry(FLUX, "Apply", T4, HTTP)], rv="104")


def test_each_write_is_its_own_change_against_the_version_before_it() -> None:
    first, second = _capture(APPLIED, PATCHED), _capture(REVERTED, EDITED)
    assert first.changed == ("spec.http[0].route[0].weight", "spec.http[0].route[1].weight")
    assert second.changed == ("spec.http[0].retries.attempts", "spec.http[0].retries.perTryTimeout")
    assert first.key != second.key
    # Flux's revert is not a person's write, even in the same second as the edit it reverts
    same_second_revert = copy.deepcopy(REVERTED_AGAIN)
    same_second_revert["metadata"]["managedFields"] = [
        _entry(FLUX, "Apply", T3, HTTP),
        _entry("kubectl-edit", "Update", T3, {"f:spec": {}}),
    ]
    assert person_wrote(EDITED, same_second_revert, policy=POLICY) is None


def test_two_reverted_hotfixes_are_both_put_back_and_each_is_named() -> None:
    first, second = _capture(APPLIED, PATCHED), _capture(REVERTED, EDITED)
    result = compose(REVERTED_AGAIN, [second, first], policy=POLICY)  # any stored order: composed by time
    assert result.changed
    http = result.body["spec"]["http"][0]
    assert [r["weight"] for r in http["route"]] == [0, 100]
    assert http["retries"] == {"attempts": 3, "perTryTimeout": "2s"}
    assert [(h.manager, h.time, h.state, h.reverted_by, h.reverted_at) for h in result.hotfixes] == [
        ("kubectl-patch", T1, HotfixState.REVERTED, FLUX, T4),
        ("kubectl-edit", T3, HotfixState.REVERTED, FLUX, T4),
    ]
    # the drift engine attributes each put-back field to its own write, not to Flux nor to the last write
    owners = parse_managed_fields(result.body)
    for path, manager in [
        ("spec.http[0].route[0].weight", "kubectl-patch"),
        ("spec.http[0].route[1].weight", "kubectl-patch"),
        ("spec.http[0].retries.attempts", "kubectl-edit"),
    ]:
        owner = owners.owner_of(parse_path(path))
        assert owner is not None and owner.manager == manager, (path, owner)
    # the PR body names both writes; its rows say who changed each field
    drifts = tuple(
        Drift(
            resource=VS,
            path=parse_path(p),
            op=Op.CHANGE,
            live=v,
            git=g,
            manager="kubectl-edit",
            operation=ManagerOperation.UPDATE,
            time=T3,
        )
        for p, v, g in [("spec.http[0].route[0].weight", 0, 90), ("spec.http[0].route[1].weight", 100, 10)]
    )
    cs = ChangeSet(id="shop", target="shop", review=Review.STANDARD, fingerprint="f", drifts=drifts)
    body = render(
        templates=load_templates(override_dir=None),
        data=RenderInput(change_set=cs, cluster="prod", base="main", hotfixes=result.hotfixes),
    ).body
    assert f"changed by <code>kubectl-patch</code> at {T1}" in body
    assert f"changed by <code>kubectl-edit</code> at {T3}" in body
    weights_row = f"| <code>kubectl-patch</code> (Update) | {T1} | spec.<wbr>http<wbr>\\[0\\].<wbr>route"
    assert weights_row in body  # the weights' rows


def test_a_later_write_by_a_person_replaces_an_earlier_one_and_the_pr_says_so() -> None:
    first = _capture(APPLIED, PATCHED)
    undone = _vs(
        (90, 10),
        entries=[_entry(FLUX, "Apply", T0, {"f:spec": {}}), _entry("kubectl-patch", "Update", T3, HTTP)],
        rv="102",
    )
    second = _capture(PATCHED, undone)  # the person puts the weights back before Flux reconciles
    result = compose(undone, [first, second], policy=POLICY)
    assert not result.changed and result.body == undone
    assert result.replaced == {first.key: second.key}
    [replaced] = [h for h in result.hotfixes if h.state is HotfixState.REPLACED]
    assert (replaced.manager, replaced.time, replaced.replaced_by, replaced.replaced_at) == (
        "kubectl-patch",
        T1,
        "kubectl-patch",
        T3,
    )
    assert settled(result, drifting=[]) == {second.key}  # Git carries the second (no drift), the first is replaced
    assert settled(result, drifting=[parse_path("spec.http[0].route[0].weight")]) == set()
    # in a PR of other fields, the body says the replaced write is not carried, and by what
    other = Drift(
        resource=VS,
        path=parse_path("spec.hosts"),
        op=Op.CHANGE,
        live=["x"],
        git=["checkout"],
        decision=Decision.WRITEBACK,
    )
    cs = ChangeSet(id="shop", target="shop", review=Review.STANDARD, fingerprint="f", drifts=(other,))
    body = render(
        templates=load_templates(override_dir=None),
        data=RenderInput(change_set=cs, cluster="prod", base="main", hotfixes=result.hotfixes),
    ).body
    assert (
        f"the change by <code>kubectl-patch</code> at {T1} was replaced by a later change by "
        f"<code>kubectl-patch</code> at {T3}"
    ) in body


def test_two_writes_by_one_manager_in_one_second_are_two_captures(tmp_path: Path) -> None:
    once = _vs(
        (50, 50),
        entries=[_entry(FLUX, "Apply", T0, {"f:spec": {}}), _entry("kubectl-patch", "Update", T1, HTTP)],
        rv="101",
    )
    twice = copy.deepcopy(PATCHED)
    twice["metadata"]["resourceVersion"] = "102"
    first, second = _capture(APPLIED, once), _capture(once, twice)  # same manager, same managedFields time
    assert first.time == second.time and first.key != second.key
    store = DirectoryStore(state_dir=tmp_path)
    store.save(first)
    store.save(second)
    assert sorted(c.resource_version for c in store.load(target="shop")) == ["101", "102"]
    result = compose(REVERTED, store.load(target="shop"), policy=POLICY)
    assert [r["weight"] for r in result.body["spec"]["http"][0]["route"]] == [0, 100]  # the later one wins


def test_a_field_a_controller_changed_since_is_left_as_live_says() -> None:
    ref = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="shop", name="web")
    spec: dict[str, Any] = {"f:spec": {"f:replicas": {}}}

    def deploy(replicas: int, entries: list[dict[str, Any]], rv: str) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "spec": {"replicas": replicas},
            "metadata": {"name": "web", "namespace": "shop", "resourceVersion": rv, "managedFields": entries},
        }

    applied = deploy(2, [_entry(FLUX, "Apply", T0, spec)], "1")
    scaled = deploy(5, [_entry(FLUX, "Apply", T0, {}), _entry("kubectl-scale", "Update", T1, spec)], "2")
    hpa = deploy(9, [_entry(FLUX, "Apply", T0, {}), _entry("kube-controller-manager", "Update", T2, spec)], "3")
    capture = Capture(
        target="shop",
        ref=ref,
        manager="kubectl-scale",
        operation=ManagerOperation.UPDATE,
        time=T1,
        captured_at=T1,
        body=scaled,
        resource_version="2",
        changed=tuple(format_path(p) for p in own_change(applied, scaled)),
    )
    result = compose(hpa, [capture], policy=POLICY)
    assert not result.changed and result.body["spec"]["replicas"] == 9


def test_a_later_write_of_the_atomic_list_does_not_hide_the_earlier_one() -> None:
    """The cycle between the edit and Flux's second revert: live holds the edit, and kubectl-edit owns all of
    ``spec.http`` (an atomic list), the weights it did not change included. The first write is put back all the
    same, and is not taken for carried by Git."""
    first, second = _capture(APPLIED, PATCHED), _capture(REVERTED, EDITED)
    result = compose(EDITED, [first, second], policy=POLICY)
    http = result.body["spec"]["http"][0]
    assert [r["weight"] for r in http["route"]] == [0, 100] and http["retries"]["attempts"] == 3
    assert [(h.manager, h.state) for h in result.hotfixes] == [("kubectl-patch", HotfixState.REVERTED)]
    weights = [parse_path("spec.http[0].route[0].weight"), parse_path("spec.http[0].route[1].weight")]
    retries = [parse_path("spec.http[0].retries.attempts"), parse_path("spec.http[0].retries.perTryTimeout")]
    assert settled(result, drifting=weights + retries) == set()  # both differ from Git: both kept
    assert settled(result, drifting=weights) == {second.key}  # had Git the retries, only the edit would be carried
    assert settled(compose(EDITED, [second], policy=POLICY), drifting=[]) == {second.key}


def test_a_write_that_removes_the_persons_last_field_is_still_theirs() -> None:
    """`kubectl set env VAR-` removes the only field kubectl-set owned: the API server drops its managedFields entry,
    so the write names no manager; it is the person's all the same, unless another manager's entry moved on (a
    revert)."""
    env: dict[str, Any] = {
        "f:spec": {
            "f:template": {
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"app"}': {"f:env": {'k:{"name":"X"}': {".": {}, "f:name": {}, "f:value": {}}}}
                    }
                }
            }
        }
    }

    def deploy(with_var: bool, entries: list[dict[str, Any]]) -> dict[str, Any]:
        app: dict[str, Any] = {"name": "app", "env": [{"name": "X", "value": "1"}] if with_var else []}
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "managedFields": entries},
            "spec": {"template": {"spec": {"containers": [app]}}},
        }

    flux = _entry(FLUX, "Apply", T0, {"f:spec": {}})
    added = deploy(True, [flux, _entry("kubectl-set", "Update", T1, env)])
    removed = deploy(False, [flux])
    owner = person_wrote(added, removed, policy=POLICY)
    assert owner is not None and (owner.manager, owner.time) == ("kubectl-set", None)
    assert own_change(added, removed) == (parse_path("spec.template.spec.containers[name=app].env[name=X]"),)
    reverted = deploy(False, [_entry(FLUX, "Apply", T2, {"f:spec": {}})])
    assert person_wrote(added, reverted, policy=POLICY) is None


def test_a_capture_stored_by_an_older_version_is_renamed_and_still_put_back(tmp_path: Path) -> None:
    """An older version stored one capture per object, without the version before the write: it is renamed to its
    write's key when read, and its change is the fields its manager owned that differ from live."""
    legacy = Capture(
        target="shop",
        ref=VS,
        manager="kubectl-patch",
        operation=ManagerOperation.UPDATE,
        time=T1,
        captured_at=T1,
        body=PATCHED,
    )
    store = DirectoryStore(state_dir=tmp_path)
    old_name = tmp_path / "hotfixes" / "shop__networking.istio.io__VirtualService__shop__checkout.json"
    old_name.parent.mkdir(parents=True)
    old_name.write_text(legacy.to_json())
    [loaded] = store.load(target="shop")
    assert loaded.changed is None and not old_name.exists() and (old_name.parent / loaded.key).is_file()
    result = compose(REVERTED, [loaded], policy=POLICY)
    assert [r["weight"] for r in result.body["spec"]["http"][0]["route"]] == [0, 100]
    assert [h.fields for h in result.hotfixes] == [
        (parse_path("spec.http[0].route[0].weight"), parse_path("spec.http[0].route[1].weight"))
    ]
