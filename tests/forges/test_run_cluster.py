"""``writeback run --once`` against the real kube-apiserver: a person's kubectl change becomes a PR whose body
carries the server-side dry-run verification of the patched manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.github_fake import GitHubFake
from tests.forges.test_run_cli import PROJECTS, TOKENS, refs
from tests.support.cli import run_cli
from tests.support.gitrepos import git, seed_bare
from tests.support.objects import web_manifest

MANIFEST = web_manifest(comment="web frontend")


@pytest.mark.controlplane
def test_kubectl_edit_becomes_a_verified_pull_request(
    controlplane: Any, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    bare, seed = tmp_path / "repo.git", tmp_path / "repo-seed"
    seed_bare(bare, seed, {"apps/web.yaml": MANIFEST})
    # the GitOps controller syncs Git, then a person changes the image at 3 AM
    controlplane.kubectl(
        "apply", "--server-side", "--field-manager=argocd-controller", "-n", namespace, "-f", str(seed / "apps")
    )
    controlplane.kubectl("set", "image", "-n", namespace, "deployment/web", "app=registry.example.com/web:1.0.7")

    monkeypatch.setenv("WB_TEST_TOKEN", TOKENS["github"])
    fake = GitHubFake(bare=bare).start()
    try:
        code, out, err = run_cli(
            "run", "--once", "--repo-url", str(bare), "--forge", "github", "--forge-url", fake.url,
            "--forge-project", PROJECTS["github"], "--token-env", "WB_TEST_TOKEN", "--path", "apps",
            "--namespace", namespace, "--kubeconfig", controlplane.kubeconfig,
        )  # fmt: skip
        assert code == 0, err
        assert " created " in out
        [pr] = fake.prs.values()
        assert "registry.example.com/web:1.0.7" in pr["body"]
        assert "kubectl-set" in pr["body"]
        assert "no change to the 1 written-back field (they match live)" in pr["body"]
        [branch] = [line.split()[-1] for line in refs(bare).splitlines() if "writeback/" in line]
        patched = git("--git-dir", str(bare), "show", f"{branch}:apps/web.yaml")
        assert "image: registry.example.com/web:1.0.7   # bumped by CI" in patched
        assert fake.violations == []
    finally:
        fake.stop()


@pytest.mark.controlplane
def test_a_container_added_live_is_written_back_without_the_servers_defaults(
    controlplane: Any, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Issue 15: the PR adds exactly what the person wrote, lists the defaults under "not written back", and its
    verification line checks that merging changes nothing else live."""
    bare, seed = tmp_path / "repo.git", tmp_path / "repo-seed"
    seed_bare(bare, seed, {"apps/web.yaml": MANIFEST})
    controlplane.kubectl(
        "apply", "--server-side", "--field-manager=argocd-controller", "-n", namespace, "-f", str(seed / "apps")
    )
    sidecar = '{"spec":{"template":{"spec":{"containers":[{"name":"debug","image":"busybox:1.36"}]}}}}'
    controlplane.kubectl("patch", "deployment/web", "-n", namespace, "--type=strategic", "-p", sidecar)
    monkeypatch.setenv("WB_TEST_TOKEN", TOKENS["github"])
    fake = GitHubFake(bare=bare).start()
    try:
        code, _, err = run_cli(
            "run", "--once", "--repo-url", str(bare), "--forge", "github", "--forge-url", fake.url,
            "--forge-project", PROJECTS["github"], "--token-env", "WB_TEST_TOKEN", "--path", "apps",
            "--namespace", namespace, "--kubeconfig", controlplane.kubeconfig,
        )  # fmt: skip
        assert code == 0, err
        [pr] = fake.prs.values()
        body = pr["body"]
        assert "no change to the 1 written-back field (they match live), and nothing else" in body
        not_written = body[body.index("Not written back") :]
        for field in ("terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy"):
            assert field in not_written, field
        [branch] = [line.split()[-1] for line in refs(bare).splitlines() if "writeback/" in line]
        patched = git("--git-dir", str(bare), "show", f"{branch}:apps/web.yaml")
        assert "name: debug" in patched and "busybox:1.36" in patched
        assert "terminationMessagePath" not in patched and "imagePullPolicy" not in patched
        assert fake.violations == []
    finally:
        fake.stop()


@pytest.mark.controlplane
def test_the_verification_line_names_what_merging_would_change_beyond_the_persons_fields(
    controlplane: Any, namespace: str
) -> None:
    from writeback.adapters.kube.cluster import KubeCluster
    from writeback.kube.pathtypes import Key, Select
    from writeback.kube.refs import ObjectRef
    from writeback.model import ChangeSet, Drift, Op, Review
    from writeback.pipeline.verification import verification_line
    from writeback.yaml.reading import load_all

    controlplane.kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-n", namespace, "-f", "-",
                         input=MANIFEST)  # fmt: skip
    controlplane.kubectl("set", "image", "-n", namespace, "deployment/web", "app=registry.example.com/web:1.0.7")
    ref = ObjectRef(api_version="apps/v1", kind="Deployment", namespace=namespace, name="web")
    image = (Key("spec"), Key("template"), Key("spec"), Key("containers"), Select((("name", "app"),)), Key("image"))
    cluster = KubeCluster.connect(kubeconfig=controlplane.kubeconfig)
    patched = MANIFEST.replace("web:1.0.0", "web:1.0.7")
    exact = [d for d in load_all(patched, source="web.yaml") if isinstance(d, dict)]
    person = Drift(resource=ref, path=image, op=Op.CHANGE, live="registry.example.com/web:1.0.7", git=None)
    cs = ChangeSet(id="shop", target="shop", review=Review.STANDARD, fingerprint="f", drifts=(person,))
    line = verification_line(cluster=cluster, cs=cs, objects=exact, default_namespace=namespace)
    assert "they match live), and nothing else" in line, line
    scaled = patched.replace("replicas: 1", "replicas: 9")
    more = [d for d in load_all(scaled, source="web.yaml") if isinstance(d, dict)]
    line = verification_line(cluster=cluster, cs=cs, objects=more, default_namespace=namespace)
    assert "merging would also change 1 other field live" in line and "spec.replicas" in line, line
    named = line.split("(", 1)[1].replace("1 other", "").replace(namespace, "NS")  # the namespace is random
    assert "9" not in named, line  # paths only, never values
