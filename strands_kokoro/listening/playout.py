"""What the listener has heard of an answer: the listener's clock over the audio sent to it.

The cascade sends audio faster than real time; the listener plays it from the first chunk on, in real
time, without gaps it does not have to make. So at any moment the audio still queued at the listener
is the audio sent minus what the wall clock has played since (:meth:`Playout.queued_ms`), and what was
heard is the audio sent minus that. The words of each request are timed (ms from its first chunk), so
the heard audio maps to the words heard: the assistant's transcript (:meth:`Playout.heard`) follows the
voice, and a barge-in keeps exactly what was heard. A request the server gives no timings for counts as
heard once its whole audio played. Fillers ("One moment.") are voice, not answer: never in the text.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["Playout", "joined", "rest_of"]


@dataclass(slots=True)
class _Request:
    start_ms: float  # where its audio starts in the answer's audio
    audio_ms: float = 0.0
    words: list[tuple[str, float]] = field(default_factory=list)  # (word, end ms from its first chunk)
    text: str | None = None  # known once it completed
    filler: bool = False
    words_out: int = 0  # words already given to the transcript
    done: bool = False  # all of it given to the transcript


class Playout:
    """The listener's clock over one answer's audio, and the words heard so far."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self.sent_ms = 0.0
        self.first_audio_at: float | None = None  # clock time of the first chunk sent
        self.last_audio_at: float | None = None  # clock time of the last chunk sent
        self._play_end: float = 0.0  # clock time the listener's queue runs out
        self._requests: dict[int, _Request] = {}

    def audio(self, request: int, ms: float) -> None:
        """A chunk of request ``request``'s audio, ``ms`` long, was sent now."""
        now = self._clock()
        if self.first_audio_at is None:
            self.first_audio_at = self._play_end = now
        self.last_audio_at = now
        self._play_end = max(now, self._play_end) + ms / 1000.0
        if request not in self._requests:
            self._requests[request] = _Request(start_ms=self.sent_ms)
        self._requests[request].audio_ms += ms
        self.sent_ms += ms

    def words(self, request: int, words: Sequence[tuple[str, float]]) -> None:
        """More timed words of a request: ``(word, end ms from its first chunk)``."""
        self._requests.setdefault(request, _Request(start_ms=self.sent_ms)).words.extend(words)

    def completed(self, request: int, text: str, *, filler: bool) -> None:
        """The request was spoken whole: its text (and whether it was a filler) is known."""
        entry = self._requests.setdefault(request, _Request(start_ms=self.sent_ms))
        entry.text, entry.filler = text, filler

    def queued_ms(self) -> float:
        """Audio sent that the listener has not played yet."""
        if self.first_audio_at is None:
            return 0.0
        return max(0.0, (self._play_end - self._clock()) * 1000.0)

    def played_ms(self) -> float:
        return self.sent_ms - self.queued_ms()

    def heard(self, *, everything: bool = False) -> str:
        """The text heard since the last call (``everything``: as if all audio sent had played)."""
        played = self.sent_ms if everything else self.played_ms()
        out: list[str] = []
        for index in sorted(self._requests):
            r = self._requests[index]
            if r.done:
                continue
            offset = played - r.start_ms
            if offset <= 0:
                break
            whole = r.text is not None and offset >= r.audio_ms - 1e-6
            if r.filler or (r.text is not None and not r.text.strip()):
                r.done = whole
                if whole:
                    continue
                break
            if whole:
                out.append(rest_of(r.text or "", [w for w, _ in r.words[: r.words_out]]))
                r.done = True
                continue
            count = 0  # words are timed in order: up to the first not yet heard
            for _word, end in r.words[r.words_out :]:
                if end > offset:
                    break
                count += 1
            heard = [w for w, _ in r.words[r.words_out : r.words_out + count]]
            r.words_out += count
            out.extend(heard)
            break
        return joined(out)


def joined(pieces: list[str]) -> str:
    """Words and sentences joined with a space, punctuation on its own joined to what precedes it."""
    text = ""
    for piece in (p.strip() for p in pieces):
        if piece:
            text += piece if not text or (not piece[0].isalnum() and piece[0] not in "\"'(") else f" {piece}"
    return text


def rest_of(text: str, said: list[str]) -> str:
    """``text`` after the words already said (found in order, punctuation kept)."""
    position = 0
    for word in said:
        match = re.search(re.escape(word.strip()), text[position:], flags=re.IGNORECASE)
        if match is None:
            break
        position += match.end()
    return text[position:].strip()
