"""``agent-infra demo --voice-in A.wav [B.wav ...]``: WAV files as the user's microphone on ``/ws``, timed.

The files go out in real time (32 ms frames of 16 kHz s16le, silence between them) after ``audio_start``
(:mod:`agentcore_app.voice_input`), one user turn each; the next starts once the answer has played
(``bidi_response_stop``) or, with ``--interrupt-after SECONDS``, that long after its first audio (a
barge-in). :func:`measure` reads each turn's transcript and times from the events and the client's clock
(:class:`VoiceTurn` says what each time counts). With ``--local`` the stack keeps the app's own model
settings (the embedded model's prompt cache on, as in a conversation).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import statistics
import sys
import time
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcore_app import event_frames
from agentcore_app.local.delivery import Target, TargetError

__all__ = ["add_arguments", "run", "voice_turns"]

RATE = 16_000
FRAME_BYTES = 1024  # 512 samples: 32 ms, the voice activity's frame
FRAME_S = FRAME_BYTES / 2 / RATE
TURN_TIMEOUT_S = 180.0
LOCAL_LISTEN_MODULES = ("faster_whisper", "soxr")  # what the local app needs to listen (the listen extra)
MEASURES = ("voice_to_voice_ms", "end_of_turn_ms", "transcript_ms", "answer_audio_ms", "barge_in_ms")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--voice-in`` and ``--interrupt-after``."""
    parser.add_argument(
        "--voice-in",
        nargs="+",
        type=Path,
        default=None,
        metavar="WAV",
        help="speak to the agent: stream these WAV files in real time as the microphone over /ws, one user "
        "turn each, and time end of speech -> the agent's first audio",
    )
    parser.add_argument(
        "--interrupt-after",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="with --voice-in: start the next file this long after the agent starts answering (a barge-in) "
        "instead of after the answer has played",
    )


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {raw!r}") from None
    if not 0 <= value <= 600:
        raise argparse.ArgumentTypeError(f"seconds between 0 and 600, got {raw}")
    return value


def refusal(args: argparse.Namespace) -> str | None:
    """Why these demo options cannot go with ``--voice-in`` (None: they can)."""
    if getattr(args, "interrupt_after", None) is not None and not getattr(args, "voice_in", None):
        return "--interrupt-after times barge-ins between --voice-in files: give --voice-in"
    if getattr(args, "voice_in", None) and getattr(args, "llm_pace", None) is not None:
        return "--llm-pace paces the bidi/batch comparison; --voice-in keeps the app's own model settings"
    return None


def read_wav(path: Path) -> bytes:
    """``path`` as 16 kHz mono s16le (other rates resampled, channels mixed); ValueError if it is not a
    16-bit PCM WAV."""
    try:
        with wave.open(str(path), "rb") as w:
            if w.getsampwidth() != 2:
                raise ValueError(f"{path}: 16-bit PCM WAV expected, got {8 * w.getsampwidth()}-bit")
            rate, channels, pcm = w.getframerate(), w.getnchannels(), w.readframes(w.getnframes())
    except (OSError, wave.Error, EOFError) as exc:
        raise ValueError(f"{path}: not a readable WAV file ({exc})") from None
    if rate == RATE and channels == 1:
        return pcm
    import numpy as np
    import soxr

    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32).reshape(-1, channels).mean(axis=1) / 32768.0
    resampled = soxr.resample(audio, rate, RATE) if rate != RATE else audio
    return (np.clip(resampled, -1, 1) * 32767).astype("<i2").tobytes()


@dataclass
class VoiceTurn:
    """One file as a user turn: where it went in the microphone's stream and what the app answered.

    - ``transcript``: what the app heard (the user's ``bidi_transcript_block``);
    - ``voice_to_voice_ms``: from the end of the user's speech in the file (its last voiced frame, as the
      app's voice activity found it: ``user_speech`` ``end``) to the agent's first audio arriving here,
      split into ``end_of_turn_ms`` (the silence that ends the turn), ``transcript_ms`` (Whisper's rest)
      and ``answer_audio_ms`` (the text model's first sentence and its first audio);
    - ``barge_in_ms``, for a turn that interrupts: from the start of the user's speech in the file
      (``user_speech`` ``start``) to ``bidi_barge_in`` arriving here. The app sends the answer's audio
      ahead of playback, so its last frame sent is long gone by then; ``bidi_barge_in`` is when a player
      stops playing it: the time until the agent's voice stops.
    """

    file: str
    interrupting: bool
    started_ms: float = 0.0  # input position of the file's first frame
    ended_ms: float = 0.0
    transcript: str | None = None
    answer: str | None = None
    measures: dict[str, float | None] = field(default_factory=dict)

    def recorded(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "transcript": self.transcript,
            "answer": self.answer,
            "interrupting": self.interrupting,
            **{key: self.measures.get(key) for key in MEASURES},
        }


class Microphone:
    """Sends 32 ms frames in real time (silence when no file is queued) and keeps when each input
    position went out."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws
        self._queue: asyncio.Queue[tuple[bytes, VoiceTurn, asyncio.Event]] = asyncio.Queue()
        self._sent_at: list[float] = []  # perf_counter of frame k's sending (input position k * 32 ms)

    def say(self, pcm: bytes, turn: VoiceTurn) -> asyncio.Event:
        done = asyncio.Event()
        self._queue.put_nowait((pcm, turn, done))
        return done

    def wall_at(self, input_ms: float) -> float | None:
        """When input position ``input_ms`` was sent (the end of the frame holding it)."""
        k = min(len(self._sent_at) - 1, int(input_ms / 1000 / FRAME_S))
        return self._sent_at[k] if k >= 0 else None

    @property
    def position_ms(self) -> float:
        return len(self._sent_at) * FRAME_S * 1000

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        silence = bytes(FRAME_BYTES)
        while True:
            if self._queue.empty():
                next_at = await self._frame(silence, next_at)
                continue
            pcm, turn, done = self._queue.get_nowait()
            turn.started_ms = self.position_ms
            pcm += bytes(-len(pcm) % FRAME_BYTES)
            for i in range(0, len(pcm), FRAME_BYTES):
                next_at = await self._frame(pcm[i : i + FRAME_BYTES], next_at)
            turn.ended_ms = self.position_ms
            done.set()

    async def _frame(self, frame: bytes, next_at: float) -> float:
        await self._ws.send(frame)
        self._sent_at.append(time.perf_counter())
        next_at += FRAME_S
        await asyncio.sleep(max(0.0, next_at - asyncio.get_running_loop().time()))
        return next_at


class Timeline:
    """The app's events as they arrive, each with the moment it did."""

    def __init__(self) -> None:
        self.events: list[tuple[float, dict[str, Any]]] = []
        self._changed = asyncio.Condition()

    async def read(self, ws: Any) -> None:
        reader = event_frames.FrameReader()
        async for frame in ws:
            read = reader.feed(frame)
            if read is not None:
                async with self._changed:
                    self.events.append((time.perf_counter(), read.event))
                    self._changed.notify_all()

    async def until(self, after: int, kind: str | tuple[str, ...], **fields: Any) -> int:
        """The index of the first event at or after ``after`` of ``kind`` (or one of them) with ``fields``."""
        kinds = (kind,) if isinstance(kind, str) else kind
        async with self._changed:
            while True:
                for i in range(after, len(self.events)):
                    event = self.events[i][1]
                    if event.get("type") in kinds and all(event.get(k) == v for k, v in fields.items()):
                        return i
                await self._changed.wait()


