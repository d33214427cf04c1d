"""One admission path: a request bad in two ways gets the same code on every route.

The real server (``ToneEngine``, a test double, as its engine) over real sockets: each case sends the
same request over the WebSocket session, ``POST /invocations`` and OpenAI's ``POST /v1/audio/speech``,
and every route answers with the code of the check that comes first in
:mod:`tts_container.scheduling.admission` (parse, then voice and language, then the text, then the audio
format, then admission).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from strands_kokoro.protocol import WS_PATH, ErrorCode
from tests.model_server_process import running_app
from tests.tts_container.server_fakes import ToneEngine
from tests.tts_container.server_harness import dumps, open_ws, read_response
from tts_container.app import create_app

pytestmark = pytest.mark.anyio

UNKNOWN_VOICE = "af_nobody"
UNSUPPORTED_LANG = "xx"
NOTHING_TO_SAY = "?!"
SAYABLE = "Hello there."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass(frozen=True)
class Case:
    """A request (the ``synthesize`` fields), the code every route answers it with, and the server."""

    name: str
    fields: dict[str, Any]
    code: str
    full: bool = False  # the server admits no listener: every request it would serve is ``overloaded``
    compressed: bool = True  # the server can encode Ogg Opus (False: only PCM and WAV)
    openai: dict[str, Any] = field(default_factory=dict)  # OpenAI's fields where they differ


CASES = [
    Case(
        "unknown voice and unsupported lang",
        {"voice": UNKNOWN_VOICE, "lang": UNSUPPORTED_LANG},
        "unknown_voice",
    ),
    Case(
        "unsupported lang, nothing to say",
        {"text": NOTHING_TO_SAY, "lang": UNSUPPORTED_LANG},
        "unsupported_lang",
    ),
    Case("unknown voice, nothing to say", {"text": NOTHING_TO_SAY, "voice": UNKNOWN_VOICE}, "unknown_voice"),
    Case("bad speed and unknown voice", {"speed": 9.0, "voice": UNKNOWN_VOICE}, "bad_speed"),
    Case("a full server and an unknown voice", {"voice": UNKNOWN_VOICE}, "unknown_voice", full=True),
    Case("a full server and unsupported lang", {"lang": UNSUPPORTED_LANG}, "unsupported_lang", full=True),
    Case("a full server and nothing to say", {"text": NOTHING_TO_SAY}, "nothing_to_say", full=True),
    Case("a full server", {}, "overloaded", full=True),
    Case(
        "no encoder and an unknown voice",
        {"format": "opus", "voice": UNKNOWN_VOICE},
        "unknown_voice",
        compressed=False,
    ),
    Case(
        "no encoder and nothing to say",
        {"format": "opus", "text": NOTHING_TO_SAY},
        "nothing_to_say",
        compressed=False,
    ),
    Case(
        "no encoder on a full server", {"format": "opus"}, "format_unavailable", compressed=False, full=True
    ),
]


def openai_body(fields: dict[str, Any]) -> dict[str, Any]:
    """The same request in OpenAI's field names (``pcm`` unless a format is asked for)."""
    names = {"text": "input", "lang": "lang_code", "format": "response_format"}
    body = {"input": SAYABLE, "response_format": "pcm"}
    return body | {names.get(name, name): value for name, value in fields.items()}


async def ws_code(address: str, fields: dict[str, Any]) -> str:
    async with open_ws(f"ws://{address}{WS_PATH}") as ws:
        await ws.send(dumps(**({"text": SAYABLE, "request_id": "r1"} | fields)))
        answer = await read_response(ws, timeout_s=30.0)
    assert answer.end is not None and answer.end["type"] == "error", answer.end
    return str(answer.end["code"])


async def post_code(client: httpx.AsyncClient, address: str, fields: dict[str, Any]) -> str:
    response = await client.post(f"http://{address}/invocations", json={"text": SAYABLE} | fields)
    assert response.status_code >= 400, response.status_code
    return str(response.json()["code"])


async def openai_code(client: httpx.AsyncClient, address: str, fields: dict[str, Any]) -> str:
    response = await client.post(f"http://{address}/v1/audio/speech", json=openai_body(fields))
    assert response.status_code >= 400, response.status_code
    return str(response.json()["error"]["code"])


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_a_request_bad_in_two_ways_gets_the_same_code_on_every_route_with_fake_engine(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not case.compressed:
        monkeypatch.setattr(
            "tts_container.scheduling.admission.encoder_available", lambda fmt: fmt in ("pcm", "wav")
        )
    app = create_app(ToneEngine, idle_calibration=False, max_listeners=0 if case.full else None)
    async with running_app(app) as address, httpx.AsyncClient() as client:
        codes = {
            "ws": await ws_code(address, case.fields),
            "invocations": await post_code(client, address, case.fields),
            "openai": await openai_code(client, address, case.fields),
        }
    assert codes == dict.fromkeys(codes, ErrorCode(case.code))
