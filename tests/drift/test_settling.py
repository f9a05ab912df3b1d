"""The engine's first stage (issue 23 §1): an object written only by its GitOps applier's Apply (after Git's last
change to it) and by controllers' status is settled by its managers, without normalizing or comparing; wherever the
manager names prove nothing the normal path decides, exactly as before.

Every case compares the report with the stage and without it: the drifts are the same (the stage only saves work);
``--explain``'s dropped list names the rule ``settled-by-managers`` for a settled object instead of its fields.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.core.support import applied_fields, defaulted_live, deployment_git, desired_obj, entry, k, live_obj
from writeback.drift.applied_fields import name_key as _name_key
from writeback.drift.engine import (
    DriftReport,
    EngineOptions,
    GitChanges,
    compute_drift,
    needs_dry_run,
    oldest_write,
    prepare_object,
    settle_context,
)
from writeback.model import Decision, DesiredObject, LiveObject, Op, Rule

APPLIED = "2024-05-01T10:00:00Z"
BEFORE = int(datetime.fromisoformat("2024-05-01T09:00:00Z").timestamp())  # Git's last change: before the Apply
AFTER = int(datetime.fromisoformat("2024-05-01T11:00:00Z").timestamp())  # ... or after it
FILE = "apps/web.yaml"
SETTLED = f"[rule: {Rule.SETTLED_BY_MANAGERS}]"


def applier_live(*, manager: str = "argocd-controller", fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the API server holds after ``manager`` applied :func:`deployment_git` server-side, with the Deployment
    controller's status."""
    live = defaulted_live(deployment_git())
    live["metadata"]["managedFields"] = [
        entry(manager, applied_fields() if fields is None else fields, operation="Apply", time=APPLIED),
        entry("kube-controller-manager", {"f:status": {"f:replicas": {}}}, subresource="status",
              time="2024-05-01T10:00:05Z"),
    ]  # fmt: skip
    return live


def changes(at: int = BEFORE, *, rendered: bool = False) -> GitChanges:
    return GitChanges(since=at - 3600, by_file={FILE: at}, rendered=rendered)


def both(
    live: LiveObject,
    desired: DesiredObject,
    *,
    git: GitChanges | None,
    head: list[DesiredObject] | None = None,
) -> tuple[DriftReport, DriftReport]:
    """The report with the first stage and without it."""
    options = EngineOptions()
    with_stage = compute_drift(live=[live], desired=[desired], options=options, head=head,
                               settle=settle_context(git, head=head))  # fmt: skip
    without = compute_drift(live=[live], desired=[desired], options=options, head=head)
    return with_stage, without


def is_settled(report: DriftReport) -> bool:
    return any(SETTLED in d.rule for d in report.dropped)


def test_an_object_only_its_applier_and_a_controllers_status_wrote_is_settled_without_comparing() -> None:
    live, desired = live_obj(applier_live()), desired_obj(deployment_git(), file=FILE)
    settled, compared = both(live, desired, git=changes())
    assert settled.drifts == compared.drifts == ()
    assert is_settled(settled) and not is_settled(compared)
    (whole,) = settled.dropped  # one line for the object instead of every normalized field
    assert whole.path == () and "GitOps applier" in whole.rule
    prep = prepare_object(live=live, desired=desired, options=EngineOptions(), settle=settle_context(changes()))
    assert prep.settled and prep.live_body is None and prep.ownership is None  # nothing normalized, nothing parsed
    assert not needs_dry_run(live=live, desired=desired, options=EngineOptions(), prepared=prep)


def test_every_registered_applier_settles_and_a_rendered_tree_counts_any_change() -> None:
    desired = desired_obj(deployment_git(), file=FILE)
    for manager in ("argocd-controller", "kustomize-controller", "helm-controller"):
        settled, _ = both(live_obj(applier_live(manager=manager)), desired, git=changes())
        assert is_settled(settled), manager
    # Kustomize and Helm render from the whole tree: a change of any other file counts too
    other = GitChanges(since=BEFORE - 3600, by_file={"base/other.yaml": AFTER}, rendered=True)
    assert not is_settled(both(live_obj(applier_live()), desired, git=other)[0])
    assert is_settled(both(live_obj(applier_live()), desired, git=GitChanges(since=BEFORE, rendered=True))[0])


