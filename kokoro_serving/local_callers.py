"""What both local servers refuse from a loopback caller: a pure judgment of one request's headers.

A server on 127.0.0.1 is reachable from every web page its user opens, so a ``POST`` on a loopback
connection is refused for a ``Host`` that is not a loopback name (DNS rebinding), a foreign ``Origin``,
or a body that is not ``application/json`` (a no-cors ``fetch`` can send only ``text/plain`` or a form).
Which origins are foreign, and how a refusal is written, is each server's; the judgment is here.
"Loopback connection" is ``scope["server"]`` (the address the client reached), so in a container bound
to 0.0.0.0, reached on its network address, these checks never apply.
"""

from __future__ import annotations

import argparse
import ipaddress
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from kokoro_serving.errors import STATUS, ServingErrorCode

__all__ = [
    "ORIGIN_NOT_ALLOWED",
    "STATUS",
    "header",
    "is_loopback_host",
    "local_post_refusal",
    "local_socket_refusal",
    "normalize_origin",
    "on_loopback",
    "origin_option",
]

# The codes and their statuses are kokoro_serving.errors'; the model server's guard names these two here.
ORIGIN_NOT_ALLOWED = ServingErrorCode.ORIGIN_NOT_ALLOWED

Scope = Mapping[str, Any]


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower-case bytes), decoded as Latin-1, or None."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 or ``localhost`` (an address, or a ``Host`` header's name part)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower().rstrip(".") == "localhost"


def host_name(host_header: str) -> str:
    """``[::1]:8080`` → ``::1``, ``localhost:8080`` → ``localhost``."""
    if host_header.startswith("["):
        return host_header[1:].partition("]")[0]
    return host_header.rpartition(":")[0] if host_header.count(":") == 1 else host_header


def on_loopback(scope: Scope) -> bool:
    """Whether this connection arrived on a loopback address of the server."""
    server = scope.get("server")
    return server is not None and isinstance(server[0], str) and is_loopback_host(server[0])


def normalize_origin(origin: str) -> str:
    return origin.strip().rstrip("/").lower()


def origin_option(text: str) -> str:
    """An argparse type for an allowed origin: ``scheme://host[:port]`` as a browser sends it in
    ``Origin``, refused at start-up otherwise (``localhost:3000`` or ``https://x.org/app`` could never
    match, and the page would only ever see a 403)."""
    parts = urllib.parse.urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an origin: write scheme://host[:port], e.g. http://localhost:3000"
        )
    if parts.query or parts.fragment or parts.username is not None:
        raise argparse.ArgumentTypeError(f"{text!r} is not an origin: scheme://host[:port] only")
    try:
        parts.port  # noqa: B018 - a port out of range or not a number raises here
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not an origin: {exc}") from exc
    return normalize_origin(text)


def local_post_refusal(
    scope: Scope, *, origin_allowed: Callable[[str], bool], server: str
) -> tuple[str, str] | None:
    """``(code, message)`` when a POST from a loopback caller must be refused, else None.

    ``origin_allowed(normalized origin)`` is the server's policy for a request that carries an
    ``Origin``; ``server`` names it in the messages ("model server", "agent app").
    """
    if scope.get("type") != "http" or scope.get("method") != "POST" or not on_loopback(scope):
        return None
    refused = _host_or_origin_refusal(scope, origin_allowed, server)
    if refused is not None:
        return refused
    media_type = (header(scope, b"content-type") or "").partition(";")[0].strip().lower()
    if media_type != "application/json":
        return ServingErrorCode.BAD_CONTENT_TYPE, "the body must be sent as Content-Type: application/json"
    return None


def local_socket_refusal(
    scope: Scope, *, origin_allowed: Callable[[str], bool], server: str
) -> tuple[str, str] | None:
    """``(code, message)`` when a WebSocket handshake from a loopback caller must be refused, else None.

    A page may open a WebSocket to any address without a CORS preflight, so the handshake faces the same
    ``Host`` and ``Origin`` doors as a POST (a handshake has no body, so no content type).
    """
    if scope.get("type") != "websocket" or not on_loopback(scope):
        return None
    return _host_or_origin_refusal(scope, origin_allowed, server)


def _host_or_origin_refusal(
    scope: Scope, origin_allowed: Callable[[str], bool], server: str
) -> tuple[str, str] | None:
    hosts = [value for key, value in scope.get("headers", ()) if key == b"host"]
    if len(hosts) > 1:  # RFC 9112 §3.2: 400; a proxy and this server could each read a different one
        return ServingErrorCode.DUPLICATE_HOST, "the request has more than one Host header"
    host = header(scope, b"host")
    if host is None or not is_loopback_host(host_name(host)):
        addressed = f"a local {server} answers only requests addressed to a loopback host"
        return ServingErrorCode.HOST_NOT_ALLOWED, addressed
    origin = header(scope, b"origin")
    if origin is not None and not origin_allowed(normalize_origin(origin)):
        return ServingErrorCode.ORIGIN_NOT_ALLOWED, f"pages from this origin may not call the local {server}"
    return None
