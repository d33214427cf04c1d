"""A local stand-in of AgentCore Runtime's WebSocket gateway, in front of the REAL agent app's ``/ws``.

What it does, as the runtime does for ``wss://bedrock-agentcore.<region>.amazonaws.com/runtimes/<arn>/ws``:
- checks the route (a URL-encoded runtime ARN) and the SigV4 signature of the upgrade request, in the
  headers (``Authorization``) or in the query string (a presigned URL: ``X-Amz-Signature``, not expired),
  by signing the request it received again with the caller's known credentials (botocore), the way AWS
  verifies it; a bad or missing signature is refused with 403 before any upgrade;
- passes the runtime session id (header, or the query parameter of the same name) to the container as the
  ``X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`` header, and relays frames both ways; with
  ``binary_frames=True`` it relays the container's text frames as binary ones, which the clients must
  still read by the whole-JSON-object rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlencode

from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.asyncio.client import connect

from agentcore_app.runtime_session import SESSION_HEADER

_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/\d{8}/(?P<region>[^/]+)/bedrock-agentcore/aws4_request"
)


@dataclass
class StandIn:
    """The gateway's settings and what it saw (for the tests)."""

    container_ws: str  # the agent app's /ws
    credentials: ReadOnlyCredentials
    binary_frames: bool = False
    seen: list[dict[str, str | None]] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(routes=[WebSocketRoute("/runtimes/{arn:path}/ws", self._route)])

    def _verified(self, websocket: WebSocket) -> str | None:
        """The way it was signed (``header`` / ``presigned``), or None when the signature is wrong."""
        host = websocket.headers.get("host", "")
        path = bytes(websocket.scope.get("raw_path") or websocket.url.path.encode()).decode(
            "ascii"
        )  # as signed
        query = dict(parse_qsl(websocket.url.query, keep_blank_values=True))
        if "X-Amz-Signature" in query:
            expires = int(query.get("X-Amz-Expires", "0"))
            stamp = query.get("X-Amz-Date", "")
            signed_at = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
            if datetime.datetime.now(datetime.UTC) - signed_at > datetime.timedelta(seconds=expires):
                return None
            region = query["X-Amz-Credential"].split("/")[2]
            rest = {k: v for k, v in query.items() if not k.startswith("X-Amz-")}
            url = f"https://{host}{path}" + (f"?{urlencode(rest)}" if rest else "")
            request = AWSRequest(method="GET", url=url, headers={"host": host})
            request.context["timestamp"] = stamp
            auth: SigV4Auth = SigV4QueryAuth(self.credentials, "bedrock-agentcore", region, expires=expires)
            auth._modify_request_before_signing(request)  # what add_auth does, with the caller's time
            expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
            return "presigned" if expected == query["X-Amz-Signature"] else None
        authorization = websocket.headers.get("authorization", "")
        match = _AUTH.match(authorization)
        stamp = websocket.headers.get("x-amz-date", "")
        if match is None or match["key"] != self.credentials.access_key or not stamp:
            return None
        headers = {"host": host, "x-amz-date": stamp}
        if token := websocket.headers.get("x-amz-security-token"):
            headers["x-amz-security-token"] = token
        url = f"https://{host}{path}" + (f"?{websocket.url.query}" if websocket.url.query else "")
        request = AWSRequest(method="GET", url=url, headers=headers)
        request.context["timestamp"] = stamp
        auth = SigV4Auth(self.credentials, "bedrock-agentcore", match["region"])
        expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
        return "header" if authorization.endswith(f"Signature={expected}") else None

    async def _route(self, websocket: WebSocket) -> None:
        arn = unquote(websocket.path_params["arn"])
        signed = self._verified(websocket)
        session = websocket.headers.get(SESSION_HEADER) or websocket.query_params.get(SESSION_HEADER)
        self.seen.append({"arn": arn, "signed": signed, "session": session})
        if signed is None or not arn.startswith("arn:aws:bedrock-agentcore:"):
            await websocket.close(1008)  # refused before the upgrade: the client sees HTTP 403
            return
        await websocket.accept()
        headers = {SESSION_HEADER: session} if session else {}
        async with (
            connect(self.container_ws, additional_headers=headers, max_size=None) as container,
            asyncio.TaskGroup() as relay,
        ):
            up = relay.create_task(self._up(websocket, container))
            down = relay.create_task(self._down(websocket, container))
            await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
            up.cancel()
            down.cancel()

    @staticmethod
    async def _up(websocket: WebSocket, container: object) -> None:
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                await container.send(message.get("bytes") or message.get("text", ""))  # type: ignore[attr-defined]

    async def _down(self, websocket: WebSocket, container: object) -> None:
        with contextlib.suppress(Exception):
            async for frame in container:  # type: ignore[attr-defined]
                if isinstance(frame, bytes):
                    await websocket.send_bytes(frame)
                elif self.binary_frames:
                    await websocket.send_bytes(frame.encode("utf-8"))
                else:
                    await websocket.send_text(frame)