async def voice_turns(
    agent_url: str, files: list[tuple[str, bytes]], *, interrupt_after: float | None, voice: str | None
) -> list[VoiceTurn]:
    """Speak ``files`` to the app at ``agent_url`` over ``/ws``; the turns, measured."""
    from websockets.asyncio.client import connect

    from agentcore_app.local.ws_client import local_ws_url

    turns = [
        VoiceTurn(name, interrupting=interrupt_after is not None and i > 0)
        for i, (name, _) in enumerate(files)
    ]
    timeline = Timeline()
    speech = {} if voice is None else {"voice": voice}
    async with connect(local_ws_url(agent_url), max_size=None) as ws, asyncio.TaskGroup() as tasks:
        reading = tasks.create_task(timeline.read(ws))
        await ws.send(event_frames.audio_start("voice-in", **speech))
        async with asyncio.timeout(TURN_TIMEOUT_S):
            opened = await timeline.until(0, ("listening_start", "error", "turn_end"), request_id="voice-in")
        if (answer := timeline.events[opened][1])["type"] != "listening_start":
            raise TargetError(
                f"the agent app did not open the microphone: {answer.get('code')}: {answer.get('message')}"
            )
        mic = Microphone(ws)
        sending = tasks.create_task(mic.run())
        cursor = opened
        for i, ((name, pcm), turn) in enumerate(zip(files, turns, strict=True)):
            print(f"voice-in: saying {name}", file=sys.stderr)
            said = mic.say(pcm, turn)
            async with asyncio.timeout(TURN_TIMEOUT_S + len(pcm) / 2 / RATE):
                await said.wait()
                heard = await timeline.until(cursor, "bidi_transcript_block", role="user")
                first_audio = await timeline.until(heard, "audio_chunk")
                if interrupt_after is not None and i + 1 < len(files):
                    await asyncio.sleep(
                        max(0.0, timeline.events[first_audio][0] + interrupt_after - time.perf_counter())
                    )
                    cursor = heard + 1
                else:
                    cursor = await timeline.until(first_audio, "bidi_response_stop") + 1
        await ws.send(event_frames.AUDIO_STOP)
        async with asyncio.timeout(TURN_TIMEOUT_S):
            await timeline.until(cursor, "turn_end", request_id="voice-in")
        sending.cancel()
        reading.cancel()
    for turn in turns:
        measure(turn, timeline, mic)
    return turns


def measure(turn: VoiceTurn, timeline: Timeline, mic: Microphone) -> None:
    """``turn``'s transcript, answer and times, read from the timeline."""
    events = timeline.events
    start_at = next(
        (
            i
            for i, (_, e) in enumerate(events)
            if e.get("type") == "user_speech"
            and e["phase"] == "start"
            and e["input_ms"] >= turn.started_ms - 100
            and e["input_ms"] < turn.ended_ms
        ),
        None,
    )
    if start_at is None:
        return
    heard = next(
        (i for i in range(start_at, len(events)) if _is(events[i][1], "bidi_transcript_block", "user")), None
    )
    if heard is None:
        return
    turn.transcript = events[heard][1]["transcript"]
    ended = max(
        (
            i
            for i in range(start_at, heard)
            if events[i][1].get("type") == "user_speech" and events[i][1]["phase"] == "end"
        ),
        default=None,
    )
    first_audio = next(
        (i for i in range(heard, len(events)) if events[i][1].get("type") == "audio_chunk"), None
    )
    answer = next(
        (i for i in range(heard, len(events)) if _is(events[i][1], "bidi_transcript_block", "assistant")),
        None,
    )
    turn.answer = None if answer is None else events[answer][1]["transcript"]
    if ended is not None and first_audio is not None:
        speech_end = mic.wall_at(events[ended][1]["input_ms"])
        if speech_end is not None:
            turn.measures = {
                "voice_to_voice_ms": _ms(events[first_audio][0] - speech_end),
                "end_of_turn_ms": _ms(events[ended][0] - speech_end),
                "transcript_ms": _ms(events[heard][0] - events[ended][0]),
                "answer_audio_ms": _ms(events[first_audio][0] - events[heard][0]),
            }
    if turn.interrupting:
        barge_in = next(
            (i for i in range(start_at, heard) if events[i][1].get("type") == "bidi_barge_in"), None
        )
        speech_start = mic.wall_at(events[start_at][1]["input_ms"])
        if barge_in is not None and speech_start is not None:
            turn.measures["barge_in_ms"] = _ms(events[barge_in][0] - speech_start)


