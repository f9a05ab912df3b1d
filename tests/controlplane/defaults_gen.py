"""Generate writeback's offline defaults data from the real API server (see docs/drift.md, "Defaults").

    tests/controlplane/generate-defaults            # starts its own control plane, writes writeback/data/...
    tests/controlplane/generate-defaults --check    # exit 1 when the committed file differs

``generate(plane)`` works on any running control plane (the regeneration test uses the session's):
1. discovery: the scope (namespaced or cluster) of every built-in kind, by group and kind; groups served by a
   CRD or an aggregated APIService are left out, so other tests' CRDs never end up in the data;
2. each skeleton of tests/controlplane/skeletons.py is created twice with ``dryRun=All`` (ephemeral containers
   through the Pod's ``ephemeralcontainers`` subresource, on a Pod created for real), with a default
   StorageClass and a default IngressClass present, so admission fills what it fills on a usual cluster;
3. every field the server filled in, by kind and path (``[*]`` for list items), is recorded with its value;
   a field whose value varies (between skeletons, or between the two runs) must be covered by a derived rule
   of writeback/drift/evidence/derivations.py (``DERIVED``), whose check is run on every value the server returned.

Not recorded: ``metadata`` (normalization's business) except the finalizers admission adds, ``status``, and
what the ServiceAccount admission plugin would add (the test control plane runs without it; see
``ADMISSION_RULES`` in writeback/drift/evidence/derivations.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.controlplane import skeletons
from tests.controlplane.cp import ControlPlane
from writeback.drift.evidence import defaults
from writeback.kube.kinds import DATA_FILE
from writeback.kube.paths import format_path
from writeback.kube.pathtypes import Index, Key, Segment

GENERATOR = "tests/controlplane/generate-defaults"
ROOT = Path(__file__).resolve().parents[2]
_SKIPPED_KEYS = ("metadata", "status")  # ObjectMeta of templates and claim templates, a claim template's status


class GenerationError(Exception):
    """The server's answers cannot be recorded as they are (a failed dry-run, an uncovered varying value)."""


