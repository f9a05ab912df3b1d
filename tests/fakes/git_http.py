"""A git smart-HTTP server: the real ``git http-backend`` on loopback, behind HTTP Basic auth (token tests) or
open (the Flux source-controller clones from it). Serves the bare repositories under ``root``, plus any bare
repository published with ``publish(bare)``."""

from __future__ import annotations

import base64
import subprocess
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


class GitHTTPServer:
    """Without `username`/`password` every request is served; with them, only HTTP Basic with exactly those."""

    def __init__(self, *, root: Path, username: str | None = None, password: str | None = None) -> None:
        self.root, self.username, self.password = root, username, password
        self.auth_headers: list[str] = []
        self._published: dict[str, Path] = {}
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def publish(self, bare: Path) -> str:
        """Serve the bare repository `bare` (anywhere on disk) too; returns its clone URL."""
        name = f"{bare.name.removesuffix('.git')}-{uuid.uuid4().hex[:8]}.git"
        self._published[name] = bare.resolve()
        return f"{self.url}/{name}"

    def _locate(self, path: str) -> tuple[Path, str]:
        """(GIT_PROJECT_ROOT, PATH_INFO) for a request path."""
        first, _, rest = path.lstrip("/").partition("/")
        bare = self._published.get(first)
        if bare is None:
            return self.root, path
        return bare.parent, f"/{bare.name}/{rest}"

    def _authorized(self, header: str) -> bool:
        if self.username is None and self.password is None:
            return True
        expected = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return header == f"Basic {expected}"

    def start(self) -> GitHTTPServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                header = self.headers.get("Authorization", "")
                outer.auth_headers.append(header)
                if not outer._authorized(header):
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                split = urlsplit(self.path)
                body = self._body()
                project_root, path_info = outer._locate(split.path)
                env = {
                    "GIT_PROJECT_ROOT": str(project_root), "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path_info,
                    "QUERY_STRING": split.query, "REQUEST_METHOD": self.command,
                    "REMOTE_USER": outer.username or "anonymous",
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
                    "PATH": "/usr/bin:/bin:/usr/local/bin",
                }  # fmt: skip
                if self.headers.get("Git-Protocol"):
                    env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
                if self.headers.get("Content-Encoding"):  # git gzips larger request bodies
                    env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
                done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
                head, _, payload = done.stdout.partition(b"\r\n\r\n")
                status = 200
                headers = []
                for line in head.decode().split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                    length = int(self.headers.get("Content-Length") or 0)
                    return self.rfile.read(length) if length else b""
                chunks = []  # git sends bodies above http.postBuffer chunked
                while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                self.rfile.readline()
                return b"".join(chunks)

            do_GET = do_POST = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
