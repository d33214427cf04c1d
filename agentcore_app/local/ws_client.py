"""The agent app's WebSocket as a client uses it: a local app's ``/ws``, or a deployed runtime's, signed.

A local app: ``ws://host:port/ws``, the conversation in the session header. A deployed AgentCore runtime
(``arn:aws:bedrock-agentcore:<region>:...:runtime/...``): ``wss://bedrock-agentcore.<region>.amazonaws.com/
runtimes/<url-encoded arn>/ws``, signed with SigV4 for ``bedrock-agentcore`` by botocore in the upgrade's
headers or in the query string (a presigned URL, for a browser); the runtime session id rides along as the
header or as the query parameter of that name. ``BEDROCK_AGENTCORE_DP_ENDPOINT`` replaces the data-plane
endpoint, as it does for the SDK. Frames are :mod:`agentcore_app.event_frames`'. The clock starts before
the connection is opened, so "first audio" counts the handshake, as a listener waits for it.
"""

from __future__ import annotations

import os
import time
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from agentcore_app import event_frames
from agentcore_app.local.turn_record import TimedEvent, TurnRecord
from agentcore_app.runtime_session import SESSION_HEADER, new_session_id

DP_ENDPOINT_ENV = "BEDROCK_AGENTCORE_DP_ENDPOINT"
SERVICE = "bedrock-agentcore"
PRESIGN_EXPIRES_S = 300  # AgentCore's maximum


def runtime_region(runtime_arn: str) -> str:
    parts = runtime_arn.split(":")
    if len(parts) < 6 or parts[2] != SERVICE or not parts[3]:
        raise ValueError(f"not an AgentCore runtime ARN: {runtime_arn[:80]!r}")
    return parts[3]


def runtime_ws_url(runtime_arn: str, query: dict[str, str] | None = None) -> str:
    """The runtime's WebSocket URL (``https`` endpoints become ``wss``, ``http`` ones ``ws``)."""
    region = runtime_region(runtime_arn)
    endpoint = os.environ.get(DP_ENDPOINT_ENV) or f"https://{SERVICE}.{region}.amazonaws.com"
    scheme = "ws" if endpoint.startswith("http://") else "wss"
    base = f"{scheme}://{urlsplit(endpoint).netloc}/runtimes/{quote(runtime_arn, safe='')}/ws"
    return f"{base}?{urlencode(query)}" if query else base


def _credentials(session: Any) -> Any:
    import botocore.session
    from botocore.exceptions import NoCredentialsError

    credentials = (session or botocore.session.get_session()).get_credentials()
    if credentials is None:
        raise NoCredentialsError()  # what botocore's own signer raises on the SSE path
    return credentials.get_frozen_credentials()


def _https(url: str) -> str:
    return "https" + url[len("wss") :] if url.startswith("wss") else "http" + url[len("ws") :]


def signed_headers(runtime_arn: str, session_id: str, *, session: Any = None) -> tuple[str, dict[str, str]]:
    """The URL and the SigV4 headers of the upgrade request (the session id header is not signed)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    url = runtime_ws_url(runtime_arn)
    request = AWSRequest(method="GET", url=_https(url), headers={"host": urlsplit(url).netloc})
    SigV4Auth(_credentials(session), SERVICE, runtime_region(runtime_arn)).add_auth(request)
    # Sent as botocore signed them: it stamps X-Amz-Date itself (a date of our own, taken a moment
    # earlier, was a second off now and then, and the gateway refused the signature with 403).
    signed = ("X-Amz-Date", "Authorization", "X-Amz-Security-Token")
    headers = {name: request.headers[name] for name in signed if name in request.headers}
    headers[SESSION_HEADER] = session_id
    return url, headers


def presigned_url(
    runtime_arn: str, session_id: str, *, session: Any = None, expires_s: int = PRESIGN_EXPIRES_S
) -> str:
    """A SigV4 presigned URL (query-string auth) that carries the session id as a query parameter."""
    from botocore.auth import SigV4QueryAuth
    from botocore.awsrequest import AWSRequest

    url = runtime_ws_url(runtime_arn, {SESSION_HEADER: session_id})
    request = AWSRequest(method="GET", url=_https(url), headers={"host": urlsplit(url).netloc})
    SigV4QueryAuth(_credentials(session), SERVICE, runtime_region(runtime_arn), expires=expires_s).add_auth(
        request
    )
    signed = str(request.url)
    return ("wss" + signed[len("https") :]) if signed.startswith("https") else "ws" + signed[len("http") :]


def local_ws_url(base_url: str) -> str:
    """An app's ``/ws`` from its http(s) URL."""
    return ("ws" + base_url[len("http") :]).rstrip("/") + "/ws"


async def run_ws_turn(
    endpoint_url: str,
    payload: dict[str, Any],
    record: TurnRecord,
    *,
    session_id: str | None = None,
    aws_session: Any = None,
) -> TurnRecord:
    """One turn over a fresh connection to ``endpoint_url`` (an app URL or a runtime ARN), recorded.

    A runtime always gets a session id (a fresh one without ``session_id``: a cold conversation).
    """
    from websockets.asyncio.client import connect

    started = time.perf_counter()
    headers: dict[str, str] = {}
    if endpoint_url.startswith("arn:"):
        url, headers = signed_headers(endpoint_url, session_id or new_session_id(), session=aws_session)
    else:
        url = local_ws_url(endpoint_url)
        if session_id is not None:
            headers[SESSION_HEADER] = session_id
    reader = event_frames.FrameReader()
    async with connect(url, additional_headers=headers, max_size=None, open_timeout=60) as ws:
        await ws.send(event_frames.turn_request(payload))
        async for frame in ws:
            record.wire_bytes += len(frame if isinstance(frame, bytes) else frame.encode("utf-8"))
            read = reader.feed(frame)
            if read is None:
                continue
            if read.event.get("type") == "turn_end":
                break
            record.add(TimedEvent((time.perf_counter() - started) * 1000.0, read.event), read.audio)
    return record
