"""requirements.lock (``uv pip compile``, checked in) agrees with pyproject.toml, and every install uses it.

Regenerate after changing a dependency (PyPI is enough; ``pip install uv`` first):
    uv pip compile pyproject.toml --extra test --python-version 3.11 --universal -o requirements.lock
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
COMMAND = "uv pip compile pyproject.toml --extra test --python-version 3.11 --universal -o requirements.lock"
PROJECT = "writeback (pyproject.toml)"


def _direct() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = [Requirement(r) for r in (*project["dependencies"], *project["optional-dependencies"]["test"])]
    return {canonicalize_name(r.name): r for r in reqs}


def _locked() -> dict[str, tuple[str, set[str]]]:
    """Each pinned package: its version and the packages (or the project) it is there for."""
    pins: dict[str, tuple[str, set[str]]] = {}
    current: str | None = None
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        pin = re.match(r"^([A-Za-z0-9._-]+)==([^\s;]+)", line)
        if pin:
            current = canonicalize_name(pin.group(1))
            pins[current] = (pin.group(2), set())
            continue
        via = re.match(r"^\s+#\s+(?:via\s+)?(\S.*)$", line)
        if via and current is not None and via.group(1) != "via":
            pins[current][1].add(via.group(1).strip())
    return pins


def test_the_lock_is_generated_from_pyproject_by_uv() -> None:
    assert COMMAND in LOCK.read_text(encoding="utf-8").splitlines()[1]


def test_every_dependency_is_pinned_within_its_range() -> None:
    locked = _locked()
    for name, req in _direct().items():
        assert name in locked, f"{req}: not in requirements.lock; regenerate it ({COMMAND})"
        version, via = locked[name]
        assert req.specifier.contains(version, prereleases=True), f"{req}: the lock pins {version}; regenerate it"
        assert PROJECT in via, f"{name}: the lock does not record it as a dependency of pyproject.toml"


def test_the_lock_holds_nothing_pyproject_no_longer_needs() -> None:
    locked, direct = _locked(), _direct()
    for name, (_, via) in locked.items():
        assert via, f"{name}: pinned for no package"
        if PROJECT in via:
            assert name in direct, f"{name}: pinned for pyproject.toml, which no longer asks for it; regenerate"
        for parent in via - {PROJECT}:
            assert canonicalize_name(parent) in locked, f"{name}: pinned for {parent}, which is not in the lock"


def test_every_install_uses_the_lock() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    installs = re.findall(r"pip install [^\n&]*", readme)
    assert len(installs) >= 2 and all("-c requirements.lock" in i for i in installs), installs
    assert "-c requirements.lock" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"pip wheel [^\n]*-c requirements\.lock", dockerfile)
    assert re.search(r"COPY [^\n]*requirements\.lock", dockerfile)
