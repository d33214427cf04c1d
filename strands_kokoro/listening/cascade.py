"""``KokoroCascade``: a Strands ``BidiModel`` made of a text model, speech-to-text and a Kokoro server:
``BidiAgent(model=KokoroCascade(text_model, endpoint=...), tools=[...])`` with Strands' ``AudioIO`` talks.

The user's audio (16 kHz mono s16le ``AudioDelta``) goes through voice activity, turn-taking and Whisper
(:mod:`~strands_kokoro.listening.turn_taking`, :mod:`~strands_kokoro.listening.speech_to_text`) to one
:class:`~strands_kokoro.listening.answer.SpokenAnswer` per user turn; a ``BidiMessage`` of text is a
typed turn, one of tool results answers the current answer's tools. The history is kept by a
:mod:`~strands_kokoro.listening.memory`. Everything runs in one task group (``start`` opens it, ``stop``
ends it); built on strands-agents 1.62's ``strands.bidi`` (the ``listen`` extra pins that minor).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

from strands.bidi.models import AudioConfig, BidiModel
from strands.bidi.types import AudioDelta, BidiMessage
from strands.bidi.types.events import (
    BidiConnectionStartEvent,
    BidiTranscriptDeltaEvent,
    BidiTranscriptStartEvent,
    BidiTranscriptStopEvent,
)
from strands.models.model import Model
from strands.types.content import ContentBlock, Message, Messages
from strands.types.tools import ToolResult, ToolResultBlock, ToolSpec

from strands_kokoro.errors import ListeningErrorCode
from strands_kokoro.listening.answer import SpokenAnswer
from strands_kokoro.listening.events import ListeningErrorEvent, UserSpeechEvent
from strands_kokoro.listening.memory import ConversationInMemory, ConversationMemory, KeptHistory
from strands_kokoro.listening.options import INPUT_SAMPLE_RATE, ListeningOptions
from strands_kokoro.listening.playout import joined
from strands_kokoro.listening.speech_to_text import WhisperTranscriber, holds_no_words
from strands_kokoro.listening.turn_taking import Signal, UtteranceCollector
from strands_kokoro.listening.voice_activity import FRAME_SAMPLES, SileroVoiceActivity
from strands_kokoro.speech import KokoroSpeech

logger = logging.getLogger(__name__)

__all__ = ["KokoroCascade"]

_CLOSED = object()


class _Resume:
    """A turn that is no user's: go on with ``answer``, which speech without words cut."""

    def __init__(self, answer: SpokenAnswer) -> None:
        self.answer = answer


FRAME_MS = FRAME_SAMPLES / INPUT_SAMPLE_RATE * 1000.0


