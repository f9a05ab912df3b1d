"""Bounded reading (issue 12): a YAML bomb, a too deep or too large file fails fast, naming the file; the rest goes on.

The bomb cases run the real CLI as a process and measure its wall time and peak RSS (``os.wait4``) against the
same command without the bomb: a behaviour check with generous bounds, not a benchmark. Unbounded, such a file
kept `writeback diff` busy for minutes while it grew past a gigabyte.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.gitrepos import init_repo
from writeback.adapters.dumps import read_live
from writeback.adapters.files import read_manifests, read_stream
from writeback.errors import YamlError
from writeback.yaml.constructing import MAX_ALIAS_GROWTH, MAX_DEPTH
from writeback.yaml.reading import MAX_CHARS, load_all

GOOD = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  namespace: default
data:
  mode: {mode}
"""


def laughs(levels: int, *, indent: str = "") -> str:
    """Mapping entries l0..l<levels-1>, each a list of 9 aliases of the one before: 9^levels strings expanded."""
    text = f"{indent}l0: &l0 [" + ", ".join(['"lol"'] * 9) + "]\n"
    for i in range(1, levels):
        text += f"{indent}l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n"
    return text


def bomb(levels: int = 9) -> str:
    """A billion-laughs ConfigMap: 9 levels of 9 aliases (9^9 = 387 million strings once expanded)."""
    return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n  namespace: default\ndata:\n" + laughs(
        levels, indent="  "
    )


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def measured(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str, float, int]:
    """Exit code, stdout, stderr, wall seconds and peak RSS (bytes) of the real CLI as a process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "writeback.cli", *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()  # small outputs: no pipe can fill up meanwhile
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, out, err, time.perf_counter() - t0, usage.ru_maxrss * 1024


def test_bomb_in_git_and_in_the_live_dump_fails_fast_and_the_rest_goes_on(tmp_path: Path) -> None:
    repo, live = tmp_path / "repo", tmp_path / "live"
    write(repo, "apps/web.yaml", GOOD.format(mode="normal"))
    write(live, "web.yaml", GOOD.format(mode="safe"))
    init_repo(repo)
    args = ("diff", "--live", str(live), "--repo", str(repo), "--path", "apps")
    rc, out, _, base_wall, base_rss = measured(*args)  # the same command without the bombs: the yardstick
    assert rc == 0 and "data.mode" in out

    write(repo, "apps/bomb.yaml", bomb())  # a bad Git file: named, and the good objects still compared
    rc, out, err, wall, rss = measured(*args)
    assert rc == 2  # an input error, named
    assert "data.mode" in out and 'git "normal" -> live "safe"' in out
    assert "apps/bomb.yaml: YAML aliases expand this document by more than" in err, err
    assert wall < 3 * base_wall + 10, (wall, base_wall)  # seconds, where unbounded it ran for minutes ...
    assert rss < base_rss + 50 * 2**20, (rss, base_rss)  # ... and tens of MB, where it grew past 1.3 GB

    write(live, "bomb.yaml", bomb())  # live input that cannot be read stops the command before any report
    rc, out, err, wall, rss = measured(*args)
    assert rc == 2 and out == ""
    assert f"{live}/bomb.yaml: YAML aliases expand this document by more than" in err, err
    assert wall < 3 * base_wall + 10 and rss < base_rss + 50 * 2**20, (wall, rss, base_wall, base_rss)


def test_bomb_in_the_config_fails_fast_naming_the_file(tmp_path: Path) -> None:
    good = write(tmp_path, "empty.yaml", "")
    rc, _, _, base_wall, base_rss = measured("config", "validate", str(good))
    assert rc == 2
    config = write(tmp_path, "writeback.yaml", "targets: []\n" + laughs(9))
    rc, _, err, wall, rss = measured("config", "validate", str(config))
    assert rc == 2
    assert f"{config}: YAML aliases expand this document" in err, err
    assert wall < 3 * base_wall + 10 and rss < base_rss + 50 * 2**20, (wall, rss, base_wall, base_rss)


def test_bomb_among_kustomize_inputs_is_refused_before_kustomize_runs(tmp_path: Path, kustomize_bin: Path) -> None:
    # kustomize itself expands aliases without a bound (it grows by gigabytes): writeback reads its inputs first
    repo = tmp_path / "repo"
    write(repo, "base/web.yaml", GOOD.format(mode="normal"))
    write(repo, "base/bomb.yaml", bomb())
    write(repo, "base/kustomization.yaml", "resources:\n  - web.yaml\n  - bomb.yaml\n")
    write(repo, "overlay/kustomization.yaml", "resources:\n  - ../base\n")
    live = write(tmp_path, "live.yaml", GOOD.format(mode="safe"))
    init_repo(repo)
    args = ("diff", "--live", str(live), "--repo", str(repo), "--path", "overlay")
    env = {"WRITEBACK_KUSTOMIZE": str(kustomize_bin)}
    bomb_file = repo / "base" / "bomb.yaml"
    bomb_text = bomb_file.read_text()
    bomb_file.unlink()  # the yardstick: no bomb, kustomize runs
    write(repo, "base/kustomization.yaml", "resources:\n  - web.yaml\n")
    rc, _, err, base_wall, base_rss = measured(*args, env=env)
    assert rc == 0, err
    bomb_file.write_text(bomb_text)
    write(repo, "base/kustomization.yaml", "resources:\n  - web.yaml\n  - bomb.yaml\n")
    rc, _, err, wall, rss = measured(*args, env=env)
    assert rc == 2
    assert "base/bomb.yaml: YAML aliases expand this document" in err and "kustomize build not run" in err, err
    # kustomize never ran on the bomb (it would take GBs): seconds and tens of MB beyond the same run without it
    assert wall < base_wall + 60 and rss < base_rss + 100 * 2**20, (wall, rss, base_wall, base_rss)


def test_bomb_in_kustomize_output_is_a_problem_of_the_kustomization() -> None:
    res = read_stream(text=GOOD.format(mode="x") + "---\n" + bomb(), file="overlay/kustomization.yaml")
    assert res.objects == ()  # the stream is one unit: it is all or nothing
    (problem,) = res.problems
    assert problem.file == "overlay/kustomization.yaml" and "YAML aliases expand" in problem.message


def test_aliases_within_the_bound_are_read_and_expanded() -> None:
    (doc,) = load_all(bomb(levels=4), source="small.yaml")  # 9^4 = 6561 strings: fine
    assert len(doc["data"]["l3"]) == 9 and doc["data"]["l3"][8][8][8] == ["lol"] * 9
    assert doc["data"]["l3"][0] is not doc["data"]["l3"][1]  # expanded into copies, never shared objects
    levels = 1
    while 9**levels * 4 < MAX_ALIAS_GROWTH:
        levels += 1
    with pytest.raises(YamlError, match="aliases expand"):
        load_all(bomb(levels=levels + 1), source="over.yaml")


def test_recursive_alias_and_deep_nesting_are_refused(tmp_path: Path) -> None:
    with pytest.raises(YamlError, match=r"^loop\.yaml: a YAML alias refers to a node that contains it"):
        load_all("a: &a [1, *a]\n", source="loop.yaml")
    deep = "x: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n"
    write(tmp_path, "deep.yaml", deep)
    write(tmp_path, "ok.yaml", GOOD.format(mode="m"))
    res = read_manifests(root=tmp_path)
    assert [o.ref.name for o in res.objects] == ["web"]
    (problem,) = res.problems
    assert problem.file == "deep.yaml" and problem.message == f"YAML nested deeper than {MAX_DEPTH} levels"


def test_a_10_mb_file_is_read_and_a_file_past_the_limit_is_refused_unread(tmp_path: Path) -> None:
    # decided: files up to MAX_CHARS (64 MiB) are read, in time and memory proportional to their size
    one = GOOD.replace("name: web", "name: cm-{i}").replace("mode: {mode}", "blob: " + "x" * 600)
    text = "---\n".join(one.format(i=i) for i in range(16_000))
    assert len(text) > 10 * 2**20
    write(tmp_path, "big/all.yaml", text)
    res = read_live(path=tmp_path / "big")
    assert len(res.objects) == 16_000 and res.problems == ()
    huge = tmp_path / "huge" / "dump.yaml"
    huge.parent.mkdir()
    with huge.open("wb") as f:
        f.truncate(MAX_CHARS + 1)  # sparse: nothing to write, and nothing must be read
    res = read_live(path=huge.parent)
    (problem,) = res.problems
    assert (
        problem.file == str(huge) and "more than the 64 MiB that writeback reads from one YAML file" in problem.message
    )
