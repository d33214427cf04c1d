"""One admission path: the order in which every route checks a request, written once.

A request bad in two ways gets the same code on the WebSocket session, ``POST /invocations`` and
OpenAI's ``POST /v1/audio/speech``, because each route parses it in its own wire form and then hands it
to :func:`enter`, which checks in this order and answers with the first refusal:

1. parse: the route's own (a ``synthesize`` message, an invocation body, OpenAI's body), before this
   path: its ``ProtocolError`` codes come first;
2. the engine: the voice and the language (:meth:`Synthesizer.refusal`), then the text itself
   (:func:`tts_container.speakable.screen`: nothing to say, a script the language cannot read);
3. the audio format the route will send: its encoder must be installed (``format_unavailable``);
4. the route's own room (a session's queue of requests): ``overloaded``;
5. admission: a new answer past the server's capacity is refused ``overloaded`` with a retry time
   (:meth:`Admission.admit`), so a request that could never be served is never told to retry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from strands_kokoro.audio_encoding import EncodedFormat, FormatUnavailable, encoder_available
from strands_kokoro.protocol import AudioFormatName, ErrorCode, ServerError, SynthesizeRequest
from tts_container.speakable import admit

if TYPE_CHECKING:
    from tts_container.admission import Admission
    from tts_container.listener import ListenerClock
    from tts_container.synthesis import Synthesizer

__all__ = ["AudioFormat", "checked", "enter"]


AudioFormat = AudioFormatName | EncodedFormat


def checked(
    synthesizer: Synthesizer, request: SynthesizeRequest, audio_format: AudioFormat
) -> SynthesizeRequest | ServerError:
    """Steps 2 and 3: the request as the engine will speak it, or why it cannot be spoken at all."""
    spoken = admit(synthesizer, request)
    if isinstance(spoken, ServerError):
        return spoken
    if not encoder_available(audio_format):
        unavailable = FormatUnavailable(audio_format)
        return ServerError(request.request_id, ErrorCode.FORMAT_UNAVAILABLE, unavailable.message)
    return spoken


def enter[T](
    synthesizer: Synthesizer,
    admission: Admission,
    listener: ListenerClock,
    request: SynthesizeRequest,
    *,
    audio_format: AudioFormat,
    entry: Callable[[SynthesizeRequest], T],
    room: Callable[[SynthesizeRequest], ServerError | None] | None = None,
) -> T | ServerError:
    """Steps 2 to 5 for a parsed ``request`` of ``listener``: its entry, now one of the listener's open
    requests (made by ``entry`` from the checked request), or the first refusal.

    ``audio_format``: the format the route sends the audio in. ``room``: the route's own limit, if any.
    """
    spoken = checked(synthesizer, request, audio_format)
    if isinstance(spoken, ServerError):
        return spoken
    if room is not None and (full := room(request)) is not None:
        return full
    item = entry(spoken)
    if (refused := admission.admit(listener, item, request.request_id)) is not None:
        return refused
    return item
