"""A real HTTP server speaking the OpenAI chat-completions protocol, for tests and benchmarks.

It stands in for a production LLM (the only stand-in the house rules allow): a threaded HTTP/1.1 server on
a random loopback port, with controllable latency and faults, that records every request it receives.

    with OpenAIServer(latency_s=0.05) as llm:
        settings = ...(llm_url=llm.url, llm_model=llm.model)
        llm.fail_next("http_500", times=2)     # the next two requests get HTTP 500
        llm.fail_always("prose")               # every request gets prose until llm.heal()
        ...
        assert {r.body["seed"] for r in llm.chat_requests()} == {...}

Protocol behaviour, like a real server:
- ``POST /v1/chat/completions`` and ``GET /v1/models``; optional bearer-token check (``api_key=``);
- ``n`` choices per request; ``seed`` makes answers reproducible; ``temperature`` 0 makes them identical
  whatever the seed;
- ``response_format`` of type ``json_schema``: the answer is a JSON object that follows the schema (numbers
  within ``minimum``/``maximum``, strings within ``maxLength``); ``json_object``: some JSON object; absent:
  prose, as a model without structured output would write.

``peak_in_flight`` is the most chat requests it ever held at once.

Faults (``FAULTS``): ``timeout`` (hold the request without answering), ``http_500``, ``http_429`` (rate
limited) and ``http_503`` (overloaded), each with a ``Retry-After`` header when ``retry_after`` is set (seconds
or an HTTP-date, sent as given), ``prose`` (text instead of JSON), ``out_of_range`` (numbers outside the
schema's range), ``broken_json`` (truncated JSON).
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Fault = Literal["timeout", "http_500", "http_429", "http_503", "prose", "out_of_range", "broken_json"]
FAULTS: tuple[Fault, ...] = ("timeout", "http_500", "http_429", "http_503", "prose", "out_of_range", "broken_json")

# (request body, choice index, seed used for that choice or None) -> the choice's message content
Responder = Callable[[dict[str, Any], int, int | None], str]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float
    fault: Fault | None


class OpenAIServer:
    def __init__(self, *, latency_s: float = 0.0, model: str = "test-model", api_key: str | None = None,
                 responder: Responder | None = None, hang_s: float = 30.0) -> None:
        self.latency_s = latency_s
        self.model = model
        self.api_key = api_key
        self.responder = responder
        self.hang_s = hang_s
        self.retry_after: str | None = None  # the Retry-After header of http_429 and http_503 answers
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._scripted: deque[Fault] = deque()
        self._always: Fault | None = None
        self._in_flight = 0
        self.peak_in_flight = 0
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # Lifecycle

    def start(self) -> OpenAIServer:
        handler = type("Handler", (_Handler,), {"owner": self})
        server = _Server(("127.0.0.1", 0), handler)
        self._httpd = server
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="openai-test-server",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """API base, as clients are configured: ``http://127.0.0.1:<port>/v1``."""
        assert self._httpd is not None, "start() the server first"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    # Faults

    def fail_next(self, fault: Fault, times: int = 1) -> None:
        """The next ``times`` chat requests get ``fault`` (queued after faults already scripted)."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; expected one of {FAULTS}")
        with self._lock:
            self._scripted.extend([fault] * times)

    def fail_always(self, fault: Fault) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; expected one of {FAULTS}")
        with self._lock:
            self._always = fault

    def heal(self) -> None:
        """No more faults, scripted or permanent."""
        with self._lock:
            self._scripted.clear()
            self._always = None

    def _next_fault(self) -> Fault | None:
        with self._lock:
            if self._scripted:
                return self._scripted.popleft()
            return self._always

    # Recorded traffic

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def reset(self) -> None:
        """Forget recorded requests, the in-flight peak and faults."""
        with self._lock:
            self._requests.clear()
            self.peak_in_flight = self._in_flight
        self.heal()

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    # Answers

    def completion(self, body: dict[str, Any], fault: Fault | None) -> dict[str, Any]:
        n = int(body.get("n") or 1)
        seed = body.get("seed")
        temperature = float(body.get("temperature", 1.0))
        choices = []
        for index in range(n):
            choice_seed = None if temperature == 0 else (None if seed is None else int(seed) + index)
            content = self._content(body, index, choice_seed, fault)
            choices.append({"index": index, "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop"})
        prompt_chars = len(json.dumps(body.get("messages", [])))
        return {
            "id": f"chatcmpl-{hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": choices,
            "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": 40 * n,
                      "total_tokens": prompt_chars // 4 + 40 * n},
        }

    def _content(self, body: dict[str, Any], index: int, seed: int | None, fault: Fault | None) -> str:
        if fault == "prose":
            return "This segment shows the player wandering around; I would rate it fairly well overall."
        if self.responder is not None and fault is None:
            return self.responder(body, index, seed)
        rng = _rng(body, seed)
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            value = _instance(fmt.get("json_schema", {}).get("schema", {}), rng, out_of_range=fault == "out_of_range")
        elif fmt.get("type") == "json_object":
            value = {"answer": round(rng.random(), 3)}
        else:
            return "Without a schema I answer in prose: the player explored a little and found a key."
        text = json.dumps(value)
        return text[: len(text) // 2] if fault == "broken_json" else text


def _rng(body: dict[str, Any], seed: int | None) -> random.Random:
    """Seeded answers are reproducible; temperature 0 (seed None here) depends on the prompt only."""
    if seed is not None:
        return random.Random(seed)
    if float(body.get("temperature", 1.0)) == 0:
        return random.Random(hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).digest())
    return random.Random()


def _instance(schema: dict[str, Any], rng: random.Random, *, out_of_range: bool) -> Any:
    kind = schema.get("type")
    if kind == "object":
        return {name: _instance(sub, rng, out_of_range=out_of_range)
                for name, sub in schema.get("properties", {}).items()}
    if kind in {"number", "integer"}:
        low, high = float(schema.get("minimum", 0)), float(schema.get("maximum", 1))
        value = high + 1 + rng.random() * 5 if out_of_range else rng.uniform(low, high)
        return round(value) if kind == "integer" else round(value, 3)
    if kind == "string":
        return "The player reached a new room and read a sign."[: int(schema.get("maxLength", 200))]
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [_instance(schema.get("items", {}), rng, out_of_range=out_of_range)]
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default backlog of 5 drops connection bursts (clients then retry after 1 s)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout) closes its socket while we answer: expected, not worth a traceback.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAIServer
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers; clients pool connections
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _send(self, status: int, payload: dict[str, Any] | str, headers: dict[str, str] | None = None) -> None:
        data = (json.dumps(payload) if isinstance(payload, dict) else payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if isinstance(payload, dict) else "text/plain")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        if self.owner.api_key is None:
            return True
        if self.headers.get("Authorization") == f"Bearer {self.owner.api_key}":
            return True
        self._send(401, {"error": {"message": "invalid API key", "type": "authentication_error"}})
        return False

    def do_GET(self) -> None:
        self.owner._record(RecordedRequest("GET", self.path, dict(self.headers), {}, time.time(), None))
        if not self._authorised():
            return
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": self.owner.model, "object": "model"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "request body is not JSON"}})
            return
        is_chat = self.path.rstrip("/").endswith("/chat/completions")
        fault = self.owner._next_fault() if is_chat else None
        self.owner._record(RecordedRequest("POST", self.path, dict(self.headers), body, time.time(), fault))
        if not self._authorised():
            return
        if not is_chat:
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        self.owner._enter()
        try:
            self._answer(body, fault)
        finally:
            self.owner._leave()

    def _answer(self, body: dict[str, Any], fault: Fault | None) -> None:
        if self.owner.latency_s > 0:
            self.owner._stopping.wait(self.owner.latency_s)
        if fault == "timeout":
            # Hold the request like a stuck server; the client gives up first, then the connection is dropped.
            self.owner._stopping.wait(self.owner.hang_s)
            self.close_connection = True
            return
        if fault == "http_500":
            self._send(500, {"error": {"message": "internal server error (injected)", "type": "server_error"}})
            return
        if fault in ("http_429", "http_503"):
            retry_after = self.owner.retry_after
            status, kind = (429, "rate_limit_exceeded") if fault == "http_429" else (503, "overloaded")
            self._send(status, {"error": {"message": f"{kind} (injected)", "type": kind}},
                       {"Retry-After": retry_after} if retry_after is not None else None)
            return
        self._send(200, self.owner.completion(body, fault))
