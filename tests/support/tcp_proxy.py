"""A TCP proxy that fails on demand, in front of a real server (the S3 test server, NATS): the outages of
``tests/shared/test_outages.py``, ``tests/e2e/test_up_faults.py`` and ``bench/chaos.py``.

Modes, switchable while it runs (``proxy.mode = "hang"``):
- ``pass``: every connection is piped to the upstream server;
- ``refuse``: nothing listens on the port (a connect is refused) and open connections are cut;
- ``hang``: connections are accepted but nothing is ever answered; open connections go silent (what reaches
  them is dropped, never delivered later), and all of them are closed when the mode changes again.

Threads, not asyncio, so that sync tests, async tests and scripts can all drive it.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

Mode = Literal["pass", "refuse", "hang"]


@dataclass(eq=False)
class _Connection:
    client: socket.socket
    upstream: socket.socket | None = None
    frozen: bool = False  # hang: data is read and dropped
    closed: threading.Event = field(default_factory=threading.Event)

    def close(self) -> None:
        self.closed.set()
        for sock in (self.client, self.upstream):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()


class TcpProxy:
    """``TcpProxy(upstream_host, upstream_port)``; use as a context manager. ``port`` is fixed once started."""

    def __init__(self, upstream_host: str, upstream_port: int, *, port: int = 0) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = port
        self._mode: Mode = "pass"
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._connections: set[_Connection] = set()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.accepted = 0

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def mode(self) -> Mode:
        return self._mode

    @mode.setter
    def mode(self, mode: Mode) -> None:
        with self._lock:
            if mode == self._mode:
                return
            previous, self._mode = self._mode, mode
            stale = [c for c in self._connections if c.frozen or mode != "pass"]
            for connection in stale:
                if mode == "hang" and not connection.frozen:
                    connection.frozen = True
                else:
                    connection.close()
                    self._connections.discard(connection)
            if mode == "refuse" and self._listener is not None:
                self._listener.close()
                self._listener = None
            if previous == "refuse" and mode != "refuse":
                self._listen()

    def start(self) -> TcpProxy:
        self._listen()
        self._thread = threading.Thread(target=self._accept_loop, name="tcp-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            if self._listener is not None:
                self._listener.close()
                self._listener = None
            for connection in self._connections:
                connection.close()
            self._connections.clear()

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # The same port after a refuse: the client must find the server where it was.
        for _ in range(200):
            try:
                listener.bind((self.host, self.port))
                break
            except OSError:
                time.sleep(0.05)
        else:
            listener.bind((self.host, self.port))
        listener.listen(128)
        listener.settimeout(0.05)
        self.port = listener.getsockname()[1]
        self._listener = listener

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            listener = self._listener
            if listener is None:
                time.sleep(0.05)
                continue
            try:
                client, _ = listener.accept()
            except (TimeoutError, OSError):  # timeout, or the listener closed by a switch to refuse
                continue
            self.accepted += 1
            connection = _Connection(client)
            with self._lock:
                if self._mode == "refuse":
                    connection.close()
                    continue
                connection.frozen = self._mode == "hang"
                self._connections.add(connection)
            if not connection.frozen:
                threading.Thread(target=self._pipe, args=(connection,), daemon=True).start()

    def _pipe(self, connection: _Connection) -> None:
        try:
            connection.upstream = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            connection.close()
            return
        pairs = {connection.client: connection.upstream, connection.upstream: connection.client}
        try:
            while not connection.closed.is_set():
                readable, _, _ = select.select(list(pairs), [], [], 0.1)
                for source in readable:
                    data = source.recv(65536)
                    if not data:
                        return
                    if not connection.frozen:
                        pairs[source].sendall(data)
        except (OSError, ValueError):  # closed under us by a mode switch
            return
        finally:
            connection.close()
            with self._lock:
                self._connections.discard(connection)
