"""One spoken answer of the cascade: the text model's stream, its tools, its speech, and its barge-in.

:class:`SpokenAnswer` writes with the text model (any Strands ``Model``), speaks the text through a
:class:`~strands_kokoro.speech.KokoroSpeech` turn, and turns what comes back into Strands' bidi events:
``bidi_response_start``, ``bidi_audio_*``, the assistant's ``bidi_transcript_*`` (the words as the
listener hears them, :mod:`~strands_kokoro.listening.playout`), ``bidi_tool_use_blocks`` when the model
asks for tools (their results come back through :meth:`SpokenAnswer.tool_results`), and
``bidi_response_stop`` once the listener has heard it all. :meth:`SpokenAnswer.barge_in` stops it at
once: ``bidi_barge_in`` goes out, no audio after it, the model and the speech are cancelled, and
:attr:`SpokenAnswer.messages` keeps what the listener heard.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Any

from strands.bidi.types.events import (
    BidiAudioDeltaEvent,
    BidiAudioStartEvent,
    BidiAudioStopEvent,
    BidiBargeInEvent,
    BidiResponseStartEvent,
    BidiResponseStopEvent,
    BidiToolUseBlocksEvent,
    BidiTranscriptDeltaEvent,
    BidiTranscriptStartEvent,
    BidiTranscriptStopEvent,
)
from strands.event_loop.streaming import process_stream
from strands.models.model import Model
from strands.types.content import ContentBlock, Message, Messages
from strands.types.tools import ToolResult, ToolSpec, ToolUse

from strands_kokoro.listening.events import SpeechErrorEvent
from strands_kokoro.listening.playout import Playout, joined, rest_of
from strands_kokoro.speech import KokoroSpeech
from strands_kokoro.turn.speech_turn import SpeechTurn

logger = logging.getLogger(__name__)

__all__ = ["SpokenAnswer"]

CAPTION_POLL_S = 0.05  # how often the assistant transcript looks at the listener's clock


class SpokenAnswer:
    """One answer to ``history`` (which ends with the user's turn); ``emit`` takes its events in order.

    ``text``: speak this text as the answer instead of calling the model (no tools): the rest of a falsely
    interrupted answer (:meth:`unheard`).
    """

    def __init__(
        self,
        *,
        model: Model,
        speech: KokoroSpeech,
        history: Messages,
        system_prompt: str | None,
        tool_specs: list[ToolSpec],
        emit: Callable[[Any], None],
        text: str | None = None,
    ) -> None:
        self._model = model
        self._given_text = text
        self._speech = speech
        self._history = list(history)
        self._system_prompt = system_prompt
        self._tool_specs = tool_specs
        self._emit = emit
        self.response_id = uuid.uuid4().hex[:12]
        self._audio_id = f"audio-{self.response_id}"
        self._transcript_id = f"transcript-{self.response_id}"
        self.playout = Playout()
        self.messages: Messages = []  # what the answer adds to the conversation (set when it ends)
        self._written: Messages = []  # the model's messages (tool exchanges, the last text) as written
        self._text: list[str] = []  # the answer's text as written, every model call
        self._heard: list[str] = []  # the assistant transcript given out
        self._tool_wait: asyncio.Future[list[ToolResult]] | None = None
        self._tool_ids: set[str] = set()
        self.barged_in = False
        self.barge_in_at: float | None = None
        self._speech_failed = False
        self._audio_started = False
        self._speaking: asyncio.Task[None] | None = None
        self._captions: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------------------ from outside

    def waits_for_tools(self, ids: set[str]) -> bool:
        """Are these the tool results this answer waits for?"""
        return self._tool_wait is not None and not self._tool_wait.done() and ids == self._tool_ids

    def tool_results(self, results: list[ToolResult]) -> None:
        """The results of the tools the answer asked for (``bidi_tool_use_blocks``)."""
        if self._tool_wait is not None and not self._tool_wait.done():
            self._tool_wait.set_result(results)

    def unheard(self) -> str:
        """What the model wrote that the listener did not hear, from the first word not heard; empty when
        the answer asked for tools (it is not resumed) or all of it was heard."""
        if self._tool_ids:
            return ""
        said = [word for piece in self._heard for word in piece.split()]
        return rest_of("".join(self._text), said)

    def barge_in(self) -> None:
        """The user speaks over the answer: no audio after this; the model and the speech stop."""
        if self.barged_in:
            return
        self.barged_in = True
        self.barge_in_at = self.playout.last_audio_at
        self._caption()  # what was heard up to now, before the clock runs on
        self._emit(BidiBargeInEvent())
        for task in (self._speaking, self._captions):
            if task is not None:
                task.cancel()

    # ------------------------------------------------------------------------------------ the run

    async def run(self) -> None:
        """Speak the answer to its end (or its barge-in); ``messages`` then holds what it adds."""
        self._emit(BidiResponseStartEvent(self.response_id))
        self._emit(BidiTranscriptStartEvent("assistant", self._transcript_id))
        try:
            async with asyncio.TaskGroup() as tasks:
                self._speaking = tasks.create_task(self._speak(), name="cascade-speak")
                self._captions = tasks.create_task(self._follow(), name="cascade-captions")
                if self.barged_in:  # barged in before the tasks existed
                    self._speaking.cancel()
                    self._captions.cancel()
        finally:
            if not self.barged_in:
                self._caption(everything=True)
            if self._speech_failed and not self._heard:
                self._give("".join(self._text).strip())  # nothing spoken: the written answer stands
            self._emit(BidiTranscriptStopEvent("assistant", self._transcript_id))
            if self._audio_started:
                self._emit(BidiAudioStopEvent(self._audio_id))
            self._emit(BidiResponseStopEvent(self.response_id))
            self.messages = self._added()

    async def _speak(self) -> None:
        spoken = self._speech.speak(self._write)
        async with contextlib.aclosing(spoken):
            async for event in spoken:
                self._on_speech(event)

    async def _follow(self) -> None:
        """The assistant transcript, word by word as the listener hears them, until all audio played."""
        while True:
            self._caption()
            if self._speaking is not None and self._speaking.done() and self.playout.queued_ms() <= 0:
                return
            await asyncio.sleep(CAPTION_POLL_S)

    def _caption(self, *, everything: bool = False) -> None:
        self._give(self.playout.heard(everything=everything))

    def _give(self, text: str) -> None:
        if text:
            delta = f" {text}" if self._heard and (text[0].isalnum() or text[0] in "\"'(") else text
            self._heard.append(text)
            self._emit(BidiTranscriptDeltaEvent(delta, "assistant", self._transcript_id))

    def _on_speech(self, event: Any) -> None:
        """One event of the speech turn, as bidi events (audio) or listener-clock facts."""
        kind = event["type"]
        if kind == "audio_chunk":
            if self.barged_in:
                return
            pcm = base64.b64decode(event["audio"])
            rate = event["sample_rate"]
            if not self._audio_started:
                self._audio_started = True
                self._emit(BidiAudioStartEvent(self._audio_id))
            self._emit(BidiAudioDeltaEvent(event["audio"], "pcm", rate, 1, self._audio_id))
            self.playout.audio(event["sentence"], len(pcm) / 2 / rate * 1000.0)
        elif kind == "word_timings":
            self.playout.words(event["sentence"], [(w["text"], w["end_ms"]) for w in event["words"]])
        elif kind == "sentence_complete":
            self.playout.completed(event["sentence"], event["text"], filler=event["filler"])
        elif kind == "text_delta":
            self._text.append(event["text"])
        elif kind in ("speech_error", "error"):
            self._speech_failed = self._speech_failed or kind == "speech_error"
            self._emit(SpeechErrorEvent(event["code"], event["message"]))

    # ------------------------------------------------------------------------- the text model

    async def _write(self, turn: SpeechTurn) -> AsyncGenerator[Any, None]:
        """The model's calls until it answers without tools; each call's text goes to the turn."""
        if self._given_text is not None:
            self._text.append(self._given_text)
            turn.on_text(self._given_text)
            turn.end_segment()
            yield {}
            self._written.append({"role": "assistant", "content": [{"text": self._given_text}]})
            return
        while True:
            message: Message | None = None
            stop_reason = "end_turn"
            chunks = self._model.stream(
                [*self._history, *self._written], self._tool_specs or None, self._system_prompt
            )
            async for event in process_stream(chunks):
                if "stop" in event:
                    stop_reason, message = event["stop"][0], event["stop"][1]
                elif isinstance(text := event.get("data"), str) and text and not event.get("reasoning"):
                    turn.on_text(text)
            turn.end_segment()
            yield {}
            if message is None:
                return
            uses: list[ToolUse] = [c["toolUse"] for c in message["content"] if "toolUse" in c]
            self._written.append(message)
            if stop_reason != "tool_use" or not uses:
                return
            await turn.wait_flushed()  # the text before the tools is spoken first
            for use in uses:
                turn.tool_started(use["toolUseId"])
            self._tool_ids = {use["toolUseId"] for use in uses}
            self._tool_wait = asyncio.get_running_loop().create_future()
            self._emit(BidiToolUseBlocksEvent(uses))
            results = await self._tool_wait
            for use in uses:
                turn.tool_finished(use["toolUseId"])
            content: list[ContentBlock] = [{"toolResult": result} for result in results]
            self._written.append({"role": "user", "content": content})

    def _added(self) -> Messages:
        """What the answer adds to the conversation: its tool exchanges, then the text the listener
        heard (as written when it played whole; cut where the barge-in cut it). It ends with the
        assistant's words, or is empty."""
        exchanges = self._written
        if exchanges and exchanges[-1]["role"] == "assistant" and not _tool_uses(exchanges[-1]):
            exchanges = exchanges[:-1]  # the last text: below, as heard
        if exchanges and exchanges[-1]["role"] == "assistant":
            exchanges = exchanges[:-1]  # tools asked for and never answered (barged in while they ran)
        added: Messages = []
        for message in exchanges:
            if self.barged_in and message["role"] == "assistant":
                message = {"role": "assistant", "content": _tool_uses(message)}
            added.append(message)
        if self.barged_in:
            heard = joined(self._heard)
        else:
            last = self._written[-1] if self._written else None
            heard = "".join(c.get("text", "") for c in last["content"]) if last is not None else ""
            heard = heard.strip() if last is not None and not _tool_uses(last) else ""
        if heard:
            added.append({"role": "assistant", "content": [{"text": heard}]})
        while added and added[-1]["role"] == "user":  # tools whose answer nobody heard: not kept, as a
            del added[-2:]  # remembered turn ends with what the listener heard (roles alternate)
        return added


def _tool_uses(message: Message) -> list[ContentBlock]:
    return [c for c in message["content"] if "toolUse" in c]
