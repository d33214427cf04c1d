"""The AgentCore entrypoint: a Strands agent that speaks while it writes, streamed back as SSE.

``app`` serves POST ``/invocations`` (``{prompt, mode: "bidi"|"batch", voice?, speed?, format?}``,
answered as ``text/event-stream`` of the turn's events, architecture §4) and the WebSocket ``/ws`` (the
same turns, :mod:`agentcore_app.ws_turns`). A request with AgentCore's runtime session id continues that
conversation (:mod:`agentcore_app.conversation.turn`). Everything async is created inside the call (the
SDK runs it on its own worker loop); a caller who hangs up ends the turn at once
(:mod:`agentcore_app.hangup`); stalled callers are timed out (:func:`server_settings`); a non-JSON body is
answered with the ``bad_json`` event (:class:`JsonBodyGuard`). Why: architecture §10.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp, RequestContext
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentcore_app.agent.models import ModelSpec, create_model, model_setting, parse_model_spec
from agentcore_app.agent.time_context import time_context
from agentcore_app.agent.tools import load_tools, speech_setting
from agentcore_app.conversation.settings import ConversationSettings, check_session_id
from agentcore_app.conversation.store import AGENT_ID, ConversationStore, TurnBuffer
from agentcore_app.conversation.turn import StoredMemory, remembered_turn
from agentcore_app.errors import AppErrorCode, TurnRefused, answer_for
from agentcore_app.hangup import HangUpWatcher, hangup_of, until_hung_up
from agentcore_app.local_guard import LocalCallerGuard
from agentcore_app.payload import Turn, parse_turn
from agentcore_app.voice_input import Listening, spoken_conversation
from agentcore_app.ws_turns import turn_socket_handler
from kokoro_serving.deadlines import (
    BODY_TIMED_OUT,
    BodyDeadline,
    LayerAnswer,
    ReaderDeadline,
    Refusal,
)
from kokoro_serving.local_callers import header
from kokoro_serving.routes import ROUTE_STATUSES, route_refusal
from strands_kokoro import events
from strands_kokoro.audio_encoding import warm_codecs
from strands_kokoro.errors import CodedError
from strands_kokoro.protocol import DEFAULT_SAMPLE_RATE, DEFAULT_VOICE, sse_event
from strands_kokoro.sessions import check_endpoint

if TYPE_CHECKING:
    from strands import Agent
    from strands.agent.conversation_manager import ConversationManager
    from strands.models.model import Model

    from strands_kokoro.events import Event
    from strands_kokoro.listening import ListeningOptions
    from strands_kokoro.speech import KokoroSpeech

logger = logging.getLogger(__name__)

SPEECH_ENDPOINT_ENV = "STRANDS_KOKORO_SPEECH_ENDPOINT"
# The agent app takes AgentCore's 8080 locally too, so the model server's local default partner is 8081
# (`python -m tts_container --port 8081`). In AWS the CDK stack sets the env to `sagemaker:<endpoint>`.
DEFAULT_SPEECH_ENDPOINT = "ws://127.0.0.1:8081"
MAX_BODY_BYTES = 64 * 1024

SYSTEM_PROMPT = (
    "You are a friendly voice assistant. Your answers are read aloud, so answer in three to five short, "
    "plain sentences. Do not use lists, headings, code or markdown. Before you use a tool, say in a few "
    "words what you are about to check."
)


def refusal(answer: LayerAnswer) -> Refusal:
    """An answer of the app's protocol layer or deadlines: one SSE ``error`` event, like every other
    refusal of it."""
    return Refusal(answer.status, b"text/event-stream", sse_event(events.error(answer.code, answer.message)))


def server_settings() -> dict[str, Any]:
    """The uvicorn settings the app is served with: the deadlines for silent callers."""
    from kokoro_serving.uvicorn_protocol import uvicorn_settings

    return uvicorn_settings(refusal)


def speech_endpoint_setting(explicit: str | None = None) -> str:
    """The speech endpoint in force: explicit, else ``STRANDS_KOKORO_SPEECH_ENDPOINT``, else local 8081."""
    return explicit or os.environ.get(SPEECH_ENDPOINT_ENV) or DEFAULT_SPEECH_ENDPOINT


class JsonBodyGuard:
    """ASGI middleware: a POST /invocations body that is not JSON (or is too big) gets one SSE ``error``.

    Valid bodies are replayed to the app unchanged; later ``receive`` calls go to the real channel so the
    SDK still sees the client disconnect.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/invocations" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        announced = header(scope, b"content-length") or ""
        if announced.isdecimal() and int(announced) > MAX_BODY_BYTES:  # refused before a byte is awaited
            await _send_error(send, AppErrorCode.PAYLOAD_TOO_LARGE, f"body is over {MAX_BODY_BYTES} bytes")
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                await _send_error(
                    send, AppErrorCode.PAYLOAD_TOO_LARGE, f"body is over {MAX_BODY_BYTES} bytes"
                )
                return
            if not message.get("more_body", False):
                break
        try:
            json.loads(body)
        except (UnicodeDecodeError, ValueError, RecursionError):
            await _send_error(send, AppErrorCode.BAD_JSON, "request body is not valid JSON")
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _send_error(send: Send, code: AppErrorCode, message: str) -> None:
    """A refusal before the event stream starts: one SSE ``error`` event, with the code's HTTP status."""
    status = answer_for(CodedError(code, message)).status
    body = sse_event(events.error(code, message))
    headers = [(b"content-type", b"text/event-stream"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def refuse_route(request: Request, exc: Exception) -> Response:
    """An unknown path or method: one SSE ``error`` event (``serving.routes``), ``Allow`` kept."""
    refusal = route_refusal(request, exc)
    body = sse_event(events.error(refusal.code, refusal.message))
    return Response(body, refusal.status, refusal.headers, media_type="text/event-stream")


def create_app(
    *,
    speech_endpoint: str | None = None,
    model: str | Callable[[], Model] | None = None,
    speech_options: dict[str, Any] | None = None,
    tools: Sequence[Any] | None = None,
    conversations: ConversationSettings | ConversationStore | None = None,
    listening: ListeningOptions | None = None,
) -> BedrockAgentCoreApp:
    """Build the AgentCore app. Settings are read now (not per request) so a process serves one config.

    ``model`` is a setting string (see :mod:`agentcore_app.agent.models`) or a factory called once per turn
    (each turn gets a fresh agent; providers are cheap to build, the local weights are loaded once).
    ``speech_options`` are extra ``KokoroSpeech`` arguments for every turn (e.g. ``lexicon``), for
    deployments and benchmarks; they win over the tool filler settings
    (:func:`agentcore_app.agent.tools.speech_setting`). Callers cannot set them per request.
    ``tools``: the agent's tools (default: :func:`agentcore_app.agent.tools.load_tools`, the default set plus
    ``STRANDS_KOKORO_TOOLS``, checked now). ``conversations``: where conversations are kept and how they
    are bounded (default: the ``STRANDS_KOKORO_CONVERSATION*`` settings; ``location=None`` turns them
    off), or a ready store. A request without a runtime session id is always a single turn.
    ``listening``: the turn-taking settings of the spoken conversations on ``/ws`` (``audio_start``).
    A speech endpoint no session can open (``unknown_endpoint_scheme``) fails here too, as a
    :class:`~strands_kokoro.sessions.EndpointError`.
    """
    endpoint = speech_endpoint_setting(speech_endpoint)
    check_endpoint(endpoint)  # a bad scheme fails now, not as every turn's speech_error
    agent_tools = load_tools() if tools is None else list(tools)
    spoken_options = {**speech_setting(), **(speech_options or {})}  # the tool filler settings, then code's
    store = conversation_store(conversations)
    spec: ModelSpec | None = None  # None: a factory of the caller's, not warmed
    new_model: Callable[[], Model]
    if callable(model):
        new_model = model
    else:
        spec = parse_model_spec(model_setting(model))  # a bad setting fails here, not on the first request
        new_model = functools.partial(create_model, spec)
    # Outermost first: a locally bound app refuses cross-site callers before reading any body; the body
    # then has a deadline, is checked for JSON, and once it is in, a hang-up is watched for (a caller
    # that stops reading the response counts as one: the reader deadline sits outside the watcher).
    agentcore = BedrockAgentCoreApp(
        lifespan=_warming(spec),
        middleware=[
            Middleware(LocalCallerGuard),
            Middleware(BodyDeadline, refusal=refusal(BODY_TIMED_OUT)),
            Middleware(ReaderDeadline),
            Middleware(JsonBodyGuard),
            Middleware(HangUpWatcher),
        ],
    )
    for status in ROUTE_STATUSES:  # the SDK's constructor takes no exception_handlers
        agentcore.add_exception_handler(status, refuse_route)
    turns = AgentTurns(agentcore, endpoint, new_model, agent_tools, spoken_options, store, listening)
    agentcore.entrypoint(turns.invoke)
    # The WebSocket: its own reader sees a hang-up (websocket.disconnect) and cancels the turn's task.
    agentcore.websocket(turn_socket_handler(agentcore, turns.spoken, turns.listened))
    return agentcore


def _warming(spec: ModelSpec | None) -> Callable[[BedrockAgentCoreApp], AbstractAsyncContextManager[None]]:
    """The app's lifespan: while it starts, the model's provider is built once (its SDK imported) and
    the embedded model loaded with the system prompt read: otherwise a caller's first turn pays for all
    of it, and whichever mode goes first looks slower. The audio codecs are loaded too, so a first
    turn in Opus or MP3 waits for no library. No remote model is called. Meanwhile ``/ping``
    says ``HealthyBusy`` (the SDK's word for work in progress). ``spec`` None: a factory of the caller's,
    not warmed."""

    @asynccontextmanager
    async def warm_model(agentcore: BedrockAgentCoreApp) -> AsyncIterator[None]:
        async with asyncio.TaskGroup() as tasks:
            warming = tasks.create_task(_warm_up(spec, agentcore)) if spec is not None else None
            codecs = tasks.create_task(_warm_codecs())
            try:
                yield
            finally:
                codecs.cancel()
                if warming is not None:
                    warming.cancel()

    return warm_model


@dataclass(frozen=True, slots=True)
class AgentTurns:
    """How one app runs a turn, with the settings it read once: the speech endpoint, the model, the
    agent's tools, the extra ``KokoroSpeech`` arguments and the conversation store (None: off)."""

    agentcore: BedrockAgentCoreApp
    endpoint: str
    new_model: Callable[[], Model]
    tools: list[Any]
    speech_options: dict[str, Any]
    store: ConversationStore | None
    listening: ListeningOptions | None = None

    async def invoke(
        self, payload: Any, context: RequestContext | None = None
    ) -> AsyncIterator[Mapping[str, Any]]:
        """POST /invocations: one agent turn, its events as SSE (``context.session_id``: the conversation).

        A hang-up cancels the wait for the turn's next event (:func:`~agentcore_app.hangup.until_hung_up`).
        """
        request = None if context is None else context.request
        hangup = None if request is None else hangup_of(request.scope)
        try:
            turn = parse_turn(payload)
        except TurnRefused as refused:
            yield refused.event()
            return
        except Exception as failed:  # a fault of the app's own: coded (the SDK would send str(exc))
            logger.exception("could not read an invocation payload")
            yield events.error(answer_for(failed).code, "the app failed to read this request")
            return
        session_id = None if context is None else context.session_id
        async with aclosing(self.spoken(turn, session_id)) as stream:
            async for event in until_hung_up(stream, hangup):
                yield event

    async def spoken(self, turn: Turn, session_id: str | None) -> AsyncGenerator[Mapping[str, Any]]:
        """One validated turn, spoken in ``turn.mode``: architecture §4 events, for SSE and ``/ws``.

        ``session_id`` (AgentCore's runtime session id) names the conversation the turn belongs to;
        without one the agent answers this prompt alone.
        """
        try:
            if session_id is not None:
                check_session_id(session_id)
        except TurnRefused as refused:
            yield events.error(refused.code, refused.message)
            return
        from strands_kokoro.speech import KokoroSpeech, SpokenTurn

        task_id = self.agentcore.add_async_task("turn", {"mode": turn.mode})
        try:
            speech = KokoroSpeech(
                endpoint=self.endpoint,
                mode=turn.mode,
                voice=turn.voice or DEFAULT_VOICE,
                speed=turn.speed or 1.0,
                audio_format=turn.format,
                **self.speech_options,
            )
            new_agent = functools.partial(self.new_agent, speech)
            said: SpokenTurn | AsyncGenerator[Event, None]
            if session_id is None or self.store is None:
                said = speech.stream(new_agent(), turn.prompt)
            else:
                said = remembered_turn(self.store, session_id, speech, new_agent, turn.prompt)
            async with aclosing(said) as stream:
                async for event in stream:
                    yield event
        except TurnRefused as refused:
            yield events.error(refused.code, refused.message)
        except Exception as failed:
            # The SDK would put str(exc) on the wire; a coded event says what failed, leaking nothing.
            logger.exception("agent turn failed")
            yield events.error(
                answer_for(failed, AppErrorCode.AGENT_FAILED).code, "the agent failed to answer"
            )
        finally:
            self.agentcore.complete_async_task(task_id)

    async def listened(
        self, listening: Listening, session_id: str | None
    ) -> AsyncGenerator[Mapping[str, Any]]:
        """A spoken conversation on ``/ws``: the user's audio in ``listening.inbox``, heard by the library's
        ``KokoroCascade`` (Whisper, the app's model and tools, the app's speech endpoint) under a
        ``BidiAgent``; its events (:func:`~agentcore_app.voice_input.spoken_conversation`). With a
        ``session_id`` and a store, each answer is a turn of that conversation (:class:`StoredMemory`): it
        starts from what the session's turns said, typed or spoken, and is stored as heard."""
        task_id = self.agentcore.add_async_task("listening", {})
        try:
            from strands.bidi import BidiAgent

            from strands_kokoro.listening import KokoroCascade
            from strands_kokoro.speech import KokoroSpeech

            speech = KokoroSpeech(
                endpoint=self.endpoint,
                voice=listening.voice or DEFAULT_VOICE,
                speed=listening.speed or 1.0,
                **{**self.speech_options, "mode": "bidi", "audio_format": "pcm"},
            )
            text_model = self.new_model()
            memory = None
            if session_id is not None and self.store is not None:
                memory = StoredMemory(self.store, session_id, text_model)
            cascade = KokoroCascade(text_model, speech=speech, listening=self.listening, memory=memory)
            agent = BidiAgent(model=cascade, tools=list(self.tools), system_prompt=SYSTEM_PROMPT)
            async with aclosing(spoken_conversation(agent, listening.inbox)) as stream:
                async for event in stream:
                    yield event
        except ImportError:
            logger.exception("the listen extra is missing")
            yield events.error(AppErrorCode.LISTENING_UNAVAILABLE, "this app cannot listen (no listen extra)")
        except Exception as failed:
            logger.exception("a spoken conversation failed")
            code = answer_for(failed, AppErrorCode.AGENT_FAILED).code
            yield events.error(code, "the agent failed to listen")
        finally:
            self.agentcore.complete_async_task(task_id)

    def new_agent(
        self,
        speech: KokoroSpeech,
        session_manager: TurnBuffer | None = None,
        conversation_manager: ConversationManager | None = None,
    ) -> Agent:
        """A fresh agent for one turn, speaking through ``speech`` (and remembering, given a conversation)."""
        from strands import Agent

        return Agent(
            model=self.new_model(),
            system_prompt=SYSTEM_PROMPT,
            tools=self.tools,
            plugins=[time_context()],
            hooks=[speech],
            callback_handler=None,
            agent_id=AGENT_ID,
            session_manager=session_manager,
            conversation_manager=conversation_manager,
        )


async def _warm_up(spec: ModelSpec, agentcore: BedrockAgentCoreApp) -> None:
    """A warm-up that fails says so in one line; the first turn then meets the failure and codes it."""
    from agentcore_app.agent.local_llm import LocalSmolLM2Model

    task_id = agentcore.add_async_task("warm_up", {"model": spec.provider})
    try:
        model = await asyncio.to_thread(create_model, spec)
        if isinstance(model, LocalSmolLM2Model):
            await model.warm_up(SYSTEM_PROMPT)
    except Exception as exc:  # any failure: the turns meet it too, and code it
        logger.warning("the model's warm-up failed (%s); the first turn loads it", type(exc).__name__)
    finally:
        agentcore.complete_async_task(task_id)


async def _warm_codecs() -> None:
    """The listener's compressed formats loaded and set up once (:func:`warm_codecs`), so a first turn
    in Opus or MP3 starts its stream with its first audio; a failure is logged, the turns then meet it."""
    try:
        await asyncio.to_thread(warm_codecs, DEFAULT_SAMPLE_RATE)
    except Exception:
        logger.exception("warming the audio codecs failed")


def conversation_store(
    conversations: ConversationSettings | ConversationStore | None,
) -> ConversationStore | None:
    """The store the app keeps conversations in, or None when they are off (every turn stands alone)."""
    if isinstance(conversations, ConversationStore):
        return conversations
    settings = ConversationSettings.from_env() if conversations is None else conversations
    return None if settings.location is None else ConversationStore(settings)


def __getattr__(name: str) -> Any:
    """``agentcore_app.app:app``: the app built from the environment's settings, on first use.

    Not at import: ``python -m agentcore_app --model local`` imports this module for ``create_app``,
    and a bad ``STRANDS_KOKORO_MODEL`` in the environment must not stop a flag that overrides it.
    """
    if name == "app":
        built = globals()["app"] = create_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
