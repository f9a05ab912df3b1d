"""A small HTTPS proxy in front of the real kube-apiserver, to inject faults the server itself would send.

It terminates TLS with the control plane's serving certificate and forwards every request to the real apiserver
with the admin client certificate, answering as the server did, except where a rule says otherwise: answer a
status (429/503 with Retry-After), hold a request until the test releases it (to stop the real apiserver or
compact etcd at that moment), or end a healthy watch stream with the 410 ERROR event an expired watch gets.

    proxy = ApiProxy(plane).start()
    proxy.rules.append(Rule(match=lambda r: r.is_list, status=429, headers={"Retry-After": "1"}, times=2))
    KubeCluster.connect(kubeconfig=proxy.kubeconfig)
"""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.controlplane import cp


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]

    @property
    def is_list(self) -> bool:
        return self.method == "GET" and "limit" in self.query and "watch" not in self.query

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") == ["true"]

    @property
    def continues(self) -> bool:
        return bool(self.query.get("continue", [""])[0])


@dataclass
class Rule:
    match: Callable[[Seen], bool]
    status: int = 0  # answer this status instead of forwarding (0: forward)
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1
    hold: threading.Event | None = None  # forward only once set
    gone_after_lines: int = 0  # a watch: forward this many events, then send the 410 ERROR event and end it
    arrived: threading.Event = field(default_factory=threading.Event)
    used: int = 0


class ApiProxy:
    def __init__(self, plane: cp.ControlPlane) -> None:
        self.plane = plane
        self.rules: list[Rule] = []
        self.seen: list[Seen] = []
        pki = plane.workdir / "pki"
        self._server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._server_ctx.load_cert_chain(str(pki / "serving.crt"), str(pki / "serving.key"))
        self._client_ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self._client_ctx.load_cert_chain(str(pki / "client.crt"), str(pki / "client.key"))
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"https://127.0.0.1:{self._httpd.server_address[1]}"

    def kubeconfig(self, directory: Path) -> str:
        """The control plane's kubeconfig, pointed at this proxy."""
        config = json.loads(Path(self.plane.kubeconfig).read_text())
        config["clusters"][0]["cluster"]["server"] = self.url
        path = directory / "proxy-kubeconfig"
        path.write_text(json.dumps(config))
        return str(path)

    def _rule(self, seen: Seen) -> Rule | None:
        with self._lock:
            self.seen.append(seen)
            for rule in self.rules:
                if rule.used < rule.times and rule.match(seen):
                    rule.used += 1
                    rule.arrived.set()
                    return rule
        return None

    def start(self) -> ApiProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                proxy._forward(self)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.socket = self._server_ctx.wrap_socket(self._httpd.socket, server_side=True)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        for rule in self.rules:
            if rule.hold is not None:
                rule.hold.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def _forward(self, h: BaseHTTPRequestHandler) -> None:
        split = urlsplit(h.path)
        seen = Seen(h.command, split.path, parse_qs(split.query))
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else None
        rule = self._rule(seen)
        if rule is not None and rule.hold is not None:
            rule.hold.wait()
        if rule is not None and rule.status:
            data = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": rule.status,
                               "message": "injected by the test proxy"}).encode()  # fmt: skip
            h.send_response(rule.status)
            for k, v in {"Content-Type": "application/json", **rule.headers}.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        host = urlsplit(self.plane.server)
        upstream = http.client.HTTPSConnection(host.hostname or "", host.port, context=self._client_ctx, timeout=300)
        headers = {k: v for k, v in h.headers.items() if k.lower() not in ("host", "authorization", "connection")}
        try:
            upstream.request(h.command, h.path, body=body, headers=headers)
            resp = upstream.getresponse()
        except OSError:  # the real apiserver is gone: the client sees the connection drop
            h.close_connection = True
            with contextlib.suppress(OSError):
                h.connection.shutdown(2)
            return
        if seen.is_watch:
            self._stream(h, resp, rule)
        else:
            data = resp.read()
            h.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                    h.send_header(k, v)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        upstream.close()

    def _stream(self, h: BaseHTTPRequestHandler, resp: http.client.HTTPResponse, rule: Rule | None) -> None:
        h.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                h.send_header(k, v)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def chunk(data: bytes) -> None:
            h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            h.wfile.flush()

        lines = 0
        try:
            while True:
                line = resp.readline()
                if not line:
                    break
                chunk(line)
                lines += 1
                if rule is not None and rule.gone_after_lines and lines >= rule.gone_after_lines:
                    gone = {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                            "message": "too old resource version", "reason": "Expired", "code": 410}}  # fmt: skip
                    chunk(json.dumps(gone).encode() + b"\n")
                    break
            h.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass
