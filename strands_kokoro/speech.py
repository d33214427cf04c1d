"""``KokoroSpeech``: make any Strands agent speak while it writes.

    speech = KokoroSpeech(endpoint="ws://127.0.0.1:8080")
    agent = Agent(model=..., hooks=[speech], callback_handler=None)
    turn = speech.stream(agent, "Tell me about otters.")
    async for event in turn:
        ...  # architecture §4 dicts: text_delta, audio_chunk, sentence_complete, agent_end, ...
    turn.result  # the agent's AgentResult

A middleware taps the text; a turn's tasks live on the caller's event loop (architecture §9, "The turn").
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextvars import ContextVar
from functools import partial
from typing import Any

from strands.hooks import (
    AfterToolCallEvent,
    AgentInitializedEvent,
    BeforeToolCallEvent,
    HookProvider,
    HookRegistry,
)
from strands.middleware import InvokeModelContext, InvokeModelStage, MiddlewareNext, TypedEvent

from strands_kokoro.audio_encoding import FormatUnavailable, encoder_available
from strands_kokoro.events import Event
from strands_kokoro.protocol import (
    AUDIO_FORMATS,
    DEFAULT_SAMPLE_RATE,
    DEFAULT_VOICE,
    AudioFormatName,
    ProtocolError,
    is_voice_mix,
    parse_lexicon,
    parse_voice,
)
from strands_kokoro.sessions import open_session
from strands_kokoro.speech_options import SPEECH_MODES, SessionFactory, SpeechMode, SpeechOptions
from strands_kokoro.turn.endpoint_rotation import EndpointRing, routes_new_sessions
from strands_kokoro.turn.speech_turn import SpeechTurn

# The turn the current task belongs to, and the KokoroSpeech that runs it. Set in the turn's own task, so
# the agent task (a child) sees it and two turns on two agents sharing one KokoroSpeech never mix their
# text. The owner: an agent tapped by two KokoroSpeech (built with one, spoken with another) must copy
# each token into the turn once, not once per tap.
_current_turn: ContextVar[tuple[KokoroSpeech, SpeechTurn] | None] = ContextVar(
    "kokoro_current_turn", default=None
)


def _running_turn() -> SpeechTurn | None:
    current = _current_turn.get()
    return None if current is None else current[1]


class KokoroSpeech(HookProvider):
    """A Strands ``HookProvider`` that streams an agent's answer to a Kokoro server sentence by sentence.

    ``mode="bidi"`` speaks while the agent writes, over one persistent session: each sentence is sent
    whole the moment it is written (a streaming server's first audio comes after one small window,
    whatever the sentence's length); :class:`~strands_kokoro.pacing.pacer.SpeechPacer` cuts a sentence still
    being written only when the listener would otherwise wait, and the server renders the piece as part
    of its sentence, so the cut is not heard.
    ``mode="batch"`` is the fair baseline: same agent and endpoint, one synthesis after the whole answer.

    ``max_chars`` bounds one request (long sentences are cut at a clause).

    While a tool runs, the text before it is spoken first; if the tool is still running
    ``tool_filler_after_s`` after that audio ran out, ``tool_filler`` is said (``None``: stay silent)
    so a slow tool does not leave the listener wondering. ``reconnect_attempts`` bounds how often a dropped
    session is reopened within a turn, ``reconnect_backoff_s`` the wait before the first reopening.

    ``endpoint`` may be a list (``["ws://a:8080", "ws://b:8080"]``): a turn's session goes to the next one
    when a server cannot be reached or refuses a new answer as ``overloaded`` (full), so a refused answer
    is tried on the others first (:mod:`strands_kokoro.turn.endpoint_rotation`). A refused request is sent
    again within ``overload_retry_s`` seconds from its first refusal, after the wait the server asks for
    (``retry_after_ms``, spread by a little jitter; :mod:`strands_kokoro.turn.overload_retry`); past that,
    one ``speech_error`` (``overloaded``) says speech is off for the turn, and the text answer goes on.
    ``session_factory`` replaces ``open_session(endpoint)`` (tests, custom transports); other keyword
    arguments (``session_options``) go to ``open_session`` (e.g. ``region`` for ``sagemaker:``).

    ``lang``: the language the server reads the answer in; ``None`` (default): the voice's own
    (``ff_siwis`` reads French, ``bf_emma`` British English). ``voice`` may be a mix in Kokoro-FastAPI's
    syntax (``"af_bella(2)+af_sky(1)"``; its form is checked here, its voices by the server).
    ``lexicon``: words to say with the given phonemes (``{"Kokoro": "kˈOkəɹO"}``), sent with every request
    of the session (``docs/pronunciation.md``).

    ``audio_format``: what ``audio_chunk`` events carry: ``"pcm"`` (s16le, the default), ``"opus"`` (one
    Ogg Opus stream per turn, 24 kbit/s) or ``"mp3"`` (32 kbit/s); the compressed ones need PyAV
    (:mod:`strands_kokoro.audio_encoding`). The model server is always asked for PCM: the turn times and
    paces by it, and encodes once, for the listener.
    """

    def __init__(
        self,
        endpoint: str | Sequence[str] = "ws://127.0.0.1:8080",
        *,
        mode: SpeechMode = "bidi",
        voice: str = DEFAULT_VOICE,
        speed: float = 1.0,
        sample_rate: int = DEFAULT_SAMPLE_RATE,
        lang: str | None = None,
        max_chars: int | None = 350,
        tool_filler: str | None = "One moment.",
        tool_filler_after_s: float = 1.0,
        reconnect_attempts: int = 2,
        reconnect_backoff_s: float = 0.25,
        overload_retry_s: float = 5.0,
        audio_format: AudioFormatName = "pcm",
        lexicon: Mapping[str, str] | None = None,
        session_factory: SessionFactory | None = None,
        **session_options: Any,
    ) -> None:
        if mode not in SPEECH_MODES:
            raise ValueError(f"mode must be 'bidi' or 'batch', got {mode!r}")
        if audio_format not in AUDIO_FORMATS:
            raise ValueError(f"audio_format must be one of {', '.join(AUDIO_FORMATS)}, got {audio_format!r}")
        if not encoder_available(audio_format):
            raise FormatUnavailable(audio_format)
        try:
            if is_voice_mix(voice):
                parse_voice(voice)
            words = parse_lexicon(dict(lexicon) if lexicon is not None else None)
        except ProtocolError as exc:
            raise ValueError(exc.message) from None
        self.endpoints = endpoints = _endpoints(endpoint)
        self.endpoint = endpoints[0]  # the preferred one (the single-endpoint attribute, kept)
        self.options = SpeechOptions(
            mode=mode,
            voice=voice,
            speed=speed,
            sample_rate=sample_rate,
            lang=lang,
            max_chars=max_chars,
            tool_filler=tool_filler.strip() if tool_filler and tool_filler.strip() else None,
            tool_filler_after_s=max(0.0, tool_filler_after_s),
            reconnect_attempts=max(0, reconnect_attempts),
            reconnect_backoff_s=reconnect_backoff_s,
            overload_retry_s=max(0.0, overload_retry_s),
            audio_format=audio_format,
            lexicon=words,
        )
        if session_factory is not None:
            self._ring = EndpointRing([session_factory])
        else:
            self._ring = EndpointRing(
                [partial(open_session, e, **session_options) for e in endpoints],
                new_session_reroutes=any(routes_new_sessions(e) for e in endpoints),
            )
        self._tapped: weakref.WeakSet[Any] = weakref.WeakSet()
        self._active: set[SpeechTurn] = set()

    # ------------------------------------------------------------------------------- Strands hooks

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(AgentInitializedEvent, self._on_agent_initialized)
        registry.add_callback(BeforeToolCallEvent, self._before_tool_call)
        registry.add_callback(AfterToolCallEvent, self._after_tool_call)

    def _on_agent_initialized(self, event: AgentInitializedEvent) -> None:
        self.install(event.agent)

    async def _before_tool_call(self, event: BeforeToolCallEvent) -> None:
        turn = _running_turn()
        if turn is not None:
            await turn.wait_flushed()
            turn.tool_started(_tool_use_id(event))

    def _after_tool_call(self, event: AfterToolCallEvent) -> None:
        turn = _running_turn()
        if turn is not None:
            turn.tool_finished(_tool_use_id(event))

    def install(self, agent: Any) -> None:
        """Add the token tap to ``agent`` (done on ``AgentInitializedEvent``; idempotent)."""
        if agent not in self._tapped:
            agent.add_middleware(InvokeModelStage, self._tap)
            self._tapped.add(agent)

    async def _tap(
        self, context: InvokeModelContext, next_fn: MiddlewareNext[InvokeModelContext, TypedEvent]
    ) -> AsyncGenerator[TypedEvent, None]:
        """Pass every model event through untouched; copy text deltas into the current turn (when it is
        this KokoroSpeech's: another's tap on the same agent copies them)."""
        current = _current_turn.get()
        turn = current[1] if current is not None and current[0] is self else None
        if turn is None:
            async for event in next_fn(context):
                yield event
            return
        try:
            async for event in next_fn(context):
                text = event.get("data")
                if isinstance(text, str) and text and not event.get("reasoning"):
                    turn.on_text(text)
                yield event
        finally:
            turn.end_segment()

    # ------------------------------------------------------------------------------------ the API

    def stream(self, agent: Any, prompt: Any, **kwargs: Any) -> SpokenTurn:
        """Run one agent turn: iterate the result for its text and audio events in arrival order."""
        self.install(agent)
        return self.events(agent.stream_async(prompt, **kwargs))

    def events(self, agent_stream: AsyncIterator[Any]) -> SpokenTurn:
        """Speak a turn whose ``agent.stream_async(...)`` the caller created (the agent needs our hooks).

        The agent's own stream events are consumed here; what comes out are architecture §4 dicts, ending with
        ``agent_end``, and the agent's final ``AgentResult`` is the returned turn's ``result``.
        """
        turn = SpeechTurn(
            request_id=uuid.uuid4().hex[:12], options=self.options, endpoints=self._ring.cursor()
        )
        return SpokenTurn(turn, self._speak(turn, agent_stream))

    def speak(self, writer: Callable[[SpeechTurn], AsyncIterator[Any]]) -> SpokenTurn:
        """Speak what ``writer`` writes, for a caller that drives a model itself (no Strands ``Agent``).

        ``writer(turn)`` is iterated as the turn's agent stream; it hands the text to the turn's text
        side (``turn.on_text(delta)``, ``turn.end_segment()`` when a model call ends, ``await
        turn.wait_flushed()`` and ``turn.tool_started(id)`` / ``turn.tool_finished(id)`` around a tool).
        The events are ``events()``'s.
        """
        turn = SpeechTurn(
            request_id=uuid.uuid4().hex[:12], options=self.options, endpoints=self._ring.cursor()
        )
        return SpokenTurn(turn, self._speak(turn, writer(turn)))

    async def _speak(self, turn: SpeechTurn, agent_stream: AsyncIterator[Any]) -> AsyncGenerator[Event, None]:
        runner = asyncio.create_task(self._run(turn, agent_stream), name="kokoro-turn")
        try:
            while (event := await turn.outbox.get()) is not None:
                yield event
            await runner
        finally:
            if not runner.done():
                runner.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await runner

    async def _run(self, turn: SpeechTurn, agent_stream: AsyncIterator[Any]) -> None:
        _current_turn.set((self, turn))  # this task's own context: only the turn's children see it
        self._active.add(turn)
        try:
            await turn.run(agent_stream)
        finally:
            self._active.discard(turn)

    def interrupt(self) -> None:
        """Barge-in: stop speaking now and drop unspoken sentences; the text answer goes on.

        Safe from any thread. Speech stays off for the rest of the turn (the listener spoke over it);
        the next turn speaks again.
        """
        for turn in list(self._active):
            turn.interrupt()


class SpokenTurn:
    """One spoken turn: iterate it (once) for its events; afterwards ``result`` is the agent's result.

    Why an object and not an attribute of ``KokoroSpeech``: one hook object may speak several turns at
    once (two agents, two requests of an app); each turn's result belongs to whoever iterates it.
    ``aclose()`` stops the turn early (``contextlib.aclosing`` works on it).
    """

    def __init__(self, turn: SpeechTurn, events: AsyncGenerator[Event, None]) -> None:
        self._turn = turn
        self._events = events

    def __aiter__(self) -> AsyncGenerator[Event, None]:
        return self._events

    async def aclose(self) -> None:
        await self._events.aclose()

    @property
    def result(self) -> Any:
        """The agent's ``AgentResult`` once the turn ended (None before, or if the agent failed)."""
        return self._turn.result


def _tool_use_id(event: BeforeToolCallEvent | AfterToolCallEvent) -> str:
    return str(event.tool_use.get("toolUseId", ""))


def _endpoints(endpoint: str | Sequence[str]) -> tuple[str, ...]:
    """The endpoints a ``KokoroSpeech`` was given: one, or several to turn to when one refuses; each a
    non-empty string."""
    endpoints = (endpoint,) if isinstance(endpoint, str) else tuple(endpoint)
    if not endpoints or not all(isinstance(e, str) and e.strip() for e in endpoints):
        raise ValueError(f"endpoint must be an endpoint string or a list of them, got {endpoint!r}")
    return endpoints
