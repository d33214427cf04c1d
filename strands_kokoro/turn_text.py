"""The text side of a spoken turn: the model's text, filtered for speech and cut into sentences.

:class:`TurnText` holds the speech filter (:class:`~strands_kokoro.speech_text.SpeechTextFilter`) and the
sentence chunker (:class:`~strands_kokoro.chunker.IncrementalSentenceChunker`) of one ``bidi`` turn; the
turn hands what it returns to the pacer (the turn alone writes to the pacer). ``batch`` (the baseline,
no pacer) speaks the whole answer at the end: :func:`whole_answer_text` cleans it and
:func:`split_for_request` cuts it to the server's request size. It knows nothing of requests, the
session or the events: it reports to the turn by its return values.
"""

from __future__ import annotations

from strands_kokoro.chunker import IncrementalSentenceChunker, Sentence
from strands_kokoro.protocol import MAX_TEXT_CHARS
from strands_kokoro.sentence_rules import CJK_TERMINALS, CLOSERS, TERMINALS
from strands_kokoro.speech_text import SpeechTextFilter

__all__ = ["TurnText", "split_for_request", "whole_answer_text"]


# What already ends a sentence (the chunker's marks, and a clause mark a reader pauses at as much).
_ENDS_A_SENTENCE = TERMINALS | CJK_TERMINALS | frozenset(":;")
_CLOSERS = "".join(CLOSERS)


def whole_answer_text(written: str) -> str:
    """The batch baseline's text: the answer cleaned and cut into sentences as bidi cuts it, each one
    ending as a sentence does.

    Why: joined with spaces, a heading or a list item without a period runs into the next sentence
    ("Getting started To install...": no pause, no falling pitch), where bidi speaks it as a request of
    its own, which the server ends as a sentence.
    """
    chunker, text_filter = IncrementalSentenceChunker(), SpeechTextFilter()
    sentences = [*chunker.feed(text_filter.feed(written) + text_filter.flush()), *chunker.flush()]
    spoken = [" ".join(sentence.split()) for sentence in sentences]
    return " ".join(
        text if text.rstrip(_CLOSERS)[-1:] in _ENDS_A_SENTENCE else f"{text}." for text in spoken if text
    )


def split_for_request(text: str, limit: int = MAX_TEXT_CHARS) -> list[str]:
    """Split a long batch answer at whitespace so each piece fits one request."""
    pieces: list[str] = []
    while len(text) > limit:
        cut = text.rfind(" ", 0, limit)
        cut = cut if cut > 0 else limit
        pieces.append(text[:cut].strip())
        text = text[cut:]
    if text.strip():
        pieces.append(text.strip())
    return pieces


class TurnText:
    """One ``bidi`` turn's text: each delta in, the sentences it completed and the one still being
    written out (what the pacer reads)."""

    def __init__(self, max_chars: int | None) -> None:
        self._filter = SpeechTextFilter()
        self._chunker = IncrementalSentenceChunker(max_chars=max_chars)

    def feed(self, text: str) -> tuple[list[Sentence], Sentence]:
        """A text delta of the model's: the sentences it completed, and the one still being written."""
        return self._chunker.feed(self._filter.feed(text)), self._chunker.pending()

    def flush(self) -> tuple[list[Sentence], Sentence]:
        """A model call ended: everything held back is complete (its last sentence too)."""
        return [*self._chunker.feed(self._filter.flush()), *self._chunker.flush()], self._chunker.pending()
