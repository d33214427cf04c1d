"""A simulated turn for the pacer's tests: no sleeps, no sockets, deterministic.

:func:`simulate` plays one turn: an LLM writes text at a set rate (token by token, through the real
``IncrementalSentenceChunker``), the pacer decides the requests, a simulated server synthesizes them one
after another at a set real-time factor, and an independent real-time player (not the pacer's own
bookkeeping) measures the stall a listener would hear. The simulated server either streams (a
request's first window of audio comes ``first_audio_ms`` after it starts, the rest when it is done: the
model server's behaviour) or sends a request's audio only once all of it is synthesized (an older
server).
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field

from strands_kokoro.pacing.engine_speed import PRIOR_MS_PER_CHAR
from strands_kokoro.pacing.pacer import Piece, SpeechPacer
from strands_kokoro.text.chunker import IncrementalSentenceChunker, Sentence

# Answers like the benchmark's prompts get from a small LLM (3-5 sentences, clauses of varied length).
ANSWERS = (
    "The sky looks blue because sunlight is scattered by the air. Blue light has a shorter wavelength, "
    "so it bounces around much more than red light does. When you look up, that scattered blue light "
    "reaches your eyes from every direction. At sunset the light travels through more air, and the "
    "sky turns orange and red.",
    "A good morning starts with a glass of water and some stretching. Then take a few minutes to plan "
    "the day ahead. Eat a breakfast with protein and fruit. Finally, step outside for some fresh air "
    "before you start working.",
    "A volcano is an opening in the Earth's crust where molten rock escapes. When pressure builds up "
    "underground, magma rises through cracks and erupts as lava, ash and gas. Over many eruptions the "
    "layers pile up into the mountains we recognise as volcanoes.",
    "Bees collect nectar from flowers with their long tongues. They store it in a special honey "
    "stomach and carry it back to the hive. There, worker bees pass the nectar from mouth to mouth, "
    "adding enzymes that break down the sugars. They spread it into wax cells and fan it with their "
    "wings until most of the water evaporates. Finally they seal each cell with wax to keep the honey.",
    "A moving bicycle stays upright mostly because of how its front wheel steers. When the bike leans, "
    "the front wheel turns into the lean and brings the wheels back under the rider. The rider also "
    "makes small steering corrections without thinking about them. Speed helps too, because these "
    "corrections work better when the wheels are rolling.",
)
_TOKEN = re.compile(r"\S{1,5}\s*|\s+")


def llm_tokens(text: str) -> list[str]:
    """Pieces of up to five characters with their trailing space: about an LLM's token size."""
    return _TOKEN.findall(text)


def words(text: str) -> list[str]:
    return text.split()


FIRST_WINDOW_MS = 300.0  # the streaming server's first window of audio
WINDOW_GROWTH = 1.5  # each next window this much larger (tts_container.engines.windows)


def windows(audio_ms: float) -> list[float]:
    """The audio of each window a streaming server renders a request in."""
    sizes: list[float] = []
    size = FIRST_WINDOW_MS
    while sum(sizes) < audio_ms:
        sizes.append(min(size, audio_ms - sum(sizes)))
        size *= WINDOW_GROWTH
    return sizes


@dataclass
class SimRequest:
    """A request in flight, as the turn's ledger keeps it (what the pacer reads)."""

    piece: Piece
    sent_at: float
    received_ms: float = 0.0

    @property
    def predicted_audio_ms(self) -> float:
        return self.piece.predicted_audio_ms


@dataclass
class SimTurn:
    pieces: list[Piece] = field(default_factory=list)
    sent_at: list[float] = field(default_factory=list)
    sentences: list[Sentence] = field(default_factory=list)
    arrivals: list[tuple[float, float]] = field(default_factory=list)  # (when the listener got it, ms)
    token_times: list[float] = field(default_factory=list)

    @property
    def first_audio_ms(self) -> float:
        return self.arrivals[0][0]

    def stall_ms(self) -> float:
        """A real-time player that starts with the first audio; every moment with nothing to play."""
        play_end: float | None = None
        stalled = 0.0
        for arrival, duration in self.arrivals:
            play_end = arrival if play_end is None else play_end
            stalled += max(0.0, arrival - play_end)
            play_end = max(play_end, arrival) + duration
        return stalled

    def spoken(self) -> str:
        return " ".join(piece.text for piece in self.pieces)


def simulate(
    text: str,
    *,
    rtf: float,
    ms_per_char: float = PRIOR_MS_PER_CHAR,
    chars_per_s: float = 350.0,
    first_token_ms: float = 200.0,
    overhead_ms: float = 30.0,
    streaming: bool = True,
    first_audio_ms: float = 300.0,
) -> SimTurn:
    """One turn on a simulated clock; the engine's audio per character and speed are exact."""
    pacer = SpeechPacer()
    if streaming:
        pacer.speed.advertised(first_audio_ms, rtf)  # what the model server says in session_start
    chunker = IncrementalSentenceChunker(max_chars=350)
    turn = SimTurn()
    queue: list[tuple[float, int, str, object]] = []
    in_flight: list[SimRequest] = []
    order = 0

    def at(when: float, kind: str, payload: object = None) -> None:
        nonlocal order
        heapq.heappush(queue, (when, order, kind, payload))
        order += 1

    t = first_token_ms
    for token in llm_tokens(text):
        at(t, "token", token)
        t += 1000.0 * len(token) / chars_per_s
    at(t, "end")
    server_free = 0.0

    def send_ready(now: float) -> None:
        nonlocal server_free
        while (piece := pacer.next_piece(now, in_flight)) is not None:
            request = SimRequest(piece, now)
            in_flight.append(request)
            turn.pieces.append(piece)
            turn.sent_at.append(now)
            audio = ms_per_char * len(piece.text)
            start = max(now, server_free)
            if streaming:  # each window as soon as it is rendered, the first after the prosody
                ready = start + first_audio_ms - rtf * FIRST_WINDOW_MS
                for size in windows(audio):
                    ready += rtf * size
                    at(ready, "audio", (request, size))
                server_free = max(ready, start + first_audio_ms)
                first_at = start + first_audio_ms
            else:
                server_free = first_at = start + overhead_ms + rtf * audio
                at(server_free, "audio", (request, audio))
            at(server_free, "done", (request, audio, first_at - start))

    while queue:
        now, _, kind, payload = heapq.heappop(queue)
        if kind == "token":
            assert isinstance(payload, str)
            turn.token_times.append(now)
            sentences = chunker.feed(payload)
            turn.sentences += sentences
            pacer.write(sentences, chunker.pending(), now)
        elif kind == "end":
            sentences = chunker.flush()
            turn.sentences += sentences
            pacer.write(sentences, chunker.pending(), now)
        elif kind == "audio":
            request, audio = payload  # type: ignore[misc]
            request.received_ms += audio
            pacer.audio(audio, now)
            turn.arrivals.append((now, audio))
        else:
            request, audio, first = payload  # type: ignore[misc]
            in_flight.remove(request)
            chars = len(request.piece.text)
            pacer.completed(
                chars=chars, audio_ms=audio, first_audio_ms=first, sent_at=request.sent_at, now=now
            )
        send_ready(now)
    assert not pacer.unsent and not in_flight
    return turn


def feed_all(pacer: SpeechPacer, text: str) -> None:
    chunker = IncrementalSentenceChunker()
    pacer.write([*chunker.feed(text), *chunker.flush()], chunker.pending(), 0.0)
