"""Where the agent's text is cut into speech requests, so the listener hears it soon and without gaps.

Why sentences alone are not enough (DESIGN §5): on a 2-core CPU Kokoro synthesizes at ~0.6× real time,
while a local LLM writes ~10× faster than speech. A short first phrase starts the audio in about a
second, but when the next request is a whole sentence, its 3-5 s of synthesis outlasts the phrase's
1-2 s of audio and the listener hears a gap, every time. On a GPU it is the other way round: synthesis
is ~50× faster than speech and whole sentences are best (prosody is best whole).

So :class:`SpeechPacer` decides each cut from three things the turn knows:

- the text written so far: whole sentences (from the chunker) and the settled part of the sentence
  being written;
- the audio the listener has buffered: audio received minus real-time playback since the first byte
  (the same simulated player as the benchmarks' stall measure);
- the engine's measured speed (:class:`~strands_kokoro.engine_speed.EngineSpeed`): a running real-time
  factor (synthesis time / audio time) from the requests this session completed, and a running
  audio-per-character rate that predicts a request's audio from its length.

The rules:

- the first request is a natural short phrase: the first clause or sentence if it ends within 3-5
  words, else the first :data:`FIRST_PHRASE_WORDS` words (a sentence of one or two words, "Sure!",
  takes the words after it along). It never waits for more than five words;
- every later request is sized so that its predicted synthesis (queued behind what is in flight) ends
  before the buffered audio (including what the requests in flight will add) runs out. It is cut at a
  clause mark where one fits, else between words, never shorter than :data:`MIN_WORDS` words (a
  shorter sentence goes whole), and never across a sentence end. At most two requests are in flight
  (one synthesizing, one queued), so each decision is made as late as possible, on the newest
  measurements, and the server never idles while text is waiting;
- each request adds about ``1/RTF`` times its own synthesis time to the buffer, so requests grow back
  to whole sentences within a few requests; with a fast engine (RTF ≪ 1) every request after the
  first phrase is a whole sentence, as without a pacer;
- ``policy="latency"`` (default) starts as soon as possible, even when the engine is slower than real
  time (then gaps cannot be avoided); ``policy="smooth"`` sends whole sentences and holds the start of
  playback (:meth:`SpeechPacer.may_start_playback`) until the predicted schedule of the text written so
  far has no stall: a later start for an even listen, for engines with RTF ≥ 1 (a loaded laptop).

The pacer is plain, synchronous and deterministic: every method takes ``now`` (milliseconds on any
clock), so the unit tests drive it over a simulated clock; :class:`~strands_kokoro.speech_turn.SpeechTurn`
feeds it the real one.
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass, replace
from typing import Literal

from strands_kokoro.engine_speed import EngineSpeed

__all__ = ["PacingPolicy", "Piece", "SpeechPacer"]

PacingPolicy = Literal["latency", "smooth"]
PACING_POLICIES: tuple[str, ...] = ("latency", "smooth")

FIRST_PHRASE_MIN_WORDS = 3
FIRST_PHRASE_MAX_WORDS = 5
FIRST_PHRASE_WORDS = 4
MIN_WORDS = 3
# Requests in flight: one being synthesized and one queued behind it, so the server never waits for the
# client between requests, and every other decision waits for the newest measurement.
MAX_IN_FLIGHT = 2
# Before the first measurement the engine's speed is a guess: one request at a time until it is known.
MAX_IN_FLIGHT_UNMEASURED = 1
# When the text must be handed over at once (a tool is about to run): still below the server's queue
# limit (``protocol.MAX_QUEUED_REQUESTS``), so a well-behaved client is never refused.
MAX_IN_FLIGHT_URGENT = 16
# The synthesis time a request may always take, even with nothing buffered: a fast engine (a GPU) then
# still speaks whole sentences after a pause of the LLM's, where a slow one gets a short restart phrase.
RESTART_SYNTHESIS_MS = 300.0
# A clause mark is preferred to a word cut if it keeps at least this share of what the budget allows.
CLAUSE_SHARE = 0.5
# Keep this much text before the oldest unsent character when compacting the text buffer.
_COMPACT_CHARS = 4096

_TOKEN = re.compile(r"\S+")
_WORDLIKE = re.compile(r"\w")
_CLAUSE_END = (",", ";", ":", "—", "–", ")")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Between words, where a speaker would not pause: a piece that ends on one of these ("... wavelengths
# of" | "light ...") sounds broken off; one that ends just before a clause opener ("... blue" |
# "because ...") sounds like a clause. English only: other languages simply never match.
_WEAK_ENDINGS = _words("""
    a an the of to in on at by for with from into onto about over under between through during without
    within and or but nor so that which who whom whose when where while if as than is are was were be
    been am do does did has have had will would can could shall should may might must not no my your
    his her its our their this these those very more most such some any each every it i we you they he
    she them us me him""")
_CLAUSE_OPENERS = _words("""
    and but or nor so yet because although though while whereas when whenever where which who whom
    whose that if unless until since after before than""")
_WEAK_ENDINGS |= _CLAUSE_OPENERS  # "... purr because" | "they need ..." is broken off too
_BARE = re.compile(r"[^\w']+")


@dataclass(frozen=True, slots=True)
class Piece:
    """One request's text, where it lies in the turn's text, and what the pacer predicted for it."""

    id: int
    text: str
    start: int
    end: int
    predicted_audio_ms: float
    # The audio the listener is expected to have left when this piece's audio arrives (None: the first).
    predicted_buffer_ms: float | None
    whole_sentence: bool


@dataclass(slots=True)
class _InFlight:
    piece: Piece
    sent_at: float | None = None  # None: handed to the turn, not yet on the wire
    received_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class _Group:
    """A word with the punctuation around it, as offsets into the text."""

    start: int
    end: int
    clause: bool  # ends at a clause mark, or just before a word that opens a clause (a good place to cut)
    sentence_end: bool  # ends a sentence (the chunker said so)
    weak: bool  # ends on a word a speaker would not pause after (an article, a preposition...)


class SpeechPacer:
    """Cuts one turn's speakable text into requests, from the text, the listener's buffer and the engine."""

    def __init__(self, *, policy: PacingPolicy = "latency", speed: EngineSpeed | None = None) -> None:
        if policy not in PACING_POLICIES:
            raise ValueError(f"policy must be 'latency' or 'smooth', got {policy!r}")
        self.policy = policy
        self.speed = speed or EngineSpeed()
        self._text = ""
        self._base = 0  # absolute offset of _text[0]
        self._end = 0  # absolute offset of the end of the text written so far
        self._segment_start = 0  # where the chunker's current segment began (its offsets count from here)
        self._settled = 0  # text before this will get no new sentence end
        self._sentence_cursor = 0  # where the chunker's next sentence is searched from
        self._sentence_ends: deque[int] = deque()
        self._segment_ends: set[int] = set()  # sentence ends where a model call ended
        self._final = 0  # text before this belongs to an ended segment: every sentence end is known
        self._sent = 0  # text before this was handed out in pieces
        self._next_id = 0
        self._in_flight: dict[int, _InFlight] = {}
        self._last_complete_at: float | None = None
        self._play_end: float | None = None  # when the audio received so far will have finished playing
        self.stall_ms = 0.0  # gaps the simulated listener has had so far

    # ------------------------------------------------------------------------------------ text side

    def write(self, text: str, sentences: list[str], settled: int | None) -> None:
        """Text the chunker was fed, the sentences it completed, and its ``settled`` offset (None: all)."""
        self._text += text
        self._end += len(text)
        for sentence in sentences:
            self._locate(sentence)
        self._settled = self._end if settled is None else max(self._settled, self._segment_start + settled)

    def end_segment(self) -> None:
        """The chunker was flushed: all text so far is settled and its last sentence is complete."""
        self._settled = self._final = self._end
        if self._text[self._sentence_cursor - self._base :].strip():
            self._sentence_ends.append(self._end)
        if self._sentence_ends:
            self._segment_ends.add(self._sentence_ends[-1])
        self._sentence_cursor = self._segment_start = self._end

    def _locate(self, sentence: str) -> None:
        """Find a chunker sentence in the text: it is the next verbatim substring after the last one."""
        at = self._text.find(sentence, self._sentence_cursor - self._base)
        # Not found cannot happen under the chunker's contract; then the sentence ends with the text.
        end = self._end if at < 0 else self._base + at + len(sentence)
        self._sentence_ends.append(end)
        self._sentence_cursor = end

    @property
    def unsent(self) -> bool:
        """Is there text that still has to be sent (spaces aside)?"""
        return bool(self._text[self._sent - self._base :].strip())

    def drop_all(self) -> None:
        """Barge-in or failure: forget the text not yet sent and the requests in flight."""
        self._sent = self._end
        self._sentence_ends.clear()
        self._segment_ends.clear()
        self._in_flight.clear()

    # ------------------------------------------------------------------------------- session side

    def sent(self, piece_id: int | None, now: float) -> None:
        """The piece went on the wire (again, after a reconnect: its audio starts over)."""
        if piece_id is not None and (flight := self._in_flight.get(piece_id)) is not None:
            flight.sent_at = now
            flight.received_ms = 0.0

    def audio(
        self, piece_id: int | None, audio_ms: float, now: float, *, playing: bool = True
    ) -> float | None:
        """Audio of a piece arrived and (``playing``) went to the listener.

        Returns the audio the listener had left when it came (ms; negative: it came after a gap that
        long; None: nothing had played yet, or it is held back for a ``smooth`` start).
        """
        if piece_id is not None and (flight := self._in_flight.get(piece_id)) is not None:
            flight.received_ms += audio_ms
        if not playing:
            return None
        buffered = None if self._play_end is None else self._play_end - now
        if self._play_end is None or self._play_end < now:
            if self._play_end is not None:
                self.stall_ms += now - self._play_end
            self._play_end = now
        self._play_end += audio_ms
        return buffered

    def start_playback(self, held_ms: float, now: float) -> None:
        """``smooth``: playback starts now with the audio that was held back."""
        self._play_end = now + held_ms

    def completed(self, piece_id: int | None, audio_ms: float, now: float) -> None:
        """A request's ``synthesis_complete`` arrived: measure the engine on it if it was a piece (a
        request of the turn's own, a tool filler, still kept the server busy until now)."""
        flight = self._in_flight.pop(piece_id, None) if piece_id is not None else None
        if flight is not None and flight.sent_at is not None:
            started = flight.sent_at
            if self._last_complete_at is not None:
                started = max(started, self._last_complete_at)
            self.speed.observe(
                chars=len(flight.piece.text), audio_ms=audio_ms, service_ms=max(0.0, now - started)
            )
        self._last_complete_at = now

    def failed(self, piece_id: int | None) -> None:
        """The piece will bring no (more) audio: refused, failed, or dropped by a barge-in."""
        if piece_id is not None:
            self._in_flight.pop(piece_id, None)

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    @property
    def play_end_ms(self) -> float | None:
        """When the audio received so far will have finished playing (None: nothing played yet)."""
        return self._play_end

    # ----------------------------------------------------------------------------------- decisions

    def next_piece(self, now: float, *, urgent: bool = False) -> Piece | None:
        """The next request to send now, or None to wait (for text, or for a request to complete).

        ``urgent``: hand over every settled sentence now (a tool is about to run; the text before it
        must be spoken before it), still sized by the schedule and below the server's queue limit.
        """
        limit = MAX_IN_FLIGHT_URGENT if urgent else self._in_flight_limit()
        if len(self._in_flight) >= limit or not self.unsent:
            return None
        self._skip_spaces()
        cut = self._next_cut(now, urgent) if self._next_id else self._first_cut()
        if cut is None:
            return None
        end, whole = cut
        return self._hand_out(end, whole, now)

    def _in_flight_limit(self) -> int:
        return MAX_IN_FLIGHT if self.speed.rtf is not None else MAX_IN_FLIGHT_UNMEASURED

    def _skip_spaces(self) -> None:
        rest = self._text[self._sent - self._base :]
        self._sent += len(rest) - len(rest.lstrip())
        while self._sentence_ends and self._sentence_ends[0] <= self._sent:
            self._segment_ends.discard(self._sentence_ends.popleft())

    def _region(self) -> tuple[int, bool] | None:
        """The text the next piece is cut from: (where it ends, whether that is a sentence end).

        Normally up to the next sentence end. What is left of a sentence after a cut may be a tail too
        short to be a piece of its own (fewer than MIN_WORDS words): it joins the next sentence,
        unless a model call ended there (the text before a tool is spoken before it). A sentence still
        being written is available up to the chunker's settled text.
        """
        for end in self._sentence_ends:
            if end in self._segment_ends or len(self._groups(end, complete=True)) >= MIN_WORDS:
                return end, True
        if self._settled > self._sent:
            return self._settled, False
        return None

    def _groups(self, end: int, complete: bool) -> list[_Group]:
        """Words (with their punctuation) from the unsent start up to ``end``.

        In text still being written, the last token may be a word cut mid-way: only tokens followed by
        whitespace count.
        """
        region = self._text[self._sent - self._base : end - self._base]
        sentence_ends = set(self._sentence_ends)
        groups: list[_Group] = []
        words: list[str] = []
        for m in _TOKEN.finditer(region):
            if not complete and m.end() == len(region):
                break  # may continue in the next fragment
            start, stop = self._sent + m.start(), self._sent + m.end()
            token = m.group()
            word = _BARE.sub("", token).lower()
            if groups and not _WORDLIKE.search(token):  # a lone dash or quote belongs to the word before
                start = groups.pop().start
                word = words.pop()
            if groups and word in _CLAUSE_OPENERS and not groups[-1].clause:
                groups[-1] = replace(groups[-1], clause=True)
            groups.append(
                _Group(start, stop, token.endswith(_CLAUSE_END), stop in sentence_ends, word in _WEAK_ENDINGS)
            )
            words.append(word)
        return groups

    def _first_cut(self) -> tuple[int, bool] | None:
        """The first phrase: the first clause or sentence ending within 3-5 words, else 4 words.

        A sentence shorter than that ("Sure!") joins the words after it; a sentence that could not
        leave three words after such a cut goes whole.
        """
        region = self._region()
        if region is None:
            return None
        end, complete = region
        groups = self._groups(end, complete)
        cuttable = len(groups) - MIN_WORDS if complete else len(groups)
        if complete and cuttable < FIRST_PHRASE_WORDS:
            return end, True
        if not complete and len(groups) < FIRST_PHRASE_MAX_WORDS:
            return None  # a clause may still end within five words
        options = groups[FIRST_PHRASE_MIN_WORDS - 1 : min(FIRST_PHRASE_MAX_WORDS, cuttable)]
        for group in options:
            if group.clause or group.sentence_end:
                return group.end, group.sentence_end
        # No clause: four words, or the nearest count that does not end on a word like "of" or "the".
        by_preference = sorted(options, key=lambda g: abs(groups.index(g) + 1 - FIRST_PHRASE_WORDS))
        best = next((g for g in by_preference if not g.weak), groups[FIRST_PHRASE_WORDS - 1])
        return best.end, False

    def _next_cut(self, now: float, urgent: bool) -> tuple[int, bool] | None:
        """The longest piece the budget allows, at the best place: a sentence end, a clause, a word."""
        region = self._region()
        if region is None:
            return None
        end, complete = region
        groups = self._groups(end, complete)
        if not groups:
            return None
        budget = self._budget_chars(now)
        whole = len(self._text[self._sent - self._base : end - self._base].rstrip())
        if whole <= budget:
            # All of it fits: a sentence goes whole; text still being written may yet grow into one.
            return (end, True) if complete else None
        cuts = self._cuts(groups, complete)
        if not cuts:
            return (end, True) if complete else None
        fitting = [(group, leaves_tail) for group, leaves_tail in cuts if group.end - self._sent <= budget]
        clean = [group for group, leaves_tail in fitting if not leaves_tail]
        if clean:
            # A clause if one keeps enough of what the budget allows, else the longest piece that does
            # not end on a word like "of" or "the".
            enough = CLAUSE_SHARE * (clean[-1].end - self._sent)
            clauses = [g for g in clean if g.clause and g.end - self._sent >= enough]
            strong = [g for g in clean if not g.weak and g.end - self._sent >= enough]
            return (clauses or strong or clean)[-1].end, False
        if fitting:
            return fitting[-1][0].end, False  # its short tail joins the next sentence
        return cuts[0][0].end, False  # even the shortest piece overruns: the shortest arrives first

    def _cuts(self, groups: list[_Group], complete: bool) -> list[tuple[_Group, bool]]:
        """Where a piece of at least MIN_WORDS may end, and whether it leaves a short tail behind.

        A tail is what remains of the sentence when that is fewer than MIN_WORDS words; in text still
        being written the rest is unknown and counts as long enough.
        """
        cuts: list[tuple[_Group, bool]] = []
        for index in range(MIN_WORDS - 1, len(groups) - (1 if complete else 0)):
            rest = 0
            for later in groups[index + 1 :]:
                rest += 1
                if later.sentence_end:
                    break
            else:
                rest = MIN_WORDS if not complete else rest
            sentence_ends_here = groups[index].sentence_end
            cuts.append((groups[index], not sentence_ends_here and rest < MIN_WORDS))
        return cuts

    def _budget_chars(self, now: float) -> float:
        """How much text the next request may carry so its audio arrives before the listener runs dry."""
        if self.policy == "smooth":
            return math.inf  # whole sentences: the start of playback waits for the schedule instead
        free_at, play_end = self._schedule(now)
        window = 0.0 if play_end is None else play_end - max(now, free_at)
        audio_ms = self.speed.audio_for_synthesis_ms(max(window, RESTART_SYNTHESIS_MS))
        return audio_ms / self.speed.ms_per_char

    def _schedule(self, now: float, *, margin: bool = True) -> tuple[float, float | None]:
        """Predicted (when the server is free, when the listener's audio runs out) for what is in flight."""
        play_end = self._play_end if self._play_end is not None and self._play_end >= now else None
        free_at = now
        for finish, remaining in self._predicted_arrivals(now, margin=margin):
            free_at = finish
            play_end = (finish if play_end is None else max(play_end, finish)) + remaining
        return free_at, play_end

    def _predicted_arrivals(self, now: float, *, margin: bool = True) -> list[tuple[float, float]]:
        """(predicted finish, audio still to come) of each request in flight, in the server's order.

        The first one is being synthesized since it was sent or since the one before it completed; a
        request that is late is predicted to finish now. Each later one starts when the one before ends.
        """
        free_at = -math.inf if self._last_complete_at is None else self._last_complete_at
        arrivals = []
        for index, flight in enumerate(self._in_flight.values()):
            started = max(now if flight.sent_at is None else flight.sent_at, free_at)
            free_at = started + self.speed.synthesis_ms(flight.piece.predicted_audio_ms, margin=margin)
            if index == 0:
                free_at = max(free_at, now)
            arrivals.append((free_at, max(0.0, flight.piece.predicted_audio_ms - flight.received_ms)))
        return arrivals

    def _hand_out(self, end: int, whole: bool, now: float) -> Piece:
        text = self._text[self._sent - self._base : end - self._base].strip()
        predicted_audio = self.speed.predict_audio_ms(len(text))
        # Reported as the expected outcome (no planning margin), to compare with what happens.
        free_at, play_end = self._schedule(now, margin=False)
        arrival = max(now, free_at) + self.speed.synthesis_ms(predicted_audio, margin=False)
        buffer = None if play_end is None else play_end - arrival
        piece = Piece(self._next_id, text, self._sent, end, predicted_audio, buffer, whole)
        self._next_id += 1
        self._in_flight[piece.id] = _InFlight(piece)
        self._sent = end
        self._compact()
        return piece

    def _compact(self) -> None:
        keep_from = min(self._sent, self._sentence_cursor) - _COMPACT_CHARS
        if keep_from > self._base:
            self._text = self._text[keep_from - self._base :]
            self._base = keep_from

    # -------------------------------------------------------------------------------- smooth start

    def may_start_playback(self, held_ms: float, now: float) -> bool:
        """``smooth``: would playback starting now, with ``held_ms`` of audio in hand, run without a gap?

        Checked on the text written so far: the requests in flight, then the unsent sentences, each
        synthesized after the one before it.
        """
        if self.policy == "latency":
            return True
        play_end = now + held_ms
        free_at = now
        for finish, remaining in self._predicted_arrivals(now):
            free_at = finish
            if finish > play_end:
                return False
            play_end += remaining
        start = self._sent
        for end in [*self._sentence_ends, self._end]:
            if end <= start:
                continue
            chars = len(self._text[start - self._base : end - self._base].strip())
            audio = self.speed.predict_audio_ms(chars)
            free_at = max(free_at, now) + self.speed.synthesis_ms(audio)
            if free_at > play_end:
                return False
            play_end += audio
            start = end
        return True
