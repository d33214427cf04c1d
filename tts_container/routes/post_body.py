"""The start every synthesizing POST route shares: a model to ask, then a body within the limit.

``POST /invocations`` and OpenAI's ``POST /v1/audio/speech`` begin alike, in this order: no model yet
(or none that loaded) is refused first (:func:`model_unavailable`); then a body announced over
``MAX_MESSAGE_BYTES`` is refused before a byte of it is read; a body without a length is read to one
byte past the limit (the parser then refuses it), so an oversized body is never buffered whole. A
caller who leaves before its body is complete gets a bare 400: nobody is left to read an answer. Each
route answers a refusal in its own shape.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from strands_kokoro.protocol import MAX_MESSAGE_BYTES, ErrorCode

__all__ = ["announced_length", "model_unavailable", "read_body", "read_post"]

logger = logging.getLogger(__name__)

Refuse = Callable[[ErrorCode, str], Response]


def model_unavailable(load_failed: bool) -> tuple[ErrorCode, str]:
    """Why there is no model to ask: still loading (retry), or it failed to load (it never will)."""
    if load_failed:
        return ErrorCode.ENGINE_FAILED, "the model failed to load (the server's log says why)"
    return ErrorCode.NOT_READY, "the model is still loading; retry after /ping answers 200"


async def read_post(request: Request, *, refuse: Refuse) -> bytes | Response:
    """The request's body, or the answer to give instead (made by ``refuse`` from a code and a message).

    Called once the route has a model to ask (:func:`model_unavailable` says why it has none)."""
    if announced_length(request) > MAX_MESSAGE_BYTES:  # refused before a byte of it is awaited
        return refuse(ErrorCode.MESSAGE_TOO_LARGE, f"message is over {MAX_MESSAGE_BYTES} bytes")
    try:
        return await read_body(request)
    except ClientDisconnect:  # the caller left before its body was complete: nobody is left to answer
        logger.info("the caller of POST %s left before its body was complete", request.url.path)
        return Response(status_code=400)


def announced_length(request: Request) -> int:
    """The body's Content-Length (0 when absent or not a number: the reader's own limit applies)."""
    value = request.headers.get("content-length", "")
    return int(value) if value.isdecimal() else 0


async def read_body(request: Request) -> bytes:
    """Read at most one byte past the limit, so an oversized body is refused without buffering it."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_MESSAGE_BYTES:
            break
    return bytes(body)
