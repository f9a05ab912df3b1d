"""An Istio-like sidecar-injecting mutating admission webhook, served by the test process over HTTPS."""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.controlplane.certs import Authority

NAME = "writeback-test-sidecar-injector"
INJECT_LABEL = "writeback-test/inject"
STATUS_ANNOTATION = "sidecar.istio.io/status"
PROXY_IMAGE = "docker.io/istio/proxyv2:1.24.0"
STATUS_VALUE = json.dumps(
    {"initContainers": ["istio-init"], "containers": ["istio-proxy"], "volumes": None, "revision": "default"},
    separators=(",", ":"),
)
SIDECAR: dict[str, Any] = {
    "name": "istio-proxy",
    "image": PROXY_IMAGE,
    "args": ["proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local"],
    "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
    "ports": [{"containerPort": 15090, "name": "http-envoy-prom", "protocol": "TCP"}],
    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "2", "memory": "1Gi"}},
}
INIT: dict[str, Any] = {
    "name": "istio-init",
    "image": PROXY_IMAGE,
    "args": ["istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT", "-i", "*"],
    "securityContext": {"capabilities": {"add": ["NET_ADMIN", "NET_RAW"]}, "runAsUser": 0, "runAsNonRoot": False},
}


def injection_patch(*, obj: dict[str, Any], kind: str, operation: str) -> list[dict[str, Any]]:
    """The JSONPatch that adds whatever part of the sidecar `obj` lacks (empty when fully injected)."""
    if kind == "Deployment":
        base, spec = "/spec/template", (obj.get("spec") or {}).get("template") or {}
    elif kind == "Pod" and operation == "CREATE":  # a Pod's containers are immutable after creation
        base, spec = "", obj
    else:
        return []
    meta = spec.get("metadata") or {}
    pod_spec = spec.get("spec") or {}
    ops: list[dict[str, Any]] = []
    if not meta:
        ops.append({"op": "add", "path": f"{base}/metadata", "value": {}})
    annotations = meta.get("annotations")
    if annotations is None:
        ops.append({"op": "add", "path": f"{base}/metadata/annotations", "value": {}})
        annotations = {}
    if STATUS_ANNOTATION not in annotations:
        key = STATUS_ANNOTATION.replace("~", "~0").replace("/", "~1")
        ops.append({"op": "add", "path": f"{base}/metadata/annotations/{key}", "value": STATUS_VALUE})
    for field_name, container in (("initContainers", INIT), ("containers", SIDECAR)):
        present = pod_spec.get(field_name)
        if present is None:
            ops.append({"op": "add", "path": f"{base}/spec/{field_name}", "value": [container]})
        elif not any(c.get("name") == container["name"] for c in present):
            ops.append({"op": "add", "path": f"{base}/spec/{field_name}/-", "value": container})
    return ops


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        review = json.loads(self.rfile.read(length))
        request = review.get("request") or {}
        response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
        obj = request.get("object") or {}
        ops = injection_patch(
            obj=obj, kind=(request.get("kind") or {}).get("kind", ""), operation=request.get("operation", "")
        )
        if ops:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        self.server.requests.append(request)  # type: ignore[attr-defined]
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


@dataclass(kw_only=True)
class SidecarWebhook:
    """The running HTTPS server and the webhook configuration that points at it."""

    url: str
    ca_bundle: bytes
    server: ThreadingHTTPServer
    thread: threading.Thread
    label: str = INJECT_LABEL
    label_value: str = "enabled"
    name: str = NAME

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every AdmissionReview request seen so far."""
        return self.server.requests  # type: ignore[attr-defined,no-any-return]

    def configuration(self) -> dict[str, Any]:
        """The MutatingWebhookConfiguration manifest."""
        rules = [
            {
                "apiGroups": ["apps"],
                "apiVersions": ["v1"],
                "resources": ["deployments"],
                "operations": ["CREATE", "UPDATE"],
            },
            {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE", "UPDATE"]},
        ]
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": self.name},
            "webhooks": [
                {
                    "name": "sidecar.writeback-test.io",
                    "clientConfig": {"url": self.url, "caBundle": base64.b64encode(self.ca_bundle).decode()},
                    "rules": rules,
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "namespaceSelector": {"matchLabels": {self.label: self.label_value}},
                    "timeoutSeconds": 10,
                    "reinvocationPolicy": "IfNeeded",
                }
            ],
        }

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def serve() -> SidecarWebhook:
    """Start the HTTPS webhook server on a free 127.0.0.1 port, in a daemon thread."""
    ca = Authority.create(common_name="writeback-test-webhook-ca")
    pair = ca.issue(common_name="127.0.0.1", server_names=("127.0.0.1", "localhost"))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory(prefix="writeback-webhook-") as tmp:
        cert, key = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
        cert.write_bytes(pair.cert_pem)
        key.write_bytes(pair.key_pem)
        ctx.load_cert_chain(str(cert), str(key))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.socket = ctx.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    server.requests = []  # type: ignore[attr-defined]
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="sidecar-webhook", daemon=True)
    thread.start()
    return SidecarWebhook(
        url=f"https://127.0.0.1:{port}/mutate", ca_bundle=ca.pair.cert_pem, server=server, thread=thread
    )
