"""A real HTTP server speaking the Kubernetes REST protocol for reads, standing in for an API server that cannot
run here (no kube-apiserver, no etcd, no operator CRDs on this machine).

It holds the objects a test puts in it, answers ``GET`` of one object or of a collection the way the API
server does (``{"kind": "...List", "items": [...]}``; a ``Status`` with code 404 for a missing object) and
answers the discovery request clients make after logging in. Every other request is refused with
403 and recorded in ``writes``: the workbench notebook's dry run must read the cluster and change nothing.

    with KubeApiStandIn() as api:
        api.put(deployment)                      # apps/v1 Deployment, namespaced by its metadata
        ...  # point a client at api.url
        assert not api.writes
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

# kind -> (plural, namespaced): the kinds the notebook reads.
PLURALS = {
    "Deployment": "deployments",
    "Secret": "secrets",
    "ConfigMap": "configmaps",
    "Service": "services",
    "Route": "routes",
    "LocalQueue": "localqueues",
}


@dataclass(frozen=True)
class Request:
    method: str
    path: str


def collection_path(api_version: str, kind: str, namespace: str) -> str:
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    return f"{base}/namespaces/{namespace}/{PLURALS[kind]}"


class KubeApiStandIn:
    def __init__(self) -> None:
        self._objects: dict[str, dict[str, dict[str, Any]]] = {}  # collection path -> name -> object
        self._lock = threading.Lock()
        self.requests: list[Request] = []
        self.writes: list[Request] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # the test's output stays readable
                pass

            def do_GET(self) -> None:
                path = urlsplit(self.path).path.rstrip("/")
                stand_in._record(Request("GET", path))
                status, body = stand_in._get(path)
                self._answer(status, body)

            def _refuse(self) -> None:
                path = urlsplit(self.path).path
                with stand_in._lock:
                    stand_in.writes.append(Request(self.command, path))
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self._answer(403, _status(403, "Forbidden", f"the stand-in API server only reads: {self.command}"))

            do_POST = do_PUT = do_PATCH = do_DELETE = _refuse

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="kube-api-stand-in", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def put(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        path = collection_path(obj["apiVersion"], obj["kind"], meta["namespace"])
        with self._lock:
            self._objects.setdefault(path, {})[meta["name"]] = obj

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _get(self, path: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if path in self._objects or _is_collection(path):
                items = list(self._objects.get(path, {}).values())
                return 200, {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items}
            collection, _, name = path.rpartition("/")
            if collection in self._objects and name in self._objects[collection]:
                return 200, self._objects[collection][name]
        if path in ("/api", "/apis") or path.startswith(("/apis/authentication.k8s.io", "/version")):
            return 200, {"kind": "APIGroup", "name": "authentication.k8s.io", "versions": [], "paths": []}
        return 404, _status(404, "NotFound", f"{path} not found")

    def __enter__(self) -> KubeApiStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _is_collection(path: str) -> bool:
    """``.../namespaces/{ns}/{plural}``: an empty collection lists no items rather than 404."""
    parts = path.strip("/").split("/")
    return len(parts) >= 2 and parts[-2] != "namespaces" and parts[-1] in PLURALS.values() and "namespaces" in parts


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
            "message": message}
