"""Change sets: ids, fingerprints, the security split, ignored/new drifts, and verification aborts."""

from __future__ import annotations

from dataclasses import replace

from tests.planning.repos import WEB, drift, ref
from writeback.model import Decision, Drift, FilePatch, ManagerOperation, Op, Review
from writeback.pr.diffs import render_file_patch
from writeback.sources.changesets import Plan, changeset_id, fingerprint, plan_changesets
from writeback.sources.locating import locate
from writeback.sources.registry import by_name

WEB_YAML = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: app
          image: registry.example.com/web:1.0.0
          env:
            - name: MODE
              value: normal
"""
FILES = {"apps/web.yaml": WEB_YAML}
IMAGE = "spec.template.spec.containers[name=app].image"
PRIV = "spec.template.spec.containers[name=app].securityContext.privileged"


def _plan(drifts: list[Drift], files: dict[str, str] = FILES, *, fingerprint_key: bytes | None = None) -> Plan:
    located = locate(files=files, root="apps", source=by_name("plain"), drifts=drifts)
    return plan_changesets(target="prod", files=files, drifts=drifts, located=located, fingerprint_key=fingerprint_key)


def test_fingerprint_ignores_time_and_manager_but_not_values() -> None:
    a = drift(WEB, IMAGE, live="registry.example.com/web:1.0.4", git="registry.example.com/web:1.0.0")
    b = replace(
        a, time="2026-12-01T09:00:00Z", manager="kubectl-patch", operation=ManagerOperation.APPLY, reason="other"
    )
    c = replace(a, live="registry.example.com/web:1.0.5")
    r = drift(WEB, "spec.replicas", live=3, git=2)
    assert fingerprint([a, r]) == fingerprint([r, b])
    assert fingerprint([a, r]) != fingerprint([c, r])
    assert fingerprint([a]) != fingerprint([a, r])
    assert fingerprint([a]) != fingerprint([replace(a, path=a.path[:-1])])


def test_sensitive_values_are_fingerprinted_with_an_hmac_only() -> None:
    s = drift(ref("ConfigMap", "cfg", api_version="v1"), "data.token", live="s3cr3t", git="old", sensitive=True)
    assert fingerprint([s], key=b"k1") != fingerprint([s], key=b"k2")
    assert fingerprint([s], key=b"k1") == fingerprint([replace(s, time="later")], key=b"k1")
    assert fingerprint([s], key=b"k1") != fingerprint([replace(s, live="other")], key=b"k1")
    assert fingerprint([s]) == fingerprint([replace(s, live="other")])  # no key: no guessable hash of the value
    plan = _plan([s], fingerprint_key=b"k1")
    (cs,) = plan.changesets
    assert cs.files == () and "report-only" in cs.unresolved[0].reason


def test_id_is_a_stable_slug_while_the_drift_changes() -> None:
    one = _plan([drift(WEB, "spec.replicas", live=3, git=2)]).changesets[0]
    two = _plan([drift(WEB, "spec.replicas", live=4, git=2), drift(WEB, IMAGE, live="x:2", git="x:1")]).changesets[0]
    assert one.id == two.id == "prod"
    assert one.fingerprint != two.fingerprint
    assert changeset_id(target="Prod EU", app="Web/API") == "prod-eu-web-api"
    assert changeset_id(target="prod", review=Review.SECURITY) == "prod-security"


def test_flag_drifts_get_their_own_security_changeset() -> None:
    drifts = [
        drift(WEB, "spec.replicas", live=3, git=2),
        drift(WEB, PRIV, op=Op.ADD, live=True, decision=Decision.FLAG),
        drift(WEB, "spec.template.spec.containers[name=app].env[name=MODE].value", live="x", decision=Decision.IGNORE),
        drift(ref("ConfigMap", "extra", api_version="v1"), "data", op=Op.ADD, live={}, decision=Decision.NEW),
    ]
    plan = _plan(drifts)
    standard, security = plan.changesets
    assert (standard.id, standard.review, security.id, security.review) == (
        "prod",
        Review.STANDARD,
        "prod-security",
        Review.SECURITY,
    )
    assert [d.path for d in standard.drifts] == [drifts[0].path]
    assert [d.path for d in security.drifts] == [drifts[1].path]
    assert "replicas: 3" in standard.files[0].after and "privileged" not in standard.files[0].after
    assert "privileged: true" in security.files[0].after and "replicas: 2" in security.files[0].after
    assert standard.ignored == (drifts[2],) and security.ignored == ()
    (new,) = standard.unresolved
    assert new.resource.name == "extra" and new.reason.startswith("new:")


def test_verification_failure_aborts_only_that_changeset() -> None:
    ambiguous = WEB_YAML + "            - name: MODE\n              value: twice\n"
    files = {"apps/web.yaml": ambiguous}
    drifts = [
        drift(WEB, "spec.template.spec.containers[name=app].env[name=MODE].value", live="safe", git="normal"),
        drift(WEB, PRIV, op=Op.ADD, live=True, decision=Decision.FLAG),
    ]
    plan = _plan(drifts, files=files)
    standard, security = plan.changesets
    assert standard.files == ()
    (error,) = plan.errors
    assert error.message.startswith("change set prod aborted: apps/web.yaml:")
    assert security.files and "privileged: true" in security.files[0].after


def test_unified_diff_is_git_style() -> None:
    patch = FilePatch(path="apps/web.yaml", before="a: 1\nb: 2", after="a: 1\nb: 3")
    text = render_file_patch(patch)
    assert text.splitlines()[:3] == [
        "diff --git a/apps/web.yaml b/apps/web.yaml",
        "--- a/apps/web.yaml",
        "+++ b/apps/web.yaml",
    ]
    assert text.endswith("-b: 2\n\\ No newline at end of file\n+b: 3\n\\ No newline at end of file\n")
    new = render_file_patch(FilePatch(path="n.yaml", before=None, after="x: 1\n"))
    assert new.splitlines()[1:4] == ["new file mode 100644", "--- /dev/null", "+++ b/n.yaml"]
    assert render_file_patch(FilePatch(path="same.yaml", before="x\n", after="x\n")) == ""


def test_a_target_spanning_several_apps_gets_changesets_per_app() -> None:
    api_yaml = WEB_YAML.replace("name: web", "name: api")
    files = {"apps/web.yaml": WEB_YAML, "apps/api.yaml": api_yaml}
    api = ref("Deployment", "api")
    drifts = [
        drift(WEB, "spec.replicas", live=3, git=2),
        drift(api, "spec.replicas", live=6, git=2),
        drift(api, PRIV, op=Op.ADD, live=True, decision=Decision.FLAG),
    ]
    apps = {WEB.identity: "web-prod", api.identity: "api-prod"}
    located = locate(files=files, root="apps", source=by_name("plain"), drifts=drifts)
    plan = plan_changesets(target="prod", files=files, drifts=drifts, located=located, apps=apps)
    got = [(cs.id, cs.review, [f.path for f in cs.files]) for cs in plan.changesets]
    assert got == [
        ("prod-api-prod", Review.STANDARD, ["apps/api.yaml"]),
        ("prod-api-prod-security", Review.SECURITY, ["apps/api.yaml"]),
        ("prod-web-prod", Review.STANDARD, ["apps/web.yaml"]),
    ]
    one_app = plan_changesets(target="prod", files=files, drifts=drifts[:1], located=located, apps=apps)
    assert [cs.id for cs in one_app.changesets] == ["prod"]


def test_tracked_app_reads_gitops_tracking_metadata() -> None:
    from writeback.gitops.registry import app_of as tracked_app

    argo = {"metadata": {"annotations": {"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:prod/web"}}}
    flux = {"metadata": {"labels": {"kustomize.toolkit.fluxcd.io/name": "infra"}}}
    assert (tracked_app(argo), tracked_app(flux), tracked_app({"metadata": {}})) == ("shop", "infra", None)
