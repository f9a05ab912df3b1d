"""Docker cannot run here, so the Dockerfile is parsed (the official BuildKit parser via `dockerfile`) and checked."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import dockerfile
import pytest

ROOT = Path(__file__).resolve().parents[2]
KUSTOMIZE_MOD = ROOT / "tests" / "controlplane" / "go" / "kustomize" / "go.mod"
BUILD_TOOLS = {"gcc", "g++", "make", "build-essential", "golang", "golang-go", "clang", "cmake", "curl", "wget"}


@dataclass(kw_only=True)
class Stage:
    image: str
    name: str | None
    commands: list[dockerfile.Command] = field(default_factory=list)

    def args(self, cmd: str) -> list[tuple[str, ...]]:
        return [c.value for c in self.commands if c.cmd == cmd]


def _substitute(text: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)), text)


def _stages() -> list[Stage]:
    commands = dockerfile.parse_file(str(ROOT / "Dockerfile"))
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for c in commands:
        if c.cmd == "FROM":
            image = _substitute(c.value[0], global_args)
            name = c.value[2] if len(c.value) == 3 and c.value[1].upper() == "AS" else None
            stages.append(Stage(image=image, name=name))
        elif not stages:
            if c.cmd == "ARG":
                key, _, default = c.value[0].partition("=")
                global_args[key] = default
        else:
            stages[-1].commands.append(c)
    return stages


STAGES = _stages()
FINAL = STAGES[-1]


def _stage_args(stage: Stage) -> dict[str, str]:
    return dict(a[0].partition("=")[::2] for a in stage.args("ARG"))


def test_multi_stage_with_every_base_pinned_to_a_version_or_digest() -> None:
    assert len(STAGES) >= 2
    names = set()
    for stage in STAGES:
        if stage.image in names:
            continue  # an earlier stage, not a registry image
        assert "$" not in stage.image, f"FROM {stage.image}: an ARG without a default"
        repo_tag, _, digest = stage.image.partition("@")
        tag = repo_tag.rsplit(":", 1)[1] if ":" in repo_tag.rsplit("/", 1)[-1] else ""
        if digest:
            assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest), stage.image
        else:
            assert tag and tag != "latest", f"FROM {stage.image}: no pinned tag"
            assert re.match(r"^\d+\.\d+\.\d+", tag), f"FROM {stage.image}: the tag is not an exact version"
        if stage.name:
            names.add(stage.name)


def test_runtime_base_is_a_slim_python_that_pyproject_allows() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    minimum = tuple(int(x) for x in re.search(r">=\s*(\d+)\.(\d+)", requires).groups())  # type: ignore[union-attr]
    m = re.fullmatch(
        r"(?:docker\.io/(?:library/)?)?python:(\d+)\.(\d+)\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?", FINAL.image
    )
    assert m, f"runtime base {FINAL.image} is not a pinned python:X.Y.Z-slim image"
    assert (int(m.group(1)), int(m.group(2))) >= minimum


def test_runtime_stage_runs_as_a_numeric_non_root_user() -> None:
    users = FINAL.args("USER")
    assert users, "the runtime stage sets no USER: it would run as root"
    user, _, group = users[-1][0].partition(":")
    assert user.isdigit() and int(user) != 0, f"USER {users[-1][0]}: use a numeric non-root uid (runAsNonRoot)"
    assert not group or (group.isdigit() and int(group) != 0)
    last_user = max(i for i, c in enumerate(FINAL.commands) if c.cmd == "USER")
    assert all(c.cmd != "RUN" for c in FINAL.commands[last_user:]), "nothing runs as root after USER"


def test_nothing_is_downloaded_from_arbitrary_urls() -> None:
    for stage in STAGES:
        for c in stage.commands:
            if c.cmd == "ADD":
                assert not any(re.match(r"^(https?|ftp|git)://|^git@", v) for v in c.value[:-1]), c.original
            if c.cmd == "RUN":
                assert not re.search(r"\b(curl|wget)\b", c.original), f"downloads in RUN: {c.original}"


def test_runtime_has_git_openssh_client_and_no_build_tools() -> None:
    installs = [v[0] for v in FINAL.args("RUN") if "apt-get install" in v[0]]
    packages = {w for line in installs for w in re.split(r"[\s&|;\\]+", line) if w and not w.startswith("-")}
    assert {"git", "openssh-client"} <= packages
    assert not packages & BUILD_TOOLS, f"build tools in the runtime image: {packages & BUILD_TOOLS}"
    froms = {flag.split("=", 1)[1] for c in FINAL.commands for flag in c.flags if flag.startswith("--from=")}
    assert froms <= {s.name for s in STAGES[:-1]}, "the runtime copies only from this file's build stages"
    assert any("pip uninstall" in v[0] and "setuptools" in v[0] for v in FINAL.args("RUN"))


def test_kustomize_is_built_from_the_pinned_module_and_copied_onto_path() -> None:
    copies = [c for c in FINAL.commands if c.cmd == "COPY" and c.value[-1].endswith("/bin/kustomize")]
    assert copies, "no kustomize binary copied into the runtime image"
    source = next(f.split("=", 1)[1] for f in copies[0].flags if f.startswith("--from="))
    builder = next(s for s in STAGES if s.name == source)
    copied = {v for c in builder.commands if c.cmd == "COPY" for v in c.value[:-1]}
    assert all(v.startswith("tests/controlplane/go/kustomize/") for v in copied), copied
    mod = KUSTOMIZE_MOD.read_text()
    version = re.search(r"sigs\.k8s\.io/kustomize/kustomize/v5 (v\S+)", mod).group(1)  # type: ignore[union-attr]
    assert _stage_args(builder)["KUSTOMIZE_VERSION"] == version, "the image and the tests must use one kustomize"
    go_min = re.search(r"^go (\d+)\.(\d+)", mod, re.M).groups()  # type: ignore[union-attr]
    go_tag = re.search(r"golang:(\d+)\.(\d+)\.\d+", builder.image)
    assert go_tag and go_tag.groups() == go_min, f"{builder.image} vs go {'.'.join(go_min)} in {KUSTOMIZE_MOD}"
    assert any("go build" in v[0] for v in builder.args("RUN"))


def test_entrypoint_is_the_writeback_console_script() -> None:
    entry = [c for c in FINAL.commands if c.cmd == "ENTRYPOINT"]
    assert entry and entry[-1].json and entry[-1].value == ("writeback",), 'exec-form ENTRYPOINT ["writeback"]'
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "writeback" in scripts
    assert FINAL.args("CMD")[-1][:3] == ("run", "--config", "/etc/writeback/config.yaml")


def _ignored(path: str, patterns: list[str]) -> bool:
    """.dockerignore semantics, enough for this file: the last matching pattern wins; a dir match covers its files."""
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    result = False
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = raw.lstrip("!").rstrip("/")
        if any(fnmatch.fnmatch(c, pattern) for c in candidates):
            result = not negate
    return result


@pytest.mark.parametrize(
    ("path", "sent"),
    [
        ("pyproject.toml", True),
        ("writeback/__init__.py", True),
        ("tests/controlplane/go/kustomize/go.sum", True),
        ("writeback/__pycache__/model.cpython-311.pyc", False),
        (".git/config", False),
        ("tests/conftest.py", False),
        (".venv/bin/python", False),
    ],
)
def test_dockerignore_sends_only_what_the_build_copies(path: str, sent: bool) -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert _ignored(path, patterns) is (not sent)


def test_every_copied_context_path_exists_and_is_sent() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    for stage in STAGES:
        for c in stage.commands:
            if c.cmd != "COPY" or any(f.startswith("--from=") for f in c.flags):
                continue
            for src in c.value[:-1]:
                assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
                probe = src.rstrip("/") + ("/__init__.py" if src == "writeback/" else "")
                assert not _ignored(probe, patterns), f"COPY {src}: excluded by .dockerignore"
