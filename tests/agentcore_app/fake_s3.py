"""``FakeS3``: a test double of the few S3 calls Strands' S3SessionManager makes, behind real botocore.

botocore builds, signs and parses every request for real; only the HTTP exchange is answered here (a
``before-send`` hook). It answers as S3 does for a role that may list the bucket under one prefix only
(the agent stack's IAM): a missing key is 403 (``AccessDenied``), not 404, and a listing outside the
prefix is refused.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit
from xml.etree import ElementTree

from botocore.awsrequest import AWSResponse

DENIED = b"<?xml version='1.0'?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"


class _Raw:
    """Just enough of a urllib3 response for botocore: ``stream()`` and ``read(amt)``."""

    def __init__(self, body: bytes) -> None:
        self._body = io.BytesIO(body)

    def stream(self, amt: int = 1024, decode_content: bool = False) -> Iterator[bytes]:
        while chunk := self._body.read(amt):
            yield chunk

    def read(self, amt: int | None = None, decode_content: bool = False) -> bytes:
        return self._body.read(amt)


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return bytes(body.read())


def _unchunk(data: bytes) -> bytes:
    """The payload of an aws-chunked body: ``<hex size>\r\n<data>\r\n`` ... ``0\r\n<trailers>``."""
    out, rest = bytearray(), data
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        rest = rest[size + 2 :]
    return bytes(out)


class FakeS3:
    """Objects by key in one bucket; ``list_prefix`` is where the caller may list."""

    def __init__(self, bucket: str, list_prefix: str) -> None:
        self.bucket = bucket
        self.list_prefix = list_prefix
        self.objects: dict[str, bytes] = {}
        self.calls: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def attach(self, session: Any) -> Any:
        """Answer the S3 requests of this boto3 session; returns the session."""
        session.events.register("before-send.s3", self._answer)
        return session

    def _answer(self, request: Any, **_: Any) -> AWSResponse:
        url = urlsplit(request.url)
        host_bucket = url.hostname.split(".")[0] if url.hostname else ""
        path = unquote(url.path.lstrip("/"))
        if host_bucket != self.bucket:  # path-style addressing
            _, _, path = path.partition("/")
        query = parse_qs(url.query, keep_blank_values=True)
        with self._lock:
            self.calls.append((request.method, path or url.query))
            return self._dispatch(request, path, query)

    def _dispatch(self, request: Any, key: str, query: dict[str, list[str]]) -> AWSResponse:
        method = request.method
        if method == "GET" and "list-type" in query:
            return self._list(query.get("prefix", [""])[0])
        if method == "POST" and "delete" in query:
            return self._delete(request.body)
        if method == "PUT":
            data = _body_bytes(request.body)
            encoding = request.headers.get("Content-Encoding") or b""
            if b"aws-chunked" in (encoding if isinstance(encoding, bytes) else encoding.encode()):
                data = _unchunk(data)  # botocore sends PutObject aws-chunked, with a trailing checksum
            self.objects[key] = data
            return self._response(200, b"", {"ETag": '"0"'})
        if key not in self.objects:
            return self._response(403, b"" if method == "HEAD" else DENIED)
        data = self.objects[key]
        return self._response(200, b"" if method == "HEAD" else data, {"Content-Length": str(len(data))})

    def _list(self, prefix: str) -> AWSResponse:
        if not prefix.startswith(self.list_prefix):
            return self._response(403, DENIED)
        keys = sorted(k for k in self.objects if k.startswith(prefix))
        contents = "".join(
            f"<Contents><Key>{k}</Key><Size>{len(self.objects[k])}</Size></Contents>" for k in keys
        )
        body = (
            "<?xml version='1.0'?><ListBucketResult><Name>b</Name><Prefix>"
            f"{prefix}</Prefix><KeyCount>{len(keys)}</KeyCount><IsTruncated>false</IsTruncated>"
            f"{contents}</ListBucketResult>"
        )
        return self._response(200, body.encode())

    def _delete(self, body: Any) -> AWSResponse:
        raw = _body_bytes(body)
        tree = ElementTree.fromstring(raw)
        deleted = []
        for element in tree.iter():
            if element.tag.endswith("Key") and element.text:
                self.objects.pop(element.text, None)
                deleted.append(f"<Deleted><Key>{element.text}</Key></Deleted>")
        return self._response(200, f"<DeleteResult>{''.join(deleted)}</DeleteResult>".encode())

    @staticmethod
    def _response(status: int, body: bytes, headers: dict[str, str] | None = None) -> AWSResponse:
        return AWSResponse("https://fake-s3", status, headers or {}, _Raw(body))  # type: ignore[arg-type]
