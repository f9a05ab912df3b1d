"""The shared part of the fake forges: a stdlib HTTP server in a thread, routing by the official operations,
request validation against the official schemas, a request log, injected failures, and a bare git remote
that holds the branches.

Every request the bot sends is checked: an unknown endpoint, an unknown query parameter, or a body that does not
validate against the operation's request schema (with unknown fields rejected) is recorded in ``violations``; so is
a pull/merge request body or comment that GitHub's Markdown library renders badly (``tests.support.markdown``: a
broken table, raw HTML, an @mention).
Every answer the fake gives is checked too: its status must be one the operation documents, and its body must
validate against the official response schema (GitHub) or carry the keys of the official example (GitLab, whose
description has examples only). Injected faults are the test's own choice and are not checked.

The check is not opt-in: ``stop()`` raises ``ForgeViolations`` when anything was recorded, and the autouse
fixture in tests/conftest.py stops (and so checks) every fake a test started and left running.

Faults for the reliability matrix: ``inject`` answers with a status (and optional headers, a non-JSON ``raw``
body, a ``delay``); ``hold`` blocks matching requests until released, so a test can SIGKILL the bot while its
request is in flight.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qs, unquote, urlsplit

import jsonschema

from tests.support import markdown
from tests.support.testdata import FORGE_API

WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
RUNNING: set[FakeForge] = set()  # started and not stopped yet: tests/conftest.py stops (and checks) them


def load_operations(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FORGE_API / name).read_text(encoding="utf-8"))
    return data["operations"]  # type: ignore[no-any-return]


def json_schema(schema: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema: ``nullable: true`` means the value may also be null."""
    if isinstance(schema, list):
        return [json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: json_schema(v) if k not in ("example", "examples", "enum", "default") else v for k, v in schema.items()}
    if out.pop("nullable", False):
        return {"anyOf": [out, {"type": "null"}]}
    return out


class Reply(Exception):
    """Raised by a handler to answer with a status and a JSON body."""

    def __init__(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers or {}


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    headers: dict[str, str]
    status: int = 0  # the status the fake answered with


class ForgeViolations(AssertionError):
    """The bot sent requests (or the fake gave answers) the official API description rejects."""


@dataclass
class Injection:
    status: int
    headers: dict[str, str]
    body: Any
    times: int
    method: str | None = None
    path_contains: str | None = None
    raw: bytes | None = None  # a body sent as is (not JSON)
    delay: float = 0.0  # seconds to wait before answering (a timeout when longer than the client's)


@dataclass
class Hold:
    """Matching requests wait in the handler until ``release``; ``arrived`` is set when the first one does."""

    method: str | None
    path_contains: str
    arrived: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    count: int = 0

    def release(self) -> None:
        self.released.set()

    def wait(self, timeout: float = 60.0) -> None:
        if not self.arrived.wait(timeout):
            raise AssertionError(f"no {self.method or ''} request to ...{self.path_contains} arrived in {timeout}s")


@dataclass
class Route:
    key: str  # "METHOD /template" of the official operation
    method: str
    regex: re.Pattern[str]
    handler: Callable[..., Any]
    operation: dict[str, Any] | None = None
    body_schema: dict[str, Any] | None = field(default=None)
    query_names: frozenset[str] = frozenset()


def _template_regex(template: str, multi_segment: frozenset[str]) -> re.Pattern[str]:
    out = ""
    for part in re.split(r"(\{[^}]+\})", template):
        if part.startswith("{"):
            name = part[1:-1]
            out += f"(?P<{name}>.+)" if name in multi_segment else f"(?P<{name}>[^/]+)"
        else:
            out += re.escape(part)
    return re.compile(f"^{out}$")


_VALIDATORS: dict[tuple[str, int], Any] = {}


def _validator(key: str, ident: int, schema: dict[str, Any]) -> Any:
    """One compiled validator per response schema (compiling GitHub's big schemas per answer is slow)."""
    if (key, ident) not in _VALIDATORS:
        _VALIDATORS[(key, ident)] = jsonschema.Draft7Validator(json_schema(schema))
    return _VALIDATORS[(key, ident)]


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The request schema with unknown top-level fields rejected."""
    s = copy.deepcopy(schema)
    if s.get("type") == "object" and "properties" in s:
        s.setdefault("additionalProperties", False)
    return s


class Bare:
    """The real bare git remote the bot pushes to; the fake forge reads and deletes branches there."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "--git-dir", str(self.path), *args], capture_output=True, text=True, check=check)

    def sha(self, branch: str) -> str | None:
        out = self._git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}", check=False)
        return out.stdout.strip() or None

    def contains(self, branch: str, sha: str) -> bool:
        """Whether ``sha`` is in ``branch``'s history (a PR whose head was pushed to its base is merged)."""
        return self._git("merge-base", "--is-ancestor", sha, f"refs/heads/{branch}", check=False).returncode == 0

    def delete(self, branch: str) -> bool:
        return self._git("update-ref", "-d", f"refs/heads/{branch}", check=False).returncode == 0

    def refs(self) -> dict[str, str]:
        out = self._git("for-each-ref", "--format=%(refname) %(objectname)").stdout
        pairs = (line.split(" ", 1) for line in out.splitlines() if line)
        return {name: sha for name, sha in pairs}

    def commits(self, base: str, branch: str) -> list[dict[str, str]]:
        fmt = "%H%x1f%an%x1f%ae%x1f%cn%x1f%ce%x1f%aI%x1f%s"
        out = self._git("log", f"--format={fmt}", f"refs/heads/{base}..refs/heads/{branch}", check=False).stdout
        keys = ("sha", "author_name", "author_email", "committer_name", "committer_email", "date", "message")
        return [dict(zip(keys, line.split("\x1f"), strict=True)) for line in out.splitlines() if line]


