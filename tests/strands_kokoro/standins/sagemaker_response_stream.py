"""A local stand-in of SageMaker's ``InvokeEndpointWithResponseStream`` for the REAL boto3 client.

boto3 is pointed at it with ``endpoint_url``; everything on the client side stays real (request
building, SigV4, botocore's event-stream parser over a chunked HTTP/1.1 response). The stand-in checks
the route and the signature's shape, forwards the body to the model server's POST /invocations and
streams the answer back the way SageMaker does: each piece of the container's response becomes one
``PayloadPart`` event (encoded with the event-stream encoder of ``smithy-aws-event-stream``: prelude,
headers, payload, CRC32s), a container 4xx/5xx becomes a 424 ``ModelError`` carrying the original body.

Knobs, settable between requests: ``part_size`` re-cuts the container's bytes into parts of that many
bytes (``1`` puts a part boundary at every offset of the response), ``break_after`` ends the stream
with a ``ModelStreamError`` after that many parts.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from smithy_aws_event_stream.events import EventMessage

_ROUTE = re.compile(r"^/endpoints/(?P<name>[^/]+)/invocations-response-stream$")
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/\d{8}/(?P<region>[^/]+)/sagemaker/aws4_request, "
    r"SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$"
)


def event_message(headers: dict[str, Any], payload: bytes) -> bytes:
    return EventMessage(headers=headers, payload=payload).encode()


def payload_part(data: bytes) -> bytes:
    return event_message({":message-type": "event", ":event-type": "PayloadPart"}, data)


def model_stream_error(error_code: str, message: str) -> bytes:
    headers = {
        ":message-type": "exception",
        ":exception-type": "ModelStreamError",
        ":content-type": "application/json",
    }
    return event_message(headers, json.dumps({"Message": message, "ErrorCode": error_code}).encode())


class SageMakerResponseStreamServer(ThreadingHTTPServer):
    """``with SageMakerResponseStreamServer(model_http_url) as server:`` then ``endpoint_url=server.url``."""

    daemon_threads = True

    def __init__(self, model_http_url: str, *, region: str = "us-east-1") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.model_http_url = model_http_url.rstrip("/")
        self.region = region
        self.part_size: int | None = None
        self.break_after: int | None = None
        self.endpoint_names: list[str] = []
        self.access_keys: list[str] = []
        self.parts_sent = 0
        self._thread = threading.Thread(target=self.serve_forever, name="sagemaker-standin", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> SageMakerResponseStreamServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=10)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SageMakerResponseStreamServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        route = _ROUTE.match(self.path)
        auth = _AUTH.match(self.headers.get("Authorization", ""))
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if route is None or auth is None or auth["region"] != self.server.region:
            self._json(403, "InvalidSignatureException", {"message": "unsigned or misrouted request"})
            return
        self.server.endpoint_names.append(route["name"])
        self.server.access_keys.append(auth["key"])
        url = self.server.model_http_url + "/invocations"
        with (
            httpx.Client(timeout=120) as client,
            client.stream(
                "POST", url, content=body, headers={"Content-Type": "application/json"}
            ) as upstream,
        ):
            if upstream.status_code != 200:
                original = upstream.read().decode("utf-8", "replace")
                self._json(
                    424,
                    "ModelError",
                    {
                        "Message": f"Received client error ({upstream.status_code}) from primary",
                        "OriginalStatusCode": upstream.status_code,
                        "OriginalMessage": original,
                    },
                )
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.amazon.eventstream")
            self.send_header("X-Amzn-SageMaker-Content-Type", upstream.headers.get("content-type", ""))
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            streaming = threading.Event()
            streaming.set()
            watcher = threading.Thread(target=self._hang_up_when_client_leaves, args=(upstream, streaming))
            watcher.start()
            try:
                for index, part in enumerate(self._parts(upstream.iter_raw())):
                    if self.server.break_after is not None and index >= self.server.break_after:
                        self._chunk(model_stream_error("StreamBroken", "the model closed the stream"))
                        break
                    self._chunk(payload_part(part))
                    self.server.parts_sent += 1
                self.wfile.write(b"0\r\n\r\n")
            except (OSError, httpx.HTTPError):
                self.close_connection = True  # the client left (cancel): the container was hung up on
            finally:
                streaming.clear()
                watcher.join()

    def _hang_up_when_client_leaves(self, upstream: httpx.Response, streaming: threading.Event) -> None:
        """Like SageMaker, stop the container's response as soon as the client disconnects."""
        while streaming.is_set():
            readable, _, _ = select.select([self.connection], [], [], 0.1)
            try:
                gone = bool(readable) and not self.connection.recv(1, socket.MSG_PEEK)
            except OSError:  # reset by the client
                gone = True
            if gone:
                upstream.close()
                return

    def _parts(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        size = self.server.part_size
        if size is None:
            yield from pieces
            return
        buffer = b""
        for piece in pieces:
            buffer += piece
            whole = len(buffer) - len(buffer) % size
            for start in range(0, whole, size):
                yield buffer[start : start + size]
            buffer = buffer[whole:]
        if buffer:
            yield buffer

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _json(self, status: int, error_type: str, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("x-amzn-ErrorType", error_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
