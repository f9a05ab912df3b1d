"""The ClusterRole grants `patch` on the watched kinds only because a server-side dry-run is authorized like a
write. This scan of writeback's source proves the other half: every write to the Kubernetes API carries
dryRun=All, unless it is one of the few real writes the Role is scoped for: Leases and Events (by method), the state
ConfigMap (only from the module listed in OWNED_REAL_WRITES), or a call marked in the code with a
``# real write: <reason>`` comment (break-glass on Argo CD/Flux objects).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "writeback"
WRITE_METHODS = {"PATCH", "POST", "PUT", "DELETE"}
# typed kubernetes client methods that write (create_namespaced_deployment, patch_cluster_custom_object, ...)
TYPED_WRITE = re.compile(
    r"^(create|patch|replace|delete|delete_collection)_(namespaced_\w+|cluster_custom_object|namespace)$"
)
DYNAMIC_WRITE = {"create", "patch", "replace", "delete", "server_side_apply"}
SCOPED_REAL_WRITES = re.compile(r"_namespaced_(lease|event)$")  # the Role confines these to writeback's namespace
# modules that own one scoped real write, and the only typed calls they may make without dryRun=All
OWNED_REAL_WRITES = {
    # the state ConfigMap (resourceNames in the Role)
    "adapters/hotfix_store.py": re.compile(r"_namespaced_config_map$"),
}
MARK = "# real write:"


@dataclass(frozen=True)
class Site:
    path: Path
    line: int
    call: str
    dry_run: bool
    exempt: bool

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.call}"


def _is_all(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "All"


def _dry_run_in(fn: ast.AST) -> bool:
    """A ("dryRun", "All") query pair or dry_run="All" anywhere in the function."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Tuple) and len(node.elts) == 2:
            key, value = node.elts
            if isinstance(key, ast.Constant) and key.value == "dryRun" and _is_all(value):
                return True
        if isinstance(node, ast.keyword) and node.arg in ("dry_run", "dryRun") and _is_all(node.value):
            return True
    return False


def _marked(lines: list[str], node: ast.Call) -> bool:
    window = lines[max(0, node.lineno - 3) : node.end_lineno]
    return any(MARK in line for line in window)


def write_sites(root: Path = PACKAGE) -> list[Site]:
    sites: list[Site] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        for fn in functions:
            for node in ast.walk(fn):
                if not isinstance(node, ast.Call):
                    continue
                kwargs = {k.arg: k.value for k in node.keywords if k.arg}
                method = kwargs.get("method")
                name = node.func.attr if isinstance(node.func, ast.Attribute) else ""
                raw = isinstance(method, ast.Constant) and str(method.value).upper() in WRITE_METHODS
                typed = bool(TYPED_WRITE.match(name))
                dynamic = name in DYNAMIC_WRITE and "body" in kwargs
                if not (raw or typed or dynamic):
                    continue
                call = f"{name or 'call'}(method={method.value!r})" if raw else name  # type: ignore[union-attr]
                dry = _dry_run_in(fn) if raw else _is_all(kwargs.get("dry_run", ast.Constant(None)))
                owned = OWNED_REAL_WRITES.get(path.relative_to(root).as_posix())
                exempt = bool(SCOPED_REAL_WRITES.search(name) or (owned and owned.search(name))) or _marked(lines, node)
                sites.append(Site(path=path, line=node.lineno, call=call, dry_run=dry, exempt=exempt))
    return sites


def test_every_write_to_the_watched_kinds_is_a_dry_run() -> None:
    sites = write_sites()
    offenders = [s for s in sites if not s.dry_run and not s.exempt]
    assert not offenders, "writes without dryRun=All (add it, or mark a scoped real write):\n" + "\n".join(
        map(str, offenders)
    )
    dry = [s for s in sites if s.dry_run]
    assert any(s.path.name == "cluster.py" for s in dry), f"the scan no longer sees the SSA dry-run: {sites}"
    assert any(s.path.name == "leasing.py" and s.exempt for s in sites), "the scan no longer sees the Lease writes"


def test_the_scan_catches_an_unguarded_write(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text(
        "def typed(api, body):\n"
        "    api.patch_namespaced_deployment(name='x', namespace='y', body=body)\n"
        "def raw_dry(self, body):\n"
        "    query = [('dryRun', 'All')]\n"
        "    self._request(method='PATCH', path='/x', query=query, body=body)\n"
        "def raw_real(self, body):\n"
        "    self._request(method='PUT', path='/x', body=body)\n"
        "def typed_dry(api, body):\n"
        "    api.create_namespaced_config_map(namespace='y', body=body, dry_run='All')\n"
        "def lease(api, body):\n"
        "    api.replace_namespaced_lease(name='l', namespace='y', body=body)\n"
        "def state(api, body):\n"
        "    # real write: the state ConfigMap in writeback's own namespace\n"
        "    api.replace_namespaced_config_map(name='writeback-state', namespace='y', body=body)\n"
        "def dynamic(res, body):\n"
        "    res.patch(body=body, namespace='y')\n"
    )
    found = {s.line: (s.dry_run, s.exempt) for s in write_sites(tmp_path)}
    assert found == {
        2: (False, False),
        5: (True, False),
        7: (False, False),
        9: (True, False),
        11: (False, True),
        14: (False, True),
        16: (False, False),
    }
