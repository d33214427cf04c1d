"""The model server's Starlette app: the SageMaker container contract (architecture §3).

Why the engine is loaded in the background: SageMaker probes ``/ping`` from the moment the container
starts and the server must answer at once; ``/ping`` says 200 only after the model is loaded AND one
warm-up synthesis ran (the first synthesis pays one-off costs: graph optimisation, G2P model load).
Until then ``/ping`` answers 503 and the other routes answer ``not_ready``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field, replace

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from kokoro_serving.deadlines import (
    BODY_TIMED_OUT,
    BodyDeadline,
    LayerAnswer,
    ReaderDeadline,
    Refusal,
)
from kokoro_serving.routes import ROUTE_STATUSES, route_refusal
from strands_kokoro.audio_encoding import warm_codecs
from strands_kokoro.protocol import (
    DEFAULT_SAMPLE_RATE,
    DEFAULT_VOICE,
    INVOCATIONS_PATH,
    PING_PATH,
    VOICES_PATH,
    WS_PATH,
    ErrorCode,
    ServerError,
    SynthesizeRequest,
    audio_ms,
)
from tts_container.engines.base import Engine, batch_counts
from tts_container.engines.voice_calibration import VoiceCalibrator
from tts_container.reporting.counters import SessionCounters
from tts_container.reporting.metric_lines import LOAD_INTERVAL_S, log_load
from tts_container.reporting.prometheus import CONTENT_TYPE as METRICS_CONTENT_TYPE
from tts_container.reporting.prometheus import ServerMetrics
from tts_container.routes import openai_speech
from tts_container.routes.invocations import error_response, invocations
from tts_container.routes.local_guard import LocalRequestGuard
from tts_container.routes.post_body import model_unavailable
from tts_container.routes.session import Session
from tts_container.scheduling.admission import Admission
from tts_container.scheduling.capacity import Capacity, full_at, listener_share
from tts_container.scheduling.inference import InferencePool
from tts_container.synthesis.synthesizer import Synthesizer
from tts_container.text.g2p import dialect_for
from tts_container.weights.cache import WeightsUnavailable

logger = logging.getLogger(__name__)

WARMUP_TEXT = "Hello there. The model is warm."
PROBE_SHORT = "Ready to speak."
PROBE_LONG = (
    "This sentence is long enough to tell whether the engine starts speaking before it has synthesized "
    "all of it, which it must do to start a long sentence about as soon as a short one."
)
# Rendered once per lane side by side at warm-up: a sentence as long as an agent's (~4 s of audio, four
# windows), so the capacity estimate starts from what such sentences cost (a short one costs more per
# second of audio: the first window and the prosody weigh more).
PROBE_SHARED = (
    "The server is ready, and this sentence tells it how much audio it makes while every lane is busy."
)
# A long sentence starting within this of a short one counts as "about as soon".
STREAMING_RATIO = 2.0
STREAMING_SLACK_MS = 300.0
PROBE_ROUNDS = 3
# Every text a server synthesizes before /ping answers 200, in order (the probes run PROBE_ROUNDS times),
# then, on an engine with more than one lane, PROBE_SHARED once per lane side by side.
WARMUP_TEXTS = (WARMUP_TEXT, *((PROBE_SHORT, PROBE_LONG) * PROBE_ROUNDS))
METRICS_PATH = "/metrics"
# WebSocket code 1013: "try again later".
TRY_AGAIN_LATER = 1013


def refusal(answer: LayerAnswer) -> Refusal:
    """An answer of the server's protocol layer or deadlines: its usual coded error frame, as JSON."""
    frame = ServerError(None, answer.code, answer.message).to_wire().encode("utf-8")
    return Refusal(answer.status, b"application/json", frame)


@dataclass(slots=True)
class ServerState:
    """What the routes share: the synthesizer and the admission once the engine is ready, the counters
    and the metrics."""

    pool: InferencePool
    counters: SessionCounters = field(default_factory=SessionCounters)
    metrics: ServerMetrics = field(init=False)
    synthesizer: Synthesizer | None = None
    admission: Admission | None = None
    load_failed: bool = False

    def __post_init__(self) -> None:
        self.metrics = ServerMetrics(self.pool, self.counters)


def create_app(
    load_engine: Callable[[], Engine],
    *,
    allowed_origins: Iterable[str] = (),
    idle_calibration: bool = True,
    max_listeners: int | None = None,
) -> Starlette:
    """Build the app; ``load_engine`` (blocking) runs on the inference pool after the server is up.

    Engine calls run one at a time, or side by side on an engine with several lanes
    (:class:`~tts_container.scheduling.inference.InferencePool`).
    ``allowed_origins``: browser origins that may open a session (``--allow-origin``); every other
    ``Origin`` is refused (:mod:`tts_container.routes.local_guard`). ``idle_calibration``: fit every voice
    requested for streaming in idle time (:mod:`tts_container.engines.voice_calibration`); off, only the voice
    warm-up fitted streams (what the shared test server uses, so its counters count requests alone).
    ``max_listeners``: admit this many listeners at once instead of the measured capacity's
    (:mod:`tts_container.scheduling.admission`).
    """
    state = ServerState(pool=InferencePool())
    endpoints = Endpoints(state)
    return Starlette(
        exception_handlers={**dict.fromkeys(ROUTE_STATUSES, refuse_route), Exception: internal_error},
        routes=endpoints.routes(),
        middleware=[
            Middleware(LocalRequestGuard, allowed_origins=tuple(allowed_origins)),
            Middleware(BodyDeadline, refusal=refusal(BODY_TIMED_OUT)),
            Middleware(ReaderDeadline),
        ],
        lifespan=_lifespan(state, load_engine, idle_calibration, max_listeners),
    )


class Endpoints:
    """The routes of one server, each a method reading the server's state per call."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    def routes(self) -> list[BaseRoute]:
        state = self.state
        return [
            Route(PING_PATH, self.ping, methods=["GET"]),
            Route("/stats", self.stats, methods=["GET"]),
            Route(METRICS_PATH, self.metrics, methods=["GET"]),
            Route(VOICES_PATH, self.voices, methods=["GET"]),
            Route(INVOCATIONS_PATH, self.post_invocations, methods=["POST"]),
            WebSocketRoute(WS_PATH, self.bidirectional_stream),
            *openai_speech.routes(
                lambda: (state.synthesizer, state.admission, state.counters, state.load_failed)
            ),
        ]

    async def ping(self, _: Request) -> Response:
        state = self.state
        if state.synthesizer is None:
            status = "failed" if state.load_failed else "loading"
            return JSONResponse({"status": status}, status_code=503)
        engine = state.synthesizer.engine
        return JSONResponse({"status": "ok", "engine": engine.name, "variant": engine.variant})

    async def stats(self, _: Request) -> Response:
        """Debug counters: tests use them to see that a disconnect leaks no task or engine work."""
        return JSONResponse(_stats(self.state))

    async def metrics(self, _: Request) -> Response:
        """The Prometheus text exposition (``server_metrics``)."""
        return Response(self.state.metrics.exposition(), media_type=METRICS_CONTENT_TYPE)

    async def voices(self, _: Request) -> Response:
        """Every voice the engine has and the language a request for it is read in without ``lang``."""
        if self.state.synthesizer is None:
            return error_response(*model_unavailable(self.state.load_failed))
        names = sorted(self.state.synthesizer.engine.voices)
        listed = [{"name": name, "lang": dialect_for(None, name)} for name in names]
        return JSONResponse({"default": DEFAULT_VOICE, "voices": listed})

    async def post_invocations(self, request: Request) -> Response:
        state = self.state
        return await invocations(
            request, state.synthesizer, state.admission, state.counters, load_failed=state.load_failed
        )

    async def bidirectional_stream(self, websocket: WebSocket) -> None:
        state = self.state
        if state.synthesizer is None or state.admission is None:
            await websocket.accept()
            await websocket.send_text(ServerError(None, *model_unavailable(state.load_failed)).to_wire())
            await websocket.close(TRY_AGAIN_LATER)
            return
        await Session(websocket, state.synthesizer, state.counters, state.admission).run()


def _lifespan(
    state: ServerState, load_engine: Callable[[], Engine], idle_calibration: bool, max_listeners: int | None
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """While the server runs: the engine loads and warms in the background, and the load line is logged."""

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with asyncio.TaskGroup() as tasks:
            loader = tasks.create_task(_load_and_warm(state, load_engine, idle_calibration, max_listeners))
            load_lines = tasks.create_task(_log_load(state))
            try:
                yield
            finally:
                loader.cancel()
                load_lines.cancel()
        state.pool.shutdown()

    return lifespan


def _stats(state: ServerState) -> dict[str, object]:
    """``/stats``: the sessions, requests and audio counted, the engine's pool, and the admission."""
    pool = state.pool.stats()
    counters = state.counters
    calibrator = state.synthesizer.calibrator if state.synthesizer else None
    return {
        "ready": state.synthesizer is not None,
        "engine": state.synthesizer.engine.name if state.synthesizer else None,
        "engine_variant": state.synthesizer.engine.variant if state.synthesizer else None,
        "sessions_active": counters.active,
        "sessions_opened": counters.opened,
        "requests_completed": counters.requests_completed,
        "requests_cancelled": counters.requests_cancelled,
        "audio_made_ms": round(counters.audio_made_ms, 1),
        "audio_sent_ms": round(counters.audio_sent_ms, 1),
        "error_floods": counters.error_floods,
        "inference_queued": pool.queued,
        "inference_running": pool.running,
        "inference_lanes": state.pool.lanes,
        "inference_completed": pool.completed,
        "engine_busy_s": round(pool.busy_s, 3),
        **_batch_stats(state),
        "asyncio_tasks": len(asyncio.all_tasks()),
        "voices_calibrating": calibrator.pending if calibrator else [],
        "voices_calibrated": calibrator.calibrated if calibrator else [],
        **_admission_stats(state.admission),
    }


def _batch_stats(state: ServerState) -> dict[str, object]:
    """An engine that batches across listeners: its forward passes, the calls they held, the largest."""
    counts = batch_counts(state.synthesizer.engine) if state.synthesizer else None
    if counts is None:
        return {}
    return {
        "engine_batches": counts.batches,
        "engine_batched_items": counts.items,
        "engine_largest_batch": counts.largest,
    }


def _admission_stats(admission: Admission | None) -> dict[str, object]:
    """The admission's view on ``/stats``: listeners speaking, the capacity, answers admitted and refused."""
    if admission is None:
        return {}
    rate = admission.capacity.audio_per_s
    return {
        "listeners_speaking": admission.speaking(),
        "capacity_listeners": admission.limit_now(),
        "capacity_audio_per_s": None if rate is None else round(rate, 3),
        "answers_admitted": admission.admitted,
        "answers_refused": admission.refused,
    }


async def refuse_route(request: Request, exc: Exception) -> Response:
    """An unknown path or method: the server's coded error frame (``serving.routes``), ``Allow`` kept."""
    refusal = route_refusal(request, exc)
    if request.url.path.startswith(openai_speech.PREFIX):  # OpenAI's API answers in OpenAI's shape
        return openai_speech.error_response(refusal.code, refusal.message, headers=refusal.headers)
    response = error_response(refusal.code, refusal.message)
    response.headers.update(refusal.headers)
    return response


async def internal_error(request: Request, exc: Exception) -> Response:
    """A fault of the server's own (Starlette logs its trace): a coded 500, not a bare text one."""
    return error_response(ErrorCode.INTERNAL_ERROR, "the server failed to answer this request")


