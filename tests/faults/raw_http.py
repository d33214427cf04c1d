"""A raw TCP client for the fault tests: requests that stop half-way, hang-ups with a FIN or a reset.

Why not httpx: a real client library always finishes the request it starts, and closes politely. The
faults under test are exactly the ones it never makes: headers or a body that stop arriving, a caller
that vanishes mid-stream with a TCP reset.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from dataclasses import dataclass


@dataclass
class Answer:
    """What the server sent before it closed the connection (or before the wait ran out)."""

    data: bytes
    closed: bool

    @property
    def status(self) -> int | None:
        """The status code of the response, if one began."""
        if not self.data.startswith(b"HTTP/1."):
            return None
        return int(self.data.split(b" ", 2)[1])

    @property
    def body(self) -> bytes:
        return self.data.partition(b"\r\n\r\n")[2]


class RawConnection:
    """One TCP connection to ``host:port``; use as ``async with``."""

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        self.host, self.port = host, int(port)
        self.reader: asyncio.StreamReader
        self.writer: asyncio.StreamWriter

    async def __aenter__(self) -> RawConnection:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if not self.writer.is_closing():
            self.writer.close()

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_until(self, marker: bytes, limit: int = 4 * 1024 * 1024) -> bytes:
        """Everything read until ``marker`` first appears (the caller bounds the wait)."""
        data = bytearray()
        while marker not in data:
            chunk = await self.reader.read(65536)
            if not chunk:
                raise ConnectionError(f"closed before {marker!r} arrived")
            data += chunk
            if len(data) > limit:
                raise AssertionError(f"{limit} bytes read and no {marker!r}")
        return bytes(data)

    async def answer(self, wait_s: float) -> Answer:
        """Read until the server closes the connection, or ``wait_s`` passed (``closed`` says which)."""
        data = bytearray()
        try:
            async with asyncio.timeout(wait_s):
                while chunk := await self.reader.read(65536):
                    data += chunk
        except TimeoutError:
            return Answer(bytes(data), closed=False)
        except ConnectionResetError:
            pass
        return Answer(bytes(data), closed=True)

    def stop_reading(self) -> None:
        """Take no more data, as a connection that died without a FIN or a reset looks to the server:
        the receive window closes and the server's writes back up."""
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.writer.transport.pause_reading()

    def resume_reading(self) -> None:
        self.writer.transport.resume_reading()

    def reset(self) -> None:
        """Vanish with a TCP reset (SO_LINGER 0), as a dropped mobile connection or a killed client."""
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()


def post_head(path: str, host: str, content_length: int, content_type: str = "application/json") -> bytes:
    """The head of a POST whose body is ``content_length`` bytes (the caller sends as much as it likes)."""
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {host}",
        f"Content-Type: {content_type}",
        f"Content-Length: {content_length}",
        "",
        "",
    ]
    return "\r\n".join(lines).encode()


_TCP_STATES = {1: "established", 7: "close", 8: "close_wait"}  # include/net/tcp_states.h


async def let_go(sock: socket.socket, timeout_s: float) -> str:
    """This end's TCP state once the server let go of the connection (its FIN or its reset)."""
    async with asyncio.timeout(timeout_s):
        while True:
            if (state := tcp_state(sock)) != "established":
                return state
            await asyncio.sleep(0.2)


def tcp_state(sock: socket.socket) -> str:
    """This end's TCP state (Linux ``TCP_INFO``): ``established`` while the server keeps the connection,
    ``close_wait`` after its FIN, ``close`` after its reset."""
    state = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]
    return _TCP_STATES.get(state, str(state))