class KokoroCascade(BidiModel):
    """A bidi model for ``BidiAgent``: voice activity → Whisper → ``text_model`` → Kokoro (see module).

    ``speech``: the ``KokoroSpeech`` that speaks the answers (PCM only); without it one is made for
    ``endpoint`` with ``speech_options`` (voice, speed, ...). ``listening``: the turn-taking settings.
    ``transcriber``: the speech-to-text (Whisper-base, English, by default). Speech that barged in but
    holds no words (a hum) is no turn: the answer it cut goes on from the first word the listener did
    not hear (``ListeningOptions.resume_false_interruption``). A text model with a
    ``warm_up(system_prompt)`` (the embedded SmolLM2) reads the system prompt at ``start``. ``memory``:
    where the conversation is kept between answers (by default in the process, from ``start``'s
    ``messages``; a given memory's history is the conversation and ``start``'s ``messages`` are not read).
    """

    def __init__(
        self,
        text_model: Model,
        *,
        endpoint: str = "ws://127.0.0.1:8080",
        speech: KokoroSpeech | None = None,
        listening: ListeningOptions | None = None,
        transcriber: WhisperTranscriber | None = None,
        memory: ConversationMemory | None = None,
        model_id: str = "kokoro-cascade",
        **speech_options: Any,
    ) -> None:
        self.text_model = text_model
        self.speech = speech if speech is not None else KokoroSpeech(endpoint, **speech_options)
        if self.speech.options.audio_format != "pcm" or self.speech.options.mode != "bidi":
            raise ValueError("KokoroCascade speaks PCM in bidi mode (the listener's clock is PCM's)")
        self.listening = listening if listening is not None else ListeningOptions()
        self.transcriber = transcriber if transcriber is not None else WhisperTranscriber()
        self.memory = memory
        self.config: dict[str, Any] = {"model_id": model_id}
        self._runner: asyncio.Task[None] | None = None
        self._events: asyncio.Queue[Any] = asyncio.Queue()
        self._audio: asyncio.Queue[bytes] = asyncio.Queue()
        self._turns: asyncio.Queue[str | _Resume] = asyncio.Queue()
        self._answer: SpokenAnswer | None = None
        self._tasks: asyncio.TaskGroup | None = None

    # --------------------------------------------------------------------------- BidiModel API

    def get_config(self) -> dict[str, Any]:
        return self.config

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_audio_config(self) -> AudioConfig:
        """Input: 16 kHz mono PCM; output: the speech's rate (24 kHz by default), mono PCM."""
        return {
            "input": {"sample_rate": INPUT_SAMPLE_RATE, "channels": 1, "format": "pcm"},
            "output": {"sample_rate": self.speech.options.sample_rate, "channels": 1, "format": "pcm"},
        }

    async def start(
        self,
        system_prompt: str | None = None,
        tools: list[ToolSpec] | None = None,
        messages: Messages | None = None,
        **kwargs: Any,
    ) -> None:
        if self._runner is not None:
            raise RuntimeError("the cascade is already started: stop it first")
        self._system_prompt = system_prompt
        self._tool_specs = list(tools or [])
        self.messages: Messages = [] if self.memory is not None else text_history(messages or [])
        self._memory = self.memory if self.memory is not None else ConversationInMemory(self.messages)
        self._unanswered: list[str] = []  # the user's words since the last answer the listener heard
        self._last_said: Message | None = None  # the last message an answer kept (a resume goes on from it)
        self._events = asyncio.Queue()
        self._audio = asyncio.Queue()
        self._turns = asyncio.Queue()
        self._buffered_ms = 0.0
        self._overrun = False
        self._answer = None
        self._cut: SpokenAnswer | None = None  # the answer the user's speech last cut, until its words come
        self._vad = await asyncio.to_thread(SileroVoiceActivity)
        self._collector = UtteranceCollector(self.listening, frame_ms=FRAME_MS)
        self._early: tuple[float, asyncio.Task[str | None]] | None = None
        async with asyncio.TaskGroup() as loading:
            loading.create_task(self.transcriber.load())
            warm_up = getattr(self.text_model, "warm_up", None)  # the embedded model reads the prompt now
            if callable(warm_up):
                loading.create_task(warm_up(system_prompt))
        self._connection_id = uuid.uuid4().hex[:12]
        self._runner = asyncio.create_task(self._run(), name="kokoro-cascade")
        self._events.put_nowait(BidiConnectionStartEvent(self._connection_id, self.config["model_id"]))

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner
        self._events.put_nowait(_CLOSED)

    async def receive(self) -> Any:  # AsyncIterable[BidiOutputEvent]
        while (event := await self._events.get()) is not _CLOSED:
            if isinstance(event, BaseException):
                raise event
            yield event

    async def send(self, content: AudioDelta | BidiMessage) -> None:
        if self._runner is None:
            raise RuntimeError("the cascade is not started")
        if isinstance(content, AudioDelta):
            self._take_audio(content)
        elif isinstance(content, BidiMessage):
            self._take_message(content)
        else:
            self._refuse(
                ListeningErrorCode.UNSUPPORTED_INPUT,
                f"the cascade takes audio or a message, not {type(content).__name__}",
            )

    # ------------------------------------------------------------------------------- input

    def _refuse(self, code: ListeningErrorCode, message: str) -> None:
        logger.info("cascade input refused: %s: %s", code, message)
        self._events.put_nowait(ListeningErrorEvent(code, message))

    def _take_audio(self, delta: AudioDelta) -> None:
        pcm = delta.source.get("bytes") if isinstance(delta.source, dict) else None
        if delta.format != "pcm":
            self._refuse(
                ListeningErrorCode.UNSUPPORTED_AUDIO, f"audio must be 16 kHz s16le PCM, got {delta.format!r}"
            )
            return
        if not isinstance(pcm, bytes | bytearray) or len(pcm) % 2:
            self._refuse(ListeningErrorCode.NOT_AUDIO, "audio bytes must be whole s16le samples")
            return
        ms = len(pcm) / 2 / INPUT_SAMPLE_RATE * 1000.0
        if self._buffered_ms + ms > self.listening.max_buffered_ms:
            if not self._overrun:
                self._overrun = True
                self._refuse(
                    ListeningErrorCode.AUDIO_OVERRUN,
                    f"more than {self.listening.max_buffered_ms:g} ms of audio waits to be read: newer audio "
                    "is dropped until it catches up (send it in real time)",
                )
            return
        self._overrun = False
        self._buffered_ms += ms
        self._audio.put_nowait(bytes(pcm))

    def _take_message(self, message: BidiMessage) -> None:
        blocks = message.content
        results = [b for b in blocks if isinstance(b, ToolResultBlock)]
        if results:
            answer = self._answer
            tool_results: list[ToolResult] = [dict(b.to_dict()["toolResult"]) for b in results]  # type: ignore[misc]
            if answer is not None and answer.waits_for_tools({r["toolUseId"] for r in tool_results}):
                answer.tool_results(tool_results)
            else:
                self._refuse(ListeningErrorCode.UNSUPPORTED_INPUT, "tool results that no answer waits for")
            return
        text = " ".join(str(b.to_dict().get("text", "")) for b in blocks).strip()
        if not text:
            self._refuse(ListeningErrorCode.UNSUPPORTED_INPUT, "the cascade takes text messages (no images)")
            return
        self._turns.put_nowait(text)

    # --------------------------------------------------------------------------------- the run

    async def _run(self) -> None:
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                tasks.create_task(self._listen(), name="cascade-listen")
                tasks.create_task(self._answer_turns(), name="cascade-answers")
        except Exception as exc:
            logger.exception("the cascade stopped on a fault")
            self._events.put_nowait(exc)
        finally:
            self._tasks = None

    async def _listen(self) -> None:
        """Read the user's audio as it comes: voice activity, turn-taking, barge-in, utterances."""
        while True:
            pcm = await self._audio.get()
            while not self._audio.empty():
                pcm += self._audio.get_nowait()
            self._buffered_ms = max(0.0, self._buffered_ms - len(pcm) / 2 / INPUT_SAMPLE_RATE * 1000.0)
            for frame, probability in await self._vad.frames(pcm):
                for signal in self._collector.feed(frame, probability):
                    self._on_signal(signal)

    def _on_signal(self, signal: Signal) -> None:
        answer = self._answer
        listening = answer is None or answer.barged_in  # the user's speech can be a turn
        if signal.kind == "speech":
            self._events.put_nowait(UserSpeechEvent("start", signal.at_ms))
        elif signal.kind == "interruption":
            if answer is not None and not answer.barged_in:
                answer.barge_in()
                self._cut = answer
        elif signal.kind == "pause":
            if listening:  # the transcription starts while the end-of-turn silence runs on
                assert self._tasks is not None
                reading = self._tasks.create_task(self._read(signal.audio), name="cascade-transcribe-early")
                self._early = (signal.speech_end_ms, reading)
        elif signal.kind == "too_long":
            self._refuse(
                ListeningErrorCode.UTTERANCE_TOO_LONG,
                f"an utterance is transcribed up to {self.listening.max_utterance_ms / 1000:g} s: the turn "
                "ends there and what follows is the next one",
            )
        elif signal.kind == "utterance":
            early, self._early = self._early, None
            cut, self._cut = self._cut, None
            self._events.put_nowait(UserSpeechEvent("end", signal.speech_end_ms))
            if not listening:
                return  # said over the answer, too short to stop it (a backchannel): not a turn
            assert self._tasks is not None
            if early is not None and early[0] == signal.speech_end_ms:
                reading = early[1]  # no voiced frame since the pause: its transcription is the turn's
            else:
                reading = self._tasks.create_task(self._read(signal.audio), name="cascade-transcribe")
            self._tasks.create_task(self._user_turn(reading, cut), name="cascade-user-turn")

    async def _read(self, pcm: bytes) -> str | None:
        """The words in ``pcm``; None when the transcription failed."""
        try:
            return await self.transcriber.transcribe(pcm)
        except Exception as exc:
            logger.warning("transcription failed: %s: %s", type(exc).__name__, exc)
            return None

    async def _user_turn(self, reading: asyncio.Task[str | None], cut: SpokenAnswer | None) -> None:
        """The utterance's words as the user's turn; none (a hum, a noise): the answer it cut goes on."""
        text = await reading
        if text is None:
            self._refuse(ListeningErrorCode.TRANSCRIPTION_FAILED, "the utterance could not be transcribed")
            return
        if holds_no_words(text):  # speech with no words in it (a hum, a breath): not a turn
            if cut is not None and self.listening.resume_false_interruption:
                self._turns.put_nowait(_Resume(cut))
            return
        content_id = f"user-{uuid.uuid4().hex[:12]}"
        self._events.put_nowait(BidiTranscriptStartEvent("user", content_id))
        self._events.put_nowait(BidiTranscriptDeltaEvent(text, "user", content_id))
        self._events.put_nowait(BidiTranscriptStopEvent("user", content_id))
        self._turns.put_nowait(text)

    async def _answer_turns(self) -> None:
        """One answer at a time, to each user turn in order; a new turn barges in on the answer."""
        while True:
            turn = await self._turns.get()
            if isinstance(turn, _Resume):
                if not self._turns.empty():
                    continue  # the user spoke since: nothing to go on with
                await self._respond(resuming=turn.answer)
            else:
                self._unanswered.append(turn)
                if self._turns.empty():  # else a newer turn is already waiting: answer both at once
                    await self._respond()

    async def _respond(self, *, resuming: SpokenAnswer | None = None) -> None:
        """Answer the user's unanswered words (or go on with the falsely interrupted ``resuming``), with
        the conversation held in its memory while the answer runs."""
        async with contextlib.AsyncExitStack() as held:
            try:
                kept = await held.enter_async_context(self._memory.answering())
            except Exception as exc:
                logger.warning("the conversation's memory is unavailable: %s: %s", type(exc).__name__, exc)
                self._refuse(
                    ListeningErrorCode.MEMORY_UNAVAILABLE,
                    "the conversation's memory cannot be used now: this answer goes on from the history "
                    "heard here and is not kept",
                )
                kept = KeptHistory(list(self.messages))
            history = list(kept.messages)
            resumed = ""
            if resuming is not None:
                resumed = resuming.unheard()
                went_on = bool(resuming.messages) and (not history or history[-1] != self._last_said)
                if not resumed or went_on:
                    return  # all of it was heard, or the conversation went on elsewhere since
            for words in self._unanswered:
                history = with_user_turn(history, words)
            answer = SpokenAnswer(
                model=self.text_model,
                speech=self.speech,
                history=history,
                system_prompt=self._system_prompt,
                tool_specs=self._tool_specs,
                emit=self._events.put_nowait,
                text=resumed or None,
            )
            self._answer = answer
            answering = asyncio.create_task(answer.run(), name="cascade-answer")
            try:
                await self._until_done_or_new_turn(answering, answer)
            finally:
                if not answering.done():
                    answering.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await answering
                self._answer = None
                if answer.messages:  # the listener heard some of it: the user's words are answered
                    self._unanswered.clear()
                    kept.messages = with_answer(history, answer.messages)
                    self._last_said = kept.messages[-1]
                self.messages = kept.messages

    async def _until_done_or_new_turn(self, answering: asyncio.Task[None], answer: SpokenAnswer) -> None:
        """Wait for the answer; a typed turn arriving meanwhile barges in on it (a spoken one already
        did, by voice) and the answer ends before the next one starts."""
        while not answering.done():
            waiting = asyncio.ensure_future(self._turns.get())
            try:
                done, _ = await asyncio.wait({answering, waiting}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not waiting.done():  # the answer ended, or this wait was cancelled: no orphan getter
                    waiting.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await waiting
            if waiting in done and not waiting.cancelled():
                answer.barge_in()
                self._turns.put_nowait(waiting.result())  # back at the head: nothing else is queued
                await asyncio.wait({answering})


def text_history(messages: Messages) -> Messages:
    """The agent's history as a text model reads it: text, tool uses and results; the bidi loop's
    placeholders for a dispatched tool and its metadata left out; one message per speaker in a row."""
    out: Messages = []
    for message in messages:
        metadata: Any = message.get("metadata") or {}
        bidi = (metadata.get("custom") or {}).get("bidi") or {}
        if bidi.get("kind") == "tool_dispatch":
            continue
        content: list[ContentBlock] = [
            block for block in message["content"] if {"text", "toolUse", "toolResult"} & block.keys()
        ]
        content = [b for b in content if "text" not in b or str(b["text"]).strip()]
        if not content:
            continue
        if out and out[-1]["role"] == message["role"]:
            out[-1] = {"role": message["role"], "content": [*out[-1]["content"], *content]}
        else:
            out.append({"role": message["role"], "content": content})
    return out


def with_answer(messages: Messages, added: Messages) -> Messages:
    """``messages`` and what an answer added; a resumed answer's text joins the heard part it goes on
    from (one assistant message for the whole answer as heard)."""
    if (
        messages
        and added
        and messages[-1]["role"] == added[0]["role"] == "assistant"
        and all("text" in block for block in [*messages[-1]["content"], *added[0]["content"]])
    ):
        text = joined([str(b["text"]) for b in [*messages[-1]["content"], *added[0]["content"]]])
        return [*messages[:-1], {"role": "assistant", "content": [{"text": text}]}, *added[1:]]
    return [*messages, *added]


def with_user_turn(messages: Messages, text: str) -> Messages:
    """``messages`` and the user's next words (joined to a user message that ends them: two turns in a
    row, the first never answered)."""
    turn: Message = {"role": "user", "content": [{"text": text}]}
    if (
        messages
        and messages[-1]["role"] == "user"
        and not any("toolResult" in block for block in messages[-1]["content"])
    ):
        return [*messages[:-1], {"role": "user", "content": [*messages[-1]["content"], {"text": text}]}]
    return [*messages, turn]