async def _load_and_warm(
    state: ServerState, load_engine: Callable[[], Engine], idle_calibration: bool, max_listeners: int | None
) -> None:
    try:
        engine = await state.pool.run(load_engine)
        state.pool.lanes = engine.lanes
        capacity = Capacity(share=listener_share(engine.renders_in_windows), full=full_at(engine.lanes))
        synthesizer = Synthesizer(engine, state.pool, capacity=capacity)
        n_bytes = 0
        started = time.perf_counter()
        async for frame in synthesizer.pcm_frames(SynthesizeRequest(WARMUP_TEXT)):
            n_bytes += len(frame)
        elapsed_ms = (time.perf_counter() - started) * 1000
        warm_ms = audio_ms(n_bytes, DEFAULT_SAMPLE_RATE)
        first_audio_ms = await _sentence_first_audio_ms(synthesizer, engine.renders_in_windows)
        if engine.lanes > 1:
            await _side_by_side(synthesizer, engine.lanes)
        await _warm_codecs()
    except WeightsUnavailable as unavailable:  # an operator's problem, said whole: no traceback helps
        logger.error("loading the engine failed; /ping stays 503: %s", unavailable)
        state.load_failed = True
        return
    except Exception:
        logger.exception("loading the engine failed; /ping stays 503")
        state.load_failed = True
        return
    logger.info(
        "engine %s loaded and warm (%d bytes of warm-up audio; a sentence's first audio: %s)",
        engine.name,
        n_bytes,
        "grows with its length" if first_audio_ms is None else f"{first_audio_ms:.0f} ms",
    )
    rtf = elapsed_ms / warm_ms if warm_ms > 0 else None
    warmed = DEFAULT_VOICE if engine.renders_in_windows else None  # warm-up fitted its statistics
    calibrator = VoiceCalibrator(engine, state.pool, warmed=warmed) if idle_calibration else None
    # The capacity estimate starts from the warm-up's own engine calls (timed on the pool's workers).
    state.synthesizer = replace(synthesizer, first_audio_ms=first_audio_ms, rtf=rtf, calibrator=calibrator)
    state.admission = Admission(synthesizer.capacity, report=state.metrics.heard, limit=max_listeners)
    state.metrics.watch(state.admission, engine)
    if calibrator is not None:
        await calibrator.run()  # every other voice requested streams once fitted (in idle time)


async def _warm_codecs() -> None:
    """Every compressed format's codec loaded and set up once (:func:`warm_codecs`), so a request's
    first compressed bytes leave with its first window; one that fails is logged, its format's
    requests then meet the failure themselves."""
    try:
        warmed = await asyncio.to_thread(warm_codecs, DEFAULT_SAMPLE_RATE)
    except Exception:
        logger.exception("warming the audio codecs failed")
        return
    logger.info("audio codecs warm: %s", ", ".join(warmed) or "none (PyAV is not installed)")


async def _log_load(state: ServerState) -> None:
    """The load line (``metrics.log_load``) every ``LOAD_INTERVAL_S`` once the engine is ready, for as
    long as the server runs."""
    while True:
        if (admission := state.admission) is not None:
            log_load(admission.speaking(), admission.limit_now())
        await asyncio.sleep(LOAD_INTERVAL_S)


async def _side_by_side(synthesizer: Synthesizer, lanes: int) -> None:
    """Render :data:`PROBE_SHARED` ``lanes`` times at once, so the capacity estimate starts from the
    engine's throughput with every lane busy (what admits a second listener), not from calls alone; on
    an engine that batches across listeners, its throughput with a full batch."""
    async with asyncio.TaskGroup() as group:
        for _ in range(lanes):
            group.create_task(_drain(synthesizer.pcm_frames(SynthesizeRequest(PROBE_SHARED))))


async def _drain(frames: AsyncGenerator[bytes]) -> None:
    async with contextlib.aclosing(frames):
        async for _ in frames:
            pass


async def _sentence_first_audio_ms(synthesizer: Synthesizer, windowed: bool) -> float | None:
    """How soon a sentence's first audio comes, if that does not depend on its length (None if it does).

    Measured on a short and a long sentence, three times each, alternating (only the long one's first
    frame is synthesized; the fastest of each, since load only ever adds time). An engine that renders
    in ``windowed`` mode streams by construction: its long sentence's time is reported as it is, never
    judged, since a loaded machine can make it look as if it did not stream, and its clients would then
    go back to cutting sentences. An engine that renders
    whole segments counts as streaming only when it is fast enough that the long sentence starts about
    as soon as the short one. A client told so speaks whole sentences instead of cutting them
    (``session_start``).
    """
    firsts: dict[str, list[float]] = {PROBE_SHORT: [], PROBE_LONG: []}
    for _ in range(PROBE_ROUNDS):
        for text, times in firsts.items():
            started = time.perf_counter()
            async with contextlib.aclosing(synthesizer.pcm_frames(SynthesizeRequest(text))) as frames:
                await anext(frames, b"")
            times.append((time.perf_counter() - started) * 1000)
    short, long = (min(times) for times in firsts.values())
    return long if windowed or long <= STREAMING_RATIO * short + STREAMING_SLACK_MS else None
