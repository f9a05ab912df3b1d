"""bench/measuring.py: a measured process reports its own peak memory, not the harness's, and runs from a
bytecode cache when PYTHONDONTWRITEBYTECODE is set. Real processes, no cluster; memory sizes, not timings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from measuring import bytecode_env, bytecode_note, run_process  # noqa: E402
from scale_floor import parse_resources  # noqa: E402

MiB = 2**20


def _touch(size: int) -> bytearray:
    block = bytearray(size)
    block[::4096] = b"x" * len(block[::4096])  # resident, not only reserved
    return block


def test_a_measured_process_reports_its_own_peak_not_the_harness_s() -> None:
    held = _touch(256 * MiB)  # the harness grows (a loaded world, the service's cache, ...)
    # the reason for the launcher: a child spawned directly from this process reports at least its pages
    direct = subprocess.Popen([sys.executable, "-c", "pass"])
    _, _, usage = os.wait4(direct.pid, 0)
    assert usage.ru_maxrss * 1024 >= 256 * MiB
    empty = run_process([sys.executable, "-c", "pass"])
    assert empty.returncode == 0
    assert empty.peak_rss < 48 * MiB, empty  # a bare Python: about 13 MiB
    assert empty.launcher_rss < empty.peak_rss  # so the figure is the command's, not the launcher's
    big = run_process([sys.executable, "-c", "b = bytearray(96 * 2**20); b[::4096] = b'x' * len(b[::4096])"])
    assert 96 * MiB <= big.peak_rss < 96 * MiB + 48 * MiB, big
    assert big.cpu > 0 and big.wall >= big.cpu * 0.5
    del held


def test_output_exit_code_stdin_and_environment_pass_through(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("from stdin\n")
    code = (
        "import os, sys; print(sys.stdin.read().strip(), os.environ['WB_X']); "
        "print('oops', file=sys.stderr); sys.exit(3)"
    )
    run = run_process([sys.executable, "-c", code], env={**os.environ, "WB_X": "42"}, stdin=str(source))
    assert (run.returncode, run.stdout, run.stderr) == (3, "from stdin 42\n", "oops\n")


def _module(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "wbmod.py").write_text("VALUE = 1\n")
    return src


def test_with_dontwritebytecode_set_measured_processes_cache_bytecode_outside_the_tree(tmp_path: Path) -> None:
    src, cache = _module(tmp_path), tmp_path / "pycache"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(cache)}
    cmd = [sys.executable, "-c", "import wbmod"]
    subprocess.run(cmd, cwd=src, env=env, check=True)  # as the environment says: nothing written anywhere
    assert run_process(cmd, cwd=str(src), env=env, bytecode_cache=False).returncode == 0  # the A/B's other side
    assert not cache.exists() and not (src / "__pycache__").exists()
    assert run_process(cmd, cwd=str(src), env=env).returncode == 0
    assert list(cache.rglob("wbmod*.pyc")), "the measured process wrote no bytecode to the cache"
    assert not (src / "__pycache__").exists()  # the source tree stays clean
    note = bytecode_note(env)
    assert "PYTHONDONTWRITEBYTECODE is set" in note and str(cache) in note


def test_the_default_bytecode_cache_and_the_note_without_dontwritebytecode() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    assert bytecode_env(env) == env  # nothing to change
    assert "beside the sources" in bytecode_note(env)
    forced = bytecode_env({**env, "PYTHONDONTWRITEBYTECODE": "1"})
    assert "PYTHONDONTWRITEBYTECODE" not in forced
    assert forced["PYTHONPYCACHEPREFIX"].endswith(os.path.join("writeback", "bench-pycache"))


def test_the_harness_s_own_imports_use_the_cache(tmp_path: Path) -> None:
    src = _module(tmp_path)
    code = (
        f"import sys; sys.path.insert(0, {str(BENCH)!r}); import measuring; "
        "measuring.use_bytecode_cache(); import wbmod"
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env.pop("PYTHONPYCACHEPREFIX", None)
    subprocess.run([sys.executable, "-c", code], cwd=src, env=env, check=True)
    assert list((tmp_path / "xdg" / "writeback" / "bench-pycache").rglob("wbmod*.pyc"))
    assert not (src / "__pycache__").exists()


def test_the_floor_lists_the_resources_it_is_given() -> None:
    assert parse_resources("apps/v1/deployments,v1/configmaps,rbac.authorization.k8s.io/v1/roles") == (
        ("/apis/apps/v1", "deployments"),
        ("/api/v1", "configmaps"),
        ("/apis/rbac.authorization.k8s.io/v1", "roles"),
    )