class FakeForge:
    """Subclasses register handlers for official operation keys (``self.route``)."""

    prefix = ""  # path prefix before the operation templates ("/api/v4" for GitLab)
    multi_segment: frozenset[str] = frozenset()

    def __init__(self, *, operations: dict[str, Any], bare: Path) -> None:
        self.operations = operations
        self.bare = Bare(bare)
        self.routes: list[Route] = []
        self.requests: list[Recorded] = []
        self.violations: list[str] = []
        self.injections: list[Injection] = []
        self.holds: list[Hold] = []
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------ setup

    def route(self, key: str, handler: Callable[..., Any], *, template: str | None = None) -> None:
        method, _, path = key.partition(" ")
        op = self.operations.get(key)
        schema = None
        query: frozenset[str] = frozenset()
        if op is not None:
            content = (op.get("requestBody") or {}).get("content", {})
            if "application/json" in content:
                schema = self.relax(key, strict(content["application/json"]["schema"]))
            query = frozenset(p["name"] for p in op.get("parameters", []) if p.get("in") == "query")
        regex = _template_regex(self.prefix + (template or path), self.multi_segment)
        self.routes.append(Route(key, method, regex, handler, op, schema, query))

    def relax(self, key: str, schema: dict[str, Any]) -> dict[str, Any]:
        """Allow the documented quirks of one operation's request schema (see the README)."""
        return schema

    def extra_query(self, key: str) -> frozenset[str]:
        """Query parameters the client library adds that the description does not list (pagination)."""
        return frozenset()

    def inject(
        self,
        status: int,
        *,
        headers: dict[str, str] | None = None,
        body: Any = None,
        times: int = 1,
        method: str | None = None,
        path_contains: str | None = None,
        raw: bytes | None = None,
        delay: float = 0.0,
    ) -> None:
        """The next ``times`` matching requests get this answer instead of the real one."""
        with self._lock:
            self.injections.append(Injection(status, headers or {}, body, times, method, path_contains, raw, delay))

    def hold(self, *, method: str | None, path_contains: str) -> Hold:
        """Matching requests block (unanswered, unhandled) until the returned hold is released."""
        hold = Hold(method=method, path_contains=path_contains)
        with self._lock:
            self.holds.append(hold)
        return hold

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Self:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                fake.dispatch(self)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        RUNNING.add(self)
        return self

    def stop(self) -> None:
        """Stop serving; raises ``ForgeViolations`` if any request or answer broke the official description."""
        RUNNING.discard(self)
        for hold in self.holds:
            hold.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self.violations:
            listed = "\n  ".join(self.violations)
            what = "requests or answers the API description rejects"
            raise ForgeViolations(f"{type(self).__name__}: {what}:\n  {listed}")

    # ------------------------------------------------------------ the request log

    def writes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method in WRITE_METHODS]

    def mark(self) -> int:
        return len(self.requests)

    def since(self, mark: int) -> list[Recorded]:
        return self.requests[mark:]

    # ------------------------------------------------------------ dispatch

    def _injected(self, method: str, path: str) -> Injection | None:
        with self._lock:
            for inj in self.injections:
                if inj.times > 0 and inj.method in (None, method) and (inj.path_contains or "") in path:
                    inj.times -= 1
                    return inj
        return None

    def dispatch(self, h: BaseHTTPRequestHandler) -> None:
        split = urlsplit(h.path)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        query = parse_qs(split.query, keep_blank_values=True)
        method = h.command
        rec = Recorded(method, split.path, query, body, {k: v for k, v in h.headers.items()})
        with self._lock:
            self.requests.append(rec)
        for hold in [x for x in self.holds if x.method in (None, method) and x.path_contains in split.path]:
            hold.count += 1
            hold.arrived.set()
            hold.released.wait()
        inj = self._injected(method, split.path)
        if inj is not None:
            rec.status = inj.status
            if inj.delay:
                time.sleep(inj.delay)
            self._send(h, inj.status, inj.body, inj.headers, raw=inj.raw)
            return
        for route in self.routes:
            m = route.regex.match(split.path) if route.method == method else None
            if m is None:
                continue
            self._validate(route, rec)
            params = {k: unquote(v) for k, v in m.groupdict().items()}
            try:
                with self._lock:
                    result = route.handler(rec, **params)
                status, payload = result if isinstance(result, tuple) else (200, result)
                rec.status = status
                self._check_answer(route, status, payload)
                self._send(h, status, payload, {})
            except Reply as r:
                rec.status = r.status
                self._check_answer(route, r.status, r.body)
                self._send(h, r.status, r.body, r.headers)
            except Exception as e:  # a bug in the fake: make it loud
                self.violations.append(f"fake crashed on {method} {split.path}: {type(e).__name__}: {e}")
                rec.status = 500
                self._send(h, 500, {"message": "fake crashed"}, {})
            return
        self.violations.append(f"unknown endpoint {method} {split.path}")
        rec.status = 404
        self._send(h, 404, {"message": "Not Found"}, {})

    def _validate(self, route: Route, rec: Recorded) -> None:
        unknown = set(rec.query) - route.query_names - self.extra_query(route.key)
        if unknown:
            self.violations.append(f"{route.key}: unknown query parameters {sorted(unknown)}")
        if rec.body is None:
            return
        if route.body_schema is None:
            self.violations.append(f"{route.key}: sent a body the operation does not take: {rec.body!r}")
            return
        try:
            jsonschema.validate(rec.body, route.body_schema)
        except jsonschema.ValidationError as e:
            self.violations.append(f"{route.key}: invalid request body {rec.body!r}: {e.message}")
        if rec.method in WRITE_METHODS and isinstance(rec.body, dict):  # what a reviewer reads: as GitHub renders it
            for key in ("body", "description"):
                text = rec.body.get(key)
                if isinstance(text, str):
                    self.violations += [f"{route.key}: the {key} renders badly: {p}" for p in markdown.problems(text)]

    def _check_answer(self, route: Route, status: int, payload: Any) -> None:
        """The fake's own answer must be one the operation documents, in the documented shape."""
        if route.operation is None:
            return
        responses = route.operation.get("responses") or {}
        documented = responses.get(str(status))
        if documented is None:
            if status not in (401, 404) or str(status) in responses:  # auth and not-found: any operation may answer
                self.violations.append(f"{route.key}: answered HTTP {status}, which the operation does not document")
            return
        content = ((documented.get("content") or {}).get("application/json")) or {}
        problem = self.answer_problem(route.key, content, payload)
        if problem:
            self.violations.append(f"{route.key}: the fake's HTTP {status} answer {problem}")

    def answer_problem(self, key: str, content: dict[str, Any], payload: Any) -> str | None:
        """Why ``payload`` does not fit the official response ``content`` (None: it fits)."""
        schema = content.get("schema")
        if schema is not None and payload is not None:
            error = jsonschema.exceptions.best_match(_validator(key, id(schema), schema).iter_errors(payload))
            if error is not None:
                at = "/".join(map(str, error.absolute_path)) or "(top)"
                return f"breaks the response schema at {at}: {error.message}"
            return None
        examples = content.get("examples") or {}
        if not examples or payload is None:
            return None
        want = next(iter(examples.values()))["value"]
        if isinstance(want, list) and want and isinstance(want[0], dict):
            items = payload if isinstance(payload, list) else None
            if items is None:
                return "is not a list, as the official example is"
            missing = sorted({k for item in items for k in want[0] if k not in item})
        elif isinstance(want, dict):
            if not isinstance(payload, dict):
                return "is not an object, as the official example is"
            missing = sorted(k for k in want if k not in payload)
        else:
            return None
        return f"lacks keys of the official example: {missing}" if missing else None

    @staticmethod
    def _send(
        h: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str], *, raw: bytes | None = None
    ) -> None:
        data = raw if raw is not None else (b"" if payload is None else json.dumps(payload).encode())
        h.send_response(status)
        if raw is not None:
            h.send_header("Content-Type", "text/html; charset=utf-8")
        elif payload is not None:
            h.send_header("Content-Type", "application/json; charset=utf-8")
        h.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up or was killed
            h.wfile.write(data)


def example(operations: dict[str, Any], key: str, status: str, name: str | None = None) -> Any:
    """A deep copy of an official response example."""
    content = operations[key]["responses"][status]["content"]["application/json"]
    examples = content["examples"]
    chosen = examples[name] if name else next(iter(examples.values()))
    return copy.deepcopy(chosen["value"])