@dataclass(kw_only=True)
class _Api:
    client: Any

    def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: list[tuple[str, str]] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        from kubernetes.client.exceptions import ApiException

        request = self.client.param_serialize(
            method=method,
            resource_path=path,
            query_params=query or [],
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            response = self.client.call_api(*request, _request_timeout=60)
            data = response.read()
            status = response.status
        except ApiException as exc:
            data, status = exc.body or b"{}", exc.status
        return status, json.loads(data) if data else {}

    def ok(self, method: str, path: str, **kw: Any) -> Any:
        status, out = self.call(method, path, **kw)
        if not 200 <= status <= 299:
            raise GenerationError(f"{method} {path}: HTTP {status}: {out.get('message', out)}")
        return out


@dataclass(frozen=True, kw_only=True)
class _Resource:
    group_version: str
    plural: str
    namespaced: bool

    def collection(self, namespace: str) -> str:
        base = f"/api/{self.group_version}" if "/" not in self.group_version else f"/apis/{self.group_version}"
        return f"{base}/namespaces/{namespace}/{self.plural}" if self.namespaced else f"{base}/{self.plural}"


def _discover(api: _Api) -> dict[tuple[str, str], _Resource]:
    """Every (group, kind) the server serves itself, at its preferred version (other versions fill gaps)."""
    foreign = {
        c["spec"]["group"] for c in api.ok("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    }
    foreign |= {
        a["spec"]["group"]
        for a in api.ok("GET", "/apis/apiregistration.k8s.io/v1/apiservices")["items"]
        if a["spec"].get("service")
    }
    lists: list[tuple[str, str]] = [("", "v1")]
    for g in api.ok("GET", "/apis")["groups"]:
        if g["name"] in foreign:
            continue
        preferred = g["preferredVersion"]["groupVersion"]
        versions = [preferred, *(v["groupVersion"] for v in g["versions"] if v["groupVersion"] != preferred)]
        lists.extend((g["name"], gv) for gv in versions)
    out: dict[tuple[str, str], _Resource] = {}
    for group, gv in lists:
        listing = api.ok("GET", "/api/v1" if gv == "v1" and not group else f"/apis/{gv}")
        for r in listing["resources"]:
            if "/" not in r["name"]:
                out.setdefault(
                    (group, r["kind"]), _Resource(group_version=gv, plural=r["name"], namespaced=r["namespaced"])
                )
    return out


@dataclass(frozen=True, kw_only=True)
class Seen:
    """A field (or whole list item) the server filled in, as observed in one answer."""

    kind: str
    path: tuple[Segment, ...]  # concrete, list items by Index
    value: Any
    ancestors: tuple[Any, ...] = ()  # nearest first, up to the object's root
    item: bool = False


def _filled(given: Any, got: Any, path: tuple[Segment, ...], ancestors: tuple[Any, ...], kind: str) -> Iterator[Seen]:
    """What ``got`` (the server's answer) has that ``given`` (the skeleton) does not."""
    if isinstance(got, Mapping):
        if not isinstance(given, Mapping):
            if not got:
                yield Seen(kind=kind, path=path, value={}, ancestors=ancestors)
                return
            given = {}
        for k, v in got.items():
            if k == "metadata" and not path and isinstance(v, Mapping) and "finalizers" in v:
                mine, theirs = (given.get("metadata") or {}).get("finalizers", _ABSENT), v["finalizers"]
                yield from _filled(mine, theirs, (Key("metadata"), Key("finalizers")), (v, got), kind)
            if k in _SKIPPED_KEYS:
                continue
            yield from _filled(given.get(k, _ABSENT), v, (*path, Key(k)), (got, *ancestors), kind)
    elif isinstance(got, list):
        if not isinstance(given, list) and not any(isinstance(i, Mapping) for i in got):
            yield Seen(kind=kind, path=path, value=got, ancestors=ancestors)
            return
        old = given if isinstance(given, list) else []
        for i, item in enumerate(got):
            if i < len(old):
                yield from _filled(old[i], item, (*path, Index(i)), (got, *ancestors), kind)
            else:
                yield Seen(kind=kind, path=(*path, Index(i)), value=item, ancestors=(got, *ancestors), item=True)
    elif given is _ABSENT:
        yield Seen(kind=kind, path=path, value=got, ancestors=ancestors)


_ABSENT = object()


def pattern_text(path: tuple[Segment, ...]) -> str:
    """The path with every list item as ``[*]``."""
    from writeback.kube.pathtypes import Wildcard

    return format_path([Wildcard(item=True) if isinstance(s, Index) else s for s in path])


def _observe(api: _Api, resources: Mapping[tuple[str, str], _Resource], namespace: str) -> list[Seen]:
    seen: list[Seen] = []
    for skeleton in skeletons.all_skeletons():
        group = skeleton["apiVersion"].rpartition("/")[0]
        res = resources.get((group, skeleton["kind"]))
        if res is None:
            raise GenerationError(f"{skeleton['apiVersion']} {skeleton['kind']}: not served by this API server")
        path = res.collection(namespace).replace(res.group_version, skeleton["apiVersion"], 1)
        for _run in range(2):
            got = api.ok("POST", path, body=skeleton, query=[("dryRun", "All")])
            seen.extend(_filled(skeleton, got, (), (), skeleton["kind"]))
    seen.extend(_observe_ephemeral(api, resources, namespace))
    return seen


def _observe_ephemeral(api: _Api, resources: Mapping[tuple[str, str], _Resource], namespace: str) -> list[Seen]:
    pods = resources[("", "Pod")].collection(namespace)
    seen: list[Seen] = []
    for v in (0, 1):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"ephemeral-{v}"}, "spec": skeletons.pod_spec(v)}
        api.ok("POST", pods, body=pod)
        given = skeletons.ephemeral_containers(v)
        for _run in range(2):
            got = api.ok(
                "PATCH",
                f"{pods}/ephemeral-{v}/ephemeralcontainers",
                body={"spec": {"ephemeralContainers": given}},
                query=[("dryRun", "All")],
                content_type="application/strategic-merge-patch+json",
            )
            at = (Key("spec"), Key("ephemeralContainers"))
            for i, (mine, theirs) in enumerate(zip(given, got["spec"]["ephemeralContainers"], strict=True)):
                seen.extend(
                    _filled(
                        mine, theirs, (*at, Index(i)), (got["spec"]["ephemeralContainers"], got["spec"], got), "Pod"
                    )
                )
    return seen


@dataclass(kw_only=True)
class _Field:
    values: dict[str, Any] = field(default_factory=dict)  # by JSON text
    seen: list[Seen] = field(default_factory=list)


def consolidate(seen: list[Seen]) -> dict[str, Any]:
    """Observations -> ``{kind: {"fields": [...], "items": [...]}}``, checked against the derived rules."""
    fields: dict[tuple[str, str], _Field] = {}
    items: dict[tuple[str, str], dict[str, Any]] = {}
    problems: list[str] = []
    for s in seen:
        text = pattern_text(s.path)
        if s.item:
            items.setdefault((s.kind, text), {})[json.dumps(s.value, sort_keys=True)] = s.value
            continue
        f = fields.setdefault((s.kind, text), _Field())
        f.values[json.dumps(s.value, sort_keys=True)] = s.value
        f.seen.append(s)
    kinds: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for (kind, text), f in sorted(fields.items()):
        rule = defaults.derived_rule(kind=kind, path=f.seen[0].path)
        if rule is not None:
            for s in f.seen:
                if not rule.check(
                    s.value, defaults.Context(key=str(getattr(s.path[-1], "name", "")), ancestors=s.ancestors)
                ):
                    problems.append(f"{kind} {text}: the server's {s.value!r} breaks the derived rule {rule.name!r}")
            entry: dict[str, Any] = {"path": text, "derived": rule.name}
        elif len(f.values) > 1:
            problems.append(f"{kind} {text}: the value varies ({sorted(f.values)}): add a derived rule to DERIVED")
            continue
        else:
            entry = {"path": text, "value": next(iter(f.values.values()))}
        kinds.setdefault(kind, {"fields": [], "items": []})["fields"].append(entry)
    for (kind, text), found in sorted(items.items()):
        for key in sorted(found):
            kinds.setdefault(kind, {"fields": [], "items": []})["items"].append({"path": text, "item": found[key]})
    if problems:
        raise GenerationError("the defaults cannot be recorded as they are:\n  " + "\n  ".join(problems))
    return kinds


def _scopes(resources: Mapping[tuple[str, str], _Resource]) -> dict[str, dict[str, bool]]:
    out: dict[str, dict[str, bool]] = {}
    for (group, kind), res in sorted(resources.items()):
        out.setdefault(group, {})[kind] = res.namespaced
    return out


def generate(plane: ControlPlane) -> dict[str, Any]:
    """The defaults data, as committed in writeback/data/ (see the module docstring)."""
    api = _Api(client=plane.api_client)
    version = api.ok("GET", "/version")["gitVersion"]
    resources = _discover(api)
    namespace = f"writeback-defaults-{uuid.uuid4().hex[:8]}"
    api.ok("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    created: list[str] = []
    try:
        for obj in skeletons.CLUSTER_DEFAULTS:
            res = resources[(obj["apiVersion"].rpartition("/")[0], obj["kind"])]
            api.ok("POST", res.collection(namespace), body=obj)
            created.append(f"{res.collection(namespace)}/{obj['metadata']['name']}")
        seen = _observe(api, resources, namespace)
    finally:
        for path in created:
            api.call("DELETE", path)
        api.call("DELETE", f"/api/v1/namespaces/{namespace}")
    apis = {s["kind"]: s["apiVersion"] for s in skeletons.all_skeletons()}
    kinds = consolidate(seen)
    return {
        "kubernetes": version,
        "generator": GENERATOR,
        "scopes": _scopes(resources),
        "kinds": {kind: {"apiVersion": apis[kind], **body} for kind, body in sorted(kinds.items())},
    }


def dumps(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False) + "\n"


def target_file(version: str) -> Path:
    return ROOT / "writeback" / "data" / DATA_FILE.format(minor=".".join(version.lstrip("v").split(".")[:2]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed file, write nothing")
    args = parser.parse_args(argv)
    from tests.controlplane.cp import ControlPlaneError, start

    try:
        plane = start()
    except ControlPlaneError as exc:
        print(f"generate-defaults: FAILED step 'start the control plane': {exc}", file=sys.stderr)
        return 1
    try:
        data = generate(plane)
    except GenerationError as exc:
        print(f"generate-defaults: FAILED step 'record the defaults': {exc}", file=sys.stderr)
        return 1
    finally:
        plane.stop()
    target = target_file(data["kubernetes"])
    text = dumps(data)
    if args.check:
        same = target.is_file() and target.read_text(encoding="utf-8") == text
        print(f"generate-defaults: {target} is {'up to date' if same else 'out of date'}", file=sys.stderr)
        return 0 if same else 1
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"generate-defaults: wrote {target} ({data['kubernetes']})", file=sys.stderr)
    return 0
