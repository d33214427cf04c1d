"""The client's messages: ``synthesize``, ``cancel`` and ``close`` on a session, and a POST's body.

Each is a typed dataclass built with ``to_wire()`` (or ``to_body()`` for a POST); reading them on the
server is :mod:`strands_kokoro.protocol.client_parsing`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strands_kokoro.protocol.audio_formats import DEFAULT_SAMPLE_RATE, AudioFormatName, InvocationFormat
from strands_kokoro.protocol.json_wire import JsonMessage, json_text
from strands_kokoro.protocol.limits import DEFAULT_VOICE


@dataclass(frozen=True, slots=True)
class SynthesizeRequest(JsonMessage):
    """One text to speak. ``request_id`` is chosen by the client so audio can be matched to it; the server
    assigns one when it is left out.

    ``previous_text`` / ``next_text``: words spoken just before / after ``text`` in the same sentence, by
    other requests (the names ElevenLabs uses for the same idea). They are not spoken by this request;
    the server renders ``text`` as part of that sentence, so a sentence cut into several requests sounds
    as if spoken whole: no pause, lengthened word or falling pitch at the cut. Fields added after the
    first release: older servers ignore them, older clients never send them.

    ``lang``: the G2P to read ``text`` with; ``None`` (not sent): the voice's language (see
    ``DEFAULT_LANG``). Older clients always sent one, ``en-us`` unless told otherwise.

    ``format``: the audio the request's binary frames carry (``pcm``, ``opus``: one Ogg Opus stream per
    request, ``mp3``). Sent only when not ``pcm``; an older server ignores it and sends PCM, which its
    ``synthesis_start`` says (``format: "pcm_s16le"``), so a client reads the format from there.

    ``voice`` may be a mix of voices (:func:`parse_voice`). ``lexicon``: words to say with the given
    phonemes (:func:`parse_lexicon`), as if each were written ``[word](/phonemes/)`` in ``text``. Sent only
    when not empty; an older server ignores it.
    """

    text: str
    request_id: str | None = None
    voice: str = DEFAULT_VOICE
    speed: float = 1.0
    sample_rate: int = DEFAULT_SAMPLE_RATE
    lang: str | None = None
    previous_text: str | None = None
    next_text: str | None = None
    format: AudioFormatName = "pcm"
    lexicon: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"type": "synthesize", "text": self.text}
        if self.request_id is not None:
            body["request_id"] = self.request_id
        body |= {
            "voice": self.voice,
            "speed": self.speed,
            "sample_rate": self.sample_rate,
        }
        if self.lang is not None:
            body["lang"] = self.lang
        if self.previous_text:
            body["previous_text"] = self.previous_text
        if self.next_text:
            body["next_text"] = self.next_text
        if self.format != "pcm":
            body["format"] = self.format
        if self.lexicon:
            body["lexicon"] = dict(self.lexicon)
        return body


@dataclass(frozen=True, slots=True)
class Cancel(JsonMessage):
    """Barge-in: drop queued requests, stop the one in flight at its next segment; always answered with
    one :class:`Cancelled`."""

    def to_dict(self) -> dict[str, Any]:
        return {"type": "cancel"}


@dataclass(frozen=True, slots=True)
class Close(JsonMessage):
    """The only client message that ends a session: the requests already queued are spoken, then the
    server closes. After it the server acts on one message only, ``cancel`` (answered; the queue is then
    dropped and the session still ends), and a disconnect stops the queued work at once."""

    def to_dict(self) -> dict[str, Any]:
        return {"type": "close"}


ClientMessage = SynthesizeRequest | Cancel | Close


@dataclass(frozen=True, slots=True)
class Invocation:
    """POST /invocations: one whole text, its audio streamed back in ``format``."""

    request: SynthesizeRequest
    format: InvocationFormat = "pcm"

    def to_body(self) -> bytes:
        body = self.request.to_dict()
        body.pop("format", None)  # the body's own format names the audio (a POST has one)
        return json_text(body | {"format": self.format}).encode("utf-8")