def _is(event: dict[str, Any], kind: str, role: str) -> bool:
    return event.get("type") == kind and event.get("role") == role


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def table(turns: list[VoiceTurn]) -> str:
    """One row per turn, then the medians."""
    heads = (
        "turn",
        "file",
        "voice_to_voice_ms",
        "end_of_turn_ms",
        "transcript_ms",
        "answer_audio_ms",
        "barge_in_ms",
    )
    rows = [
        [str(i), t.file, *(_fmt(t.measures.get(key)) for key in MEASURES)] for i, t in enumerate(turns, 1)
    ]
    medians = [_median([t.measures.get(key) for t in turns]) for key in MEASURES]
    rows.append(["p50", "", *(_fmt(m) for m in medians)])
    widths = [max(len(h), *(len(r[c]) for r in rows)) for c, h in enumerate(heads)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(heads, widths, strict=True))]
    lines.append("-" * len(lines[0]))
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 1) if known else None


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


@contextlib.asynccontextmanager
async def local_target(args: argparse.Namespace) -> Any:
    """The local stack with the app's own model settings; yields the agent app's URL."""
    from agentcore_app.local.stack import local_stack

    print("starting the local stack (weights, model server, agent app)...", file=sys.stderr)
    async with local_stack(args.out_dir, model=args.model or "local") as stack:
        print(
            f"agent app {stack.agent_url}, speech {stack.speech_endpoint}, model {stack.model}",
            file=sys.stderr,
        )
        yield stack.agent_url


def run(args: argparse.Namespace, target: Target, label: str) -> int:
    """``--voice-in``: speak the files, print the turns and the table, save ``--json``; 0 when every turn
    was heard and answered with audio, 2 when a file or the target cannot be used."""
    if (refused := refusal(args)) is not None:
        print(f"agent-infra demo: {refused}", file=sys.stderr)
        return 2
    try:
        files = [(path.name, read_wav(path)) for path in args.voice_in]
    except ValueError as exc:
        print(f"agent-infra demo: {exc}", file=sys.stderr)
        return 2
    if isinstance(target, str) and not target.startswith(("http://", "https://")):
        print(
            "agent-infra demo: --voice-in speaks to an agent app URL (http://host:port) or --local",
            file=sys.stderr,
        )
        return 2
    missing = [name for name in LOCAL_LISTEN_MODULES if importlib.util.find_spec(name) is None]
    if not isinstance(target, str) and missing:
        print(
            f"agent-infra demo --voice-in needs {', '.join(missing)}: add the 'listen' extra "
            "(uv run --extra demo --extra listen ..., or pip install 'strands-kokoro[demo,listen]')",
            file=sys.stderr,
        )
        return 2
    reached = contextlib.nullcontext(target) if isinstance(target, str) else local_target(args)

    async def spoken() -> list[VoiceTurn]:
        async with reached as url:
            return await voice_turns(url, files, interrupt_after=args.interrupt_after, voice=args.voice)

    failures: list[BaseException] = []
    try:
        turns = asyncio.run(spoken())
    except* TargetError as failed:
        failures = list(failed.exceptions)
    if failures:
        for failure in failures:
            print(f"agent-infra demo: {failure}", file=sys.stderr)
        return 2
    print()
    for i, turn in enumerate(turns, 1):
        print(f"{i}. you ({turn.file}): {turn.transcript!r}")
        print(f"   agent: {turn.answer!r}")
    print()
    print(table(turns))
    if args.json:
        results = {
            "target": label,
            "voice_in": [str(p) for p in args.voice_in],
            "interrupt_after_s": args.interrupt_after,
            "turns": [t.recorded() for t in turns],
            "median": {key: _median([t.measures.get(key) for t in turns]) for key in MEASURES},
            "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "at": time.time(),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"\nnumbers: {args.json}", file=sys.stderr)
    return 0 if all(t.transcript and t.measures.get("voice_to_voice_ms") is not None for t in turns) else 1
