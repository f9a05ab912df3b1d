"""Bad input is a clear error for that resource only; the other resources are still patched."""

from __future__ import annotations

from tests.planning.repos import HELM_VALUES, WEB, drift, ref
from writeback.kube.pathtypes import Index, Key
from writeback.model import Op
from writeback.sources.changesets import plan_changesets
from writeback.sources.locating import locate
from writeback.sources.registry import by_name

GOOD = """\
# web and its config
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
spec:
  replicas: 2
---
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: cfg
      namespace: prod
    data:
      mode: normal
...
"""
BROKEN = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: prod
spec:
  replicas: [2
"""
SVC = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: prod\nspec:\n  type: ClusterIP\n"
GHOST_MARKER = 'replicas: 1 # {"$writeback": "Deployment.apps/prod/ghost:spec.replicas"}\n'
ANCHORED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: anchored
  namespace: prod
  labels: &labels
    app: anchored
spec:
  selector:
    matchLabels: *labels
"""


def test_each_bad_input_is_an_error_for_its_resource_only() -> None:
    files = {
        "apps/good.yaml": GOOD,
        "apps/broken.yaml": BROKEN,
        "apps/svc-a.yaml": SVC,
        "apps/svc-b.yml": SVC,
        "apps/anchored.yaml": ANCHORED,
        "apps/values.yaml": GHOST_MARKER + HELM_VALUES.replace("web:spec.replicas", "web:spec..replicas"),
    }
    cfg = ref("ConfigMap", "cfg", api_version="v1")
    svc = ref("Service", "web", api_version="v1")
    api = ref("Deployment", "api")
    anchored = ref("Deployment", "anchored")
    drifts = [
        drift(WEB, "spec.replicas", live=5, git=2),
        drift(cfg, "data.mode", live="safe", git="normal"),
        drift(api, "spec.replicas", live=4, git=2),
        drift(svc, "spec.type", live="NodePort", git="ClusterIP"),
        drift(anchored, "metadata.labels.app", live="other", git="anchored"),
        drift(anchored, "metadata.annotations.note", op=Op.ADD, live="hi"),
    ]
    live = [WEB, cfg, svc, api, anchored]
    located = locate(files=files, root="apps", source=by_name("plain"), drifts=drifts, live_refs=live)
    plan = plan_changesets(target="prod", files=files, drifts=drifts, located=located)
    (cs,) = plan.changesets
    assert plan.errors == located.errors

    reasons = {(u.resource.name, u.resource.kind): u.reason for u in cs.unresolved}
    assert "unreadable files: apps/broken.yaml:7:13: not valid YAML: " in reasons[("api", "Deployment")]
    assert reasons[("web", "Service")] == (
        "declared more than once: apps/svc-a.yaml (document 1), apps/svc-b.yml (document 1); edit one of them by hand"
    )
    assert "apps/values.yaml:1" in reasons[("ghost", "Deployment")]
    assert "does not exist live" in reasons[("ghost", "Deployment")]
    assert "anchor &labels" in reasons[("anchored", "Deployment")]
    (marker_error,) = located.errors
    expected = "apps/values.yaml:3: malformed path in $writeback marker: invalid field path"
    assert marker_error.message.startswith(expected)

    patched = {f.path: f.after for f in cs.files}
    assert set(patched) == {"apps/good.yaml", "apps/anchored.yaml"}
    assert patched["apps/good.yaml"] == GOOD.replace("replicas: 2", "replicas: 5").replace("mode: normal", "mode: safe")
    assert "    note: hi\n" in patched["apps/anchored.yaml"]  # the other field of that resource still lands


def test_list_items_are_located_inside_the_list() -> None:
    cfg = ref("ConfigMap", "cfg", api_version="v1")
    plain = by_name("plain")
    located = locate(files={"a/good.yaml": GOOD}, root="a", source=plain, drifts=[drift(cfg, "data.mode", live="x")])
    (loc,) = located.locations
    assert (loc.document, loc.path[:2]) == (1, (Key("items"), Index(0)))


def test_secrets_and_sops_files_are_report_only() -> None:
    sops = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: enc\n  namespace: prod\n"
        "data:\n  a: ENC[AES256]\nsops:\n  version: 3\n"
    )
    secret = ref("Secret", "db", api_version="v1")
    enc = ref("ConfigMap", "enc", api_version="v1")
    sealed = ref("SealedSecret", "s", api_version="bitnami.com/v1alpha1")
    drifts = [drift(secret, "data.password", live="x"), drift(enc, "data.a", live="y"), drift(sealed, "spec.x", live=1)]
    located = locate(files={"s/enc.yaml": sops}, root="s", source=by_name("plain"), drifts=drifts)
    assert located.locations == ()
    assert [("report-only" in u.reason) for u in located.unresolved] == [True, True, True]
    assert "SOPS" in located.unresolved[1].reason


def test_namespace_default_and_cluster_scope() -> None:
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"
    d = [drift(WEB, "spec.replicas", live=2, git=1)]
    plain = by_name("plain")
    assert locate(files={"x/w.yaml": text}, root="x", source=plain, drifts=d, default_namespace="prod").locations
    other = locate(files={"x/w.yaml": text}, root="x", source=plain, drifts=d, default_namespace="staging")
    assert other.locations == () and "no manifest declares" in other.unresolved[0].reason
