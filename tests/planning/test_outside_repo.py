"""Issue 22 §6 through ``writeback plan``: nothing is read or written outside the repository.

A person changed the image of Deployment prod/web live (``kubectl edit``). The repository reaches outside itself: a
symbolic link to a file or a folder of the bot's host, a Kustomize ``resources`` entry that links or climbs (``..``)
out of it. The host's files declare the same Deployment with the tag ``0.0.0-hostonly``: had writeback read them,
an output would show it. The host's folder is hashed before and after. A link inside the repository is followed for
reading, and the edit goes to the real path.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.forges.test_run_cli import MANIFEST, live_dump
from tests.support.cli import run_cli
from tests.support.gitrepos import commit, git, init_repo
from tests.support.outside import HOST_TAG, Watched, host_dir, repo_links
from writeback.adapters import kustomize as kustomize_cli
from writeback.adapters.git.texts import read_repo
from writeback.kube.paths import parse_path
from writeback.kube.refs import ObjectRef
from writeback.model import Decision, Drift, ManagerOperation, Op
from writeback.pipeline.planning import plan_files
from writeback.pipeline.targets import TargetSpec

REFUSED = "is a symbolic link that resolves outside the repository"

PATCHED = "resources:\n  - web.yaml\npatches:\n  - path: patch.yaml\n"
API = MANIFEST.replace("name: web", "name: api")
Case = Callable[[Path], tuple[dict[str, str], dict[str, str]]]


def _case(files: dict[str, str], links: Callable[[Path], dict[str, str]]) -> Case:
    return lambda host: (files, links(host))


# case -> (files, links) of the repository, given the host folder; each leaves the repository
OUTSIDE: dict[str, Case] = {
    "a link to a file outside": _case({}, lambda host: {"apps/web.yaml": str(host / "web.yaml")}),
    "a link to a folder outside": _case({"apps/api.yaml": API}, lambda host: {"apps/ext": str(host / "dir")}),
    "a kustomize resource linked outside": _case(
        {"apps/kustomization.yaml": "resources:\n  - ext\n"}, lambda host: {"apps/ext": str(host / "base")}
    ),
    "a kustomize .. chain out of the repository": _case(
        {"apps/kustomization.yaml": "resources:\n  - ../../host/base\n"}, lambda host: {}
    ),
    "a kustomize patch file linked outside": _case(
        {"apps/kustomization.yaml": PATCHED, "apps/web.yaml": MANIFEST},
        lambda host: {"apps/patch.yaml": str(host / "web.yaml")},
    ),
}
WHY = {
    "a link to a file outside": f"apps/web.yaml: not read: apps/web.yaml {REFUSED}",
    "a link to a folder outside": f"apps/ext: not read: apps/ext {REFUSED}",
    "a kustomize resource linked outside": f"resources ext: apps/ext {REFUSED}; kustomize build not run",
    "a kustomize .. chain out of the repository": "resources ../../host/base: ../host/base is outside the repository",
    "a kustomize patch file linked outside": f"patches[].path patch.yaml: apps/patch.yaml {REFUSED}",
}


def _repo(tmp_path: Path, files: dict[str, str], links: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    init_repo(repo)
    repo_links(repo, files=files, links=links)
    commit(repo, "the app")
    return repo


@pytest.fixture
def kustomize(kustomize_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kustomize_cli.ENV_VAR, str(kustomize_bin))


@pytest.mark.parametrize("case", OUTSIDE)
@pytest.mark.usefixtures("kustomize")
def test_plan_never_reads_outside_the_repository(case: str, tmp_path: Path) -> None:
    host = host_dir(tmp_path)
    watched, before = Watched(host), Watched(host).digest()
    repo = _repo(tmp_path, *OUTSIDE[case](host))
    live = live_dump(tmp_path, "registry.example.com/web:1.0.4")
    code, out, err = run_cli("plan", "--live", str(live), "--repo", str(repo), "--path", "apps")
    assert code == 2, out + err  # bad input: the problem is named
    assert WHY[case] in err, err
    assert HOST_TAG not in out + err and "the host's" not in out + err  # nothing of the host was read
    assert "web.yaml" not in "".join(line for line in out.splitlines() if line.startswith("+++"))
    assert watched.digest() == before
    assert git("status", "--porcelain", cwd=repo) == ""


@pytest.mark.usefixtures("kustomize")
def test_a_compared_revision_with_a_link_outside_is_refused_alike(tmp_path: Path) -> None:
    """At a compared revision (a checkout of an older commit), the link is kept as Git has it and refused the same
    way, rather than followed or failing the extraction."""
    host = host_dir(tmp_path)
    before = Watched(host).digest()
    repo = _repo(tmp_path, {}, {"apps/web.yaml": str(host / "web.yaml")})
    first = git("rev-parse", "HEAD", cwd=repo)
    commit(repo, "more", files={"apps/other.yaml": "# nothing\n"})
    live = live_dump(tmp_path, "registry.example.com/web:1.0.4")
    code, out, err = run_cli("plan", "--live", str(live), "--repo", str(repo), "--path", "apps", "--revision", first)
    assert code == 2, out + err
    assert f"apps/web.yaml: not read: apps/web.yaml {REFUSED}" in err
    assert HOST_TAG not in out + err
    assert Watched(host).digest() == before


@pytest.mark.parametrize("command", ["diff", "plan"])
def test_a_symbolic_link_loop_is_named_and_the_other_files_still_read(command: str, tmp_path: Path) -> None:
    """A link to itself (or a cycle of links) cannot be read: it is a problem naming the file, never a crash, and
    the manifests beside it are compared and planned as usual."""
    repo = _repo(tmp_path, {"apps/web.yaml": MANIFEST}, {"apps/loop.yaml": "loop.yaml", "apps/a.yaml": "b.yaml",
                                                          "apps/b.yaml": "a.yaml"})  # fmt: skip
    live = live_dump(tmp_path, "registry.example.com/web:1.0.4")
    code, out, err = run_cli(command, "--live", str(live), "--repo", str(repo), "--path", "apps", "--output", "json")
    assert code == 2, out + err  # bad input: named, with a non-zero exit
    doc = json.loads(out)
    assert sorted(p["file"] for p in doc["problems"]) == ["apps/a.yaml", "apps/b.yaml", "apps/loop.yaml"]
    assert all("cannot read" in p["message"] for p in doc["problems"]), doc["problems"]
    if command == "diff":
        assert any(d["live"] == "registry.example.com/web:1.0.4" for d in doc["drifts"]), doc["drifts"]
    else:
        [cs] = doc["changesets"]
        assert [f["path"] for f in cs["files"]] == ["apps/web.yaml"] and "web:1.0.4" in cs["files"][0]["diff"]


def test_a_link_inside_the_repository_is_read_and_the_edit_goes_to_its_real_path(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"common/web.yaml": MANIFEST}, {"apps/web.yaml": "../common/web.yaml"})
    live = live_dump(tmp_path, "registry.example.com/web:1.0.4")
    code, out, err = run_cli("plan", "--live", str(live), "--repo", str(repo), "--path", "apps", "--output", "json")
    assert code == 0, err
    [cs] = json.loads(out)["changesets"]
    assert [f["path"] for f in cs["files"]] == ["common/web.yaml"]
    assert "web:1.0.4" in cs["files"][0]["diff"] and "+++ b/common/web.yaml" in cs["files"][0]["diff"]
    # the same from the top of the repository, where the link and the file it points to are both under the path
    code, out, err = run_cli("plan", "--live", str(live), "--repo", str(repo), "--path", ".", "--output", "json")
    assert code == 0, err
    [cs] = json.loads(out)["changesets"]
    assert [f["path"] for f in cs["files"]] == ["common/web.yaml"]
    assert (repo / "apps/web.yaml").is_symlink() and git("status", "--porcelain", cwd=repo) == ""


def test_an_edit_that_would_leave_the_repository_is_unresolved_with_the_reason(tmp_path: Path) -> None:
    """Defence in depth: given a text for a path that leaves the repository (as an older reader would have read
    it), the planner writes nothing there: the drift is unresolved, and says why."""
    host = host_dir(tmp_path)
    before = Watched(host).digest()
    repo = tmp_path / "repo"
    repo_links(repo, files={}, links={"apps": str(host / "dir")})
    web = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="prod", name="web")
    path = parse_path("spec.template.spec.containers[name=app].image")
    drift = Drift(resource=web, path=path, op=Op.CHANGE, live="registry.example.com/web:1.0.4",
                  git=f"registry.example.com/web:{HOST_TAG}", manager="kubectl-edit", operation=ManagerOperation.UPDATE,
                  decision=Decision.WRITEBACK, reason="a person's edit")  # fmt: skip
    files = {"apps/web.yaml": (host / "dir" / "web.yaml").read_text()}
    outcome = plan_files(files=files, drifts=[drift], spec=TargetSpec(name="apps", path="apps"), repo=repo)
    [cs] = outcome.plan.changesets
    assert cs.files == () and outcome.plan.errors == ()
    assert [u.reason for u in cs.unresolved] == [f"apps {REFUSED}: not written"]
    assert read_repo(repo).refused == {"apps": f"apps {REFUSED}"}
    assert Watched(host).digest() == before


@pytest.mark.parametrize("command", ["diff", "plan"])
def test_a_target_path_that_is_a_link_loop_is_a_named_input_error(command: str, tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"other/web.yaml": MANIFEST}, {"apps": "apps"})
    live = live_dump(tmp_path, "registry.example.com/web:1.0.4")
    code, out, err = run_cli(command, "--live", str(live), "--repo", str(repo), "--path", "apps")
    assert code == 2, out + err
    assert "apps: no such directory in the repository" in err and "a link loop" in err, err
    assert "RuntimeError" not in err
