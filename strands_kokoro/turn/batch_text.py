"""The text of a ``batch`` turn (the baseline, no pacer): the whole answer, spoken at the end.

:func:`whole_answer_text` cleans it and cuts it into sentences as ``bidi`` cuts it (the same speech
filter and chunker the turn feeds each delta through); :func:`split_for_request` cuts it to the server's
request size. It knows nothing of requests, the session or the events.
"""

from __future__ import annotations

from strands_kokoro.protocol import MAX_TEXT_CHARS
from strands_kokoro.text.chunker import IncrementalSentenceChunker
from strands_kokoro.text.sentence_rules import CJK_TERMINALS, CLOSERS, TERMINALS
from strands_kokoro.text.speech_text import SpeechTextFilter

__all__ = ["split_for_request", "whole_answer_text"]


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
