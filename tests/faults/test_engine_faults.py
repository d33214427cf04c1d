"""An engine that fails mid-request, over WS and POST: a coded error, never a silent success, and the
session (or server) goes on. In-process server, :class:`~tests.faults.id_engine.IdEngine` told to raise
on its Nth segment; the audio before the failure is checked byte for byte.
"""

from __future__ import annotations

import httpx
import pytest
from httpx_sse import aconnect_sse
from websockets.asyncio.client import connect

from strands_kokoro.protocol import WS_PATH
from tests.faults.id_engine import IdEngine, expected_pcm, sentences
from tests.model_server_process import running_app
from tests.tts_container.server_harness import dumps, read_response
from tts_container.app import WARMUP_TEXTS, create_app

pytestmark = pytest.mark.anyio

THREE = "First part here. Second part here. Third part here."


WARMUP_SEGMENTS = sum(len(sentences(text)) for text in WARMUP_TEXTS)


def failing_on(segment: int) -> IdEngine:
    """Fail on the request's ``segment``-th sentence: the server's warm-up already took the engine's
    first segments (one per sentence of its warm-up texts)."""
    return IdEngine(fail_on_segment=segment + WARMUP_SEGMENTS)


async def test_ws_engine_failure_mid_request_is_coded_and_the_next_request_succeeds() -> None:
    async with (
        running_app(create_app(lambda: failing_on(2))) as address,
        connect(f"ws://{address}{WS_PATH}") as ws,
    ):
        await ws.send(dumps(text=THREE, request_id="doomed"))
        await ws.send(dumps(text="After the failure.", request_id="next"))
        doomed, following = await read_response(ws), await read_response(ws)
    assert doomed.end is not None and doomed.end["type"] == "error"
    assert (doomed.end["code"], doomed.end["request_id"]) == ("engine_failed", "doomed")
    assert "deadbeef" not in doomed.end["message"] and "CUDA" not in doomed.end["message"]
    # The first sentence was spoken before the failure; the rest of the request was not.
    assert doomed.pcm == expected_pcm(sentences(THREE)[0])[: len(doomed.pcm)] and doomed.pcm
    assert following.end is not None and following.end["type"] == "synthesis_complete"
    assert following.pcm == expected_pcm("After the failure.")


async def test_post_sse_engine_failure_mid_request_is_a_coded_error_event() -> None:
    body = {"text": THREE, "format": "sse", "request_id": "doomed"}
    async with running_app(create_app(lambda: failing_on(2))) as address, httpx.AsyncClient() as client:
        url = f"http://{address}/invocations"
        async with aconnect_sse(client, "POST", url, json=body) as source:
            assert source.response.status_code == 200
            events = [event.json() async for event in source.aiter_sse()]
        after = await client.post(url, json={"text": "After the failure."})
    kinds = [event["type"] for event in events]
    assert kinds[0] == "synthesis_start" and "audio" in kinds and "synthesis_complete" not in kinds
    assert events[-1] == events[-1] | {"type": "error", "code": "engine_failed", "request_id": "doomed"}
    assert "deadbeef" not in events[-1]["message"]
    assert after.status_code == 200 and after.content == expected_pcm("After the failure.")


@pytest.mark.parametrize("fmt", ["pcm", "wav"])
async def test_post_raw_audio_engine_failure_mid_request_ends_the_body_early(fmt: str) -> None:
    """A raw body cannot carry an error after its 200: it must END BROKEN, never look complete."""
    async with running_app(create_app(lambda: failing_on(2))) as address, httpx.AsyncClient() as client:
        url = f"http://{address}/invocations"
        received = bytearray()
        with pytest.raises(httpx.RemoteProtocolError):  # "incomplete chunked read": not a clean end
            async with client.stream("POST", url, json={"text": THREE, "format": fmt}) as response:
                assert response.status_code == 200
                async for chunk in response.aiter_raw():
                    received += chunk
        after = await client.post(url, json={"text": "After the failure."})
    header = 44 if fmt == "wav" else 0
    assert bytes(received[header:]) == expected_pcm(sentences(THREE)[0])[: len(received) - header]
    assert after.status_code == 200 and after.content == expected_pcm("After the failure.")


@pytest.mark.parametrize("fmt", ["pcm", "wav", "sse"])
async def test_post_engine_failure_before_any_audio_is_a_coded_500(fmt: str) -> None:
    """Nothing synthesized yet: the status line can still say so (never an empty 200)."""
    async with running_app(create_app(lambda: failing_on(1))) as address, httpx.AsyncClient() as client:
        url = f"http://{address}/invocations"
        refused = await client.post(url, json={"text": THREE, "format": fmt, "request_id": "r"})
        after = await client.post(url, json={"text": "After the failure."})
    assert refused.status_code == 500
    assert refused.json() | {"message": ""} == {
        "type": "error",
        "request_id": "r",
        "code": "engine_failed",
        "message": "",
    }
    assert after.status_code == 200 and after.content == expected_pcm("After the failure.")