def test_without_managed_fields_or_git_change_times_the_normal_path_decides() -> None:
    dump = applier_live()
    del dump["metadata"]["managedFields"]  # kubectl get -o yaml without --show-managed-fields
    dump["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/shop/web:1.4.3"
    settled, compared = both(live_obj(dump), desired_obj(deployment_git(), file=FILE), git=changes())
    assert not is_settled(settled) and settled == compared
    assert [d.decision for d in settled.drifts] == [Decision.UNATTRIBUTED]
    # no Git change times (not a git repository): nothing is settled by its managers
    settled, compared = both(live_obj(applier_live()), desired_obj(deployment_git(), file=FILE), git=None)
    assert not is_settled(settled) and settled == compared


def test_an_apply_older_than_the_git_change_is_compared() -> None:
    """Git changed the image after the applier's last Apply: live holds the older manifest (a pending or failed
    sync), which the normal path reports; the same object with the Apply after the change is settled."""
    live = live_obj(applier_live())
    desired = desired_obj(deployment_git(), file=FILE)
    desired.body["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/shop/web:1.5.0"
    settled, compared = both(live, desired, git=changes(AFTER))
    assert not is_settled(settled) and settled == compared
    (drift,) = settled.drifts
    assert (drift.rule, drift.manager) == (Rule.GITOPS_OWNED, "argocd-controller")
    # the Apply in the very second of the commit proves nothing either (times are whole seconds)
    same_second = int(datetime.fromisoformat(APPLIED).timestamp())
    assert not is_settled(both(live, desired_obj(deployment_git(), file=FILE), git=changes(same_second))[0])
    # another file's change is not this object's
    other = GitChanges(since=BEFORE - 3600, by_file={"apps/other.yaml": AFTER})
    assert is_settled(both(live, desired_obj(deployment_git(), file=FILE), git=other)[0])


def test_commits_the_controller_has_not_synced_yet_are_compared_as_pending() -> None:
    live, desired = live_obj(applier_live()), desired_obj(deployment_git(), file=FILE)
    ahead = copy.deepcopy(deployment_git())
    ahead["spec"]["replicas"] = 5
    live_ahead = applier_live()
    live_ahead["spec"]["replicas"] = 5  # the controller applied the head already
    settled, compared = both(live_obj(live_ahead), desired, git=changes(), head=[desired_obj(ahead, file=FILE)])
    assert not is_settled(settled) and settled == compared
    assert [(d.path[-1].name, d.decision) for d in settled.drifts] == [("replicas", Decision.PENDING)]  # type: ignore[union-attr]
    # removed from Git at the head: pending too, never settled
    settled, compared = both(live, desired, git=changes(), head=[])
    assert not is_settled(settled) and settled == compared
    # a head that declares the object as the compared revision does changes nothing
    settled, _ = both(live, desired, git=changes(), head=[desired_obj(deployment_git(), file=FILE)])
    assert is_settled(settled)


def test_a_field_a_person_removed_leaves_no_entry_but_is_not_settled() -> None:
    """kubectl edit that only removes a field records no entry for the person (the real kube-apiserver drops the
    field from the applier's set and keeps its Apply time): the applier not owning a field Git declares shows it."""
    body = applier_live()
    fields = applied_fields()
    env = fields["f:spec"]["f:template"]["f:spec"]["f:containers"][k(name="web")]["f:env"]
    del env[k(name="REGION")]
    body["metadata"]["managedFields"][0]["fieldsV1"] = fields
    body["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "LOG_LEVEL", "value": "info"}]
    settled, compared = both(live_obj(body), desired_obj(deployment_git(), file=FILE), git=changes())
    assert not is_settled(settled) and settled == compared
    (drift,) = settled.drifts
    assert (drift.op, drift.decision, drift.manager) == (Op.REMOVE, Decision.WRITEBACK, None)
    # the labels (a map) and a scalar alike; the API server prunes a node left empty
    for remove in (("f:metadata", "f:labels"), ("f:spec", "f:replicas")):
        fields = applied_fields()
        parent = fields[remove[0]]
        del parent[remove[1]]
        if not parent:
            del fields[remove[0]]
        assert not is_settled(both(live_obj(applier_live(fields=fields)), desired_obj(deployment_git(), file=FILE),
                                   git=changes())[0]), remove  # fmt: skip


def test_a_persons_write_of_any_kind_is_compared() -> None:
    edited = applier_live()
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/shop/web:1.4.3"
    person: dict[str, Any] = {"f:spec": {"f:template": {"f:spec": {"f:containers": {k(name="web"): {"f:image": {}}}}}}}
    for manager, operation, subresource in (("kubectl-edit", "Update", ""), ("kubectl", "Apply", ""),
                                            ("kubectl-client-side-apply", "Update", "")):  # fmt: skip
        body = copy.deepcopy(edited)
        body["metadata"]["managedFields"].append(
            entry(manager, person, operation=operation, subresource=subresource, time="2024-05-02T03:07:00Z")
        )
        settled, compared = both(live_obj(body), desired_obj(deployment_git(), file=FILE), git=changes())
        assert not is_settled(settled) and settled == compared, manager
        assert [d.decision for d in settled.drifts] == [Decision.WRITEBACK], manager
    # a person's scale: an entry by kubectl through /scale
    scaled = applier_live()
    scaled["spec"]["replicas"] = 7
    scaled["metadata"]["managedFields"].append(
        entry("kubectl", {"f:spec": {"f:replicas": {}}}, subresource="scale", time="2024-05-02T03:07:00Z")
    )
    settled, compared = both(live_obj(scaled), desired_obj(deployment_git(), file=FILE), git=changes())
    assert not is_settled(settled) and settled == compared
    assert [d.decision for d in settled.drifts] == [Decision.WRITEBACK]


def test_the_appliers_client_side_apply_and_controller_writes_the_report_lists_are_compared() -> None:
    """A controller's /scale (the HPA) owns replicas, which the report lists as ignored: the normal path makes that
    line, so the object is compared; so is an applier's Update (a client-side apply owns only what it changed)."""
    scaled = applier_live()
    scaled["spec"]["replicas"] = 7
    scaled["metadata"]["managedFields"].append(
        entry("kube-controller-manager", {"f:spec": {"f:replicas": {}}}, subresource="scale",
              time="2024-05-02T03:07:00Z")
    )  # fmt: skip
    settled, compared = both(live_obj(scaled), desired_obj(deployment_git(), file=FILE), git=changes())
    assert not is_settled(settled) and settled == compared
    assert [(d.decision, d.rule) for d in settled.drifts] == [(Decision.IGNORE, Rule.CONTROLLER_OWNED)]
    csa = applier_live()
    csa["metadata"]["managedFields"][0]["operation"] = "Update"
    settled, compared = both(live_obj(csa), desired_obj(deployment_git(), file=FILE), git=changes())
    assert not is_settled(settled) and settled == compared


def test_a_null_in_git_or_an_unmatched_list_item_goes_the_normal_path() -> None:
    nulled = deployment_git()
    nulled["spec"]["minReadySeconds"] = None
    assert not is_settled(both(live_obj(applier_live()), desired_obj(nulled, file=FILE), git=changes())[0])
    # a port whose key the server defaulted (protocol: TCP) matches; another port Git declares does not
    two_ports = deployment_git()
    two_ports["spec"]["template"]["spec"]["containers"][0]["ports"].append({"containerPort": 9090})
    settled, compared = both(live_obj(applier_live()), desired_obj(two_ports, file=FILE), git=changes())
    assert not is_settled(settled) and settled == compared


def test_a_manifest_whose_metadata_is_only_its_identity_is_settled() -> None:
    """A ConfigMap with only a name: managedFields never record the name or namespace (nor an empty metadata)."""
    git: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits", "namespace": "shop"},
           "data": {"cpu": "1"}}  # fmt: skip
    live = copy.deepcopy(git)
    live["metadata"].update(uid="u", resourceVersion="9", creationTimestamp=APPLIED)
    live["metadata"]["managedFields"] = [
        entry("kustomize-controller", {"f:data": {"f:cpu": {}}}, operation="Apply", time=APPLIED, api_version="v1")
    ]
    settled, compared = both(live_obj(live), desired_obj(git, file=FILE), git=changes())
    assert is_settled(settled) and settled.drifts == compared.drifts == ()


def test_a_field_the_applier_owns_that_git_lacks_is_compared_but_tracking_labels_are_not_one() -> None:
    """An admission plugin or a webhook that adds a field during the Apply makes the applier own it (the real
    ServiceAccount admission plugin's token volume: tests/drift/test_controller_filled.py); the rules report it, so
    the object is compared. A GitOps tool's tracking labels and annotations, which normalizing drops, are no such
    field."""
    injected = applier_live()
    injected["spec"]["template"]["spec"]["volumes"] = [{"name": "kube-api-access-x", "emptyDir": {}}]
    fields = applied_fields()
    fields["f:spec"]["f:template"]["f:spec"]["f:volumes"] = {k(name="kube-api-access-x"): {".": {}, "f:name": {}}}
    injected["metadata"]["managedFields"][0]["fieldsV1"] = fields
    settled, compared = both(live_obj(injected), desired_obj(deployment_git(), file=FILE), git=changes())
    assert not is_settled(settled) and settled == compared
    # an item added to a list Git declares, and a key added to a map
    for path, extra in ((("f:spec", "f:template", "f:spec", "f:containers"), k(name="sidecar")),
                        (("f:metadata", "f:labels"), "f:injected")):  # fmt: skip
        fields = applied_fields()
        node = fields
        for step in path:
            node = node[step]
        node[extra] = {}
        assert not is_settled(both(live_obj(applier_live(fields=fields)), desired_obj(deployment_git(), file=FILE),
                                   git=changes())[0]), extra  # fmt: skip
    tracked = applier_live(manager="kustomize-controller")
    tracked["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] = "apps"
    fields = applied_fields()
    fields["f:metadata"]["f:labels"]["f:kustomize.toolkit.fluxcd.io/name"] = {}
    fields["f:metadata"]["f:annotations"] = {"f:argocd.argoproj.io/tracking-id": {}}
    tracked["metadata"]["managedFields"][0]["fieldsV1"] = fields
    tracked["metadata"].setdefault("annotations", {})["argocd.argoproj.io/tracking-id"] = "apps:apps/Deployment:x"
    settled, compared = both(live_obj(tracked), desired_obj(deployment_git(), file=FILE), git=changes())
    assert is_settled(settled) and settled.drifts == compared.drifts == ()


def test_what_nobody_owns_is_compared_unless_the_rules_drop_it_as_a_default() -> None:
    """The real kube-apiserver records no manager for a scale of replicas nobody owned
    (tests/drift/test_unowned_fields.py), nor for what an admission plugin adds (the ServiceAccount token volume:
    tests/drift/test_controller_filled.py); the rules report both, so such objects are compared."""
    git = deployment_git()
    del git["spec"]["replicas"]
    fields = applied_fields()
    del fields["f:spec"]["f:replicas"]
    scaled = applier_live(fields=fields)
    scaled["spec"]["replicas"] = 4
    settled, compared = both(live_obj(scaled), desired_obj(git, file=FILE), git=changes())
    assert not is_settled(settled) and settled == compared
    assert [(d.decision, d.rule) for d in settled.drifts] == [(Decision.UNATTRIBUTED, Rule.UNOWNED)]
    token = applier_live()
    token["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "INJECTED", "value": "1"})
    settled, compared = both(live_obj(token), desired_obj(deployment_git(), file=FILE), git=changes())
    assert not is_settled(settled) and settled == compared
    annotated = applier_live()
    annotated["spec"]["template"]["metadata"]["annotations"] = {"sidecar.istio.io/status": "{}"}
    settled, compared = both(live_obj(annotated), desired_obj(deployment_git(), file=FILE), git=changes())
    assert not is_settled(settled) and settled == compared


def test_the_oldest_write_bounds_the_git_log() -> None:
    assert oldest_write([live_obj(applier_live())]) == int(datetime.fromisoformat(APPLIED).timestamp())
    assert oldest_write([]) is None


def test_without_explain_no_dropped_field_is_kept_and_the_drifts_are_the_same() -> None:
    """Issue 23 §3: only ``--explain`` reads the dropped fields, so nothing else builds them."""
    edited = applier_live()
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/shop/web:1.4.3"
    edited["metadata"]["managedFields"].append(
        entry("kubectl-set", {"f:spec": {"f:template": {"f:spec": {"f:containers": {k(name="web"): {"f:image": {}}}}}}},
              time="2024-05-02T03:07:00Z")
    )  # fmt: skip
    other = deployment_git()
    other["metadata"]["name"] = "api"
    other_live = applier_live()
    other_live["metadata"]["name"] = "api"
    live = [live_obj(edited), live_obj(other_live)]
    desired = [desired_obj(deployment_git(), file=FILE), desired_obj(other, file=FILE)]
    lean = compute_drift(live=live, desired=desired, options=EngineOptions(explain=False),
                         settle=settle_context(changes()))  # fmt: skip
    full = compute_drift(live=live, desired=desired, options=EngineOptions(), settle=settle_context(changes()))
    assert lean.drifts == full.drifts and [d.decision for d in lean.drifts] == [Decision.WRITEBACK]
    assert lean.dropped == () and full.dropped and is_settled(full)


@given(st.text(max_size=40))
def test_a_list_items_name_key_is_spelled_as_the_servers_json(name: str) -> None:
    """FieldsV1 keys an item by name as the API server writes it: compact JSON, non-ASCII as it is, quotes,
    backslashes and control characters escaped; the encoder-free spelling of plain names must be that exactly."""
    assert _name_key(name) == '{"name":' + json.dumps(name, ensure_ascii=False) + "}"
