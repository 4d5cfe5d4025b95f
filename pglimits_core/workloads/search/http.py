"""A minimal keep-alive HTTP/1.1 client for the search engines' JSON API.

Why not the vendor clients in the measured loop: on this 2-core box the client shares the CPU
with the server, and elasticsearch-py / opensearch-py spend ~300-400 µs of client CPU per
search (http.client alone ~150 µs), against ~20 µs for psycopg's C path to Postgres. Timing
the Python library instead of the engine would be a client-bound comparison that says nothing
about the engines. This client sends one pre-encoded request (request line, headers and JSON
body in one ``sendall``, TCP_NODELAY) on a persistent connection and reads the response by
``Content-Length`` or chunked encoding (Elasticsearch 8 answers chunked): ~40 µs of client CPU
per search including ``json.loads``. The request bodies are the ones the vendor clients would
send; the vendor client still checks, once, that the server is the product it claims to be
(``servers.search_clients``).
"""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

from pglimits_core.errors import PGLimitsError

RECV_BYTES = 65536


class HttpError(RuntimeError):
    """A non-2xx answer: status and the start of the body (the engine's own error)."""


def encode_request(host: str, method: str, path: str, body: bytes | None = None) -> bytes:
    """One HTTP/1.1 request, ready for ``sendall`` (encode once, send many times)."""
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n"
    if body is None:
        return (head + "Content-Length: 0\r\n\r\n").encode()
    head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


class KeepAliveHttp:
    """One persistent connection to ``url`` (``http://host:port``); not thread-safe."""

    def __init__(self, url: str, timeout_s: float = 600.0):
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise PGLimitsError(f"{url!r} is not http://host:port", "pass the engine's HTTP URL")
        self.host, self.port, self.timeout_s = parts.hostname, parts.port, timeout_s
        self.host_header = f"{self.host}:{self.port}"
        self.sock: socket.socket | None = None
        self.buffer = b""

    def connect(self) -> KeepAliveHttp:
        self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        return self

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def encode(self, method: str, path: str, body: bytes | None = None) -> bytes:
        return encode_request(self.host_header, method, path, body)

    def send(self, request: bytes) -> tuple[int, bytes]:
        """Send one pre-encoded request, return ``(status, body)``."""
        if self.sock is None:
            self.connect()
        self.sock.sendall(request)
        return read_response(self)

    def json(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201)) -> Any:
        """A JSON request and its decoded answer; a status outside ``ok`` raises ``HttpError``."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        status, answer = self.send(self.encode(method, path, data))
        if status not in ok:
            raise HttpError(f"{method} {path}: HTTP {status}: {answer[:300].decode(errors='replace')}")
        return json.loads(answer) if answer else None

    # --- reading ---------------------------------------------------------------------------
    def _more(self) -> None:
        data = self.sock.recv(RECV_BYTES)
        if not data:
            raise ConnectionError(f"{self.host_header} closed the connection mid-response")
        self.buffer += data

    def read_line(self) -> bytes:
        while (end := self.buffer.find(b"\r\n")) < 0:
            self._more()
        line, self.buffer = self.buffer[:end], self.buffer[end + 2:]
        return line

    def read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self._more()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data


def read_response(conn: KeepAliveHttp) -> tuple[int, bytes]:
    """Status and body of the next response on ``conn`` (Content-Length or chunked)."""
    status_line = conn.read_line()
    status = int(status_line.split(b" ", 2)[1])
    length, chunked = None, False
    while line := conn.read_line():
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
    if chunked:
        parts = []
        while size := int(conn.read_line().split(b";", 1)[0], 16):
            parts.append(conn.read_exactly(size))
            conn.read_exactly(2)  # the CRLF after each chunk
        while conn.read_line():  # trailers, then the empty line
            pass
        return status, b"".join(parts)
    return status, conn.read_exactly(length or 0)
