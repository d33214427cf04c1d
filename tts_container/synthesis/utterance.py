"""What one request asks the model to say: its segments, each with the words around it as context.

Kokoro speaks every segment as a whole utterance, so a piece of a sentence alone starts and ends like a
sentence. A segment is rendered with the words on either side (from ``previous_text`` / ``next_text``,
or its neighbours when a sentence over the 510-phoneme limit is split) and only its own words' audio is
kept (:mod:`tts_container.engines.windows`); a sentence end is never bridged. Why and how the cut
falls: architecture §5, "Joins a listener cannot hear".
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from strands_kokoro.protocol import CONTEXT_WORDS_AFTER, CONTEXT_WORDS_BEFORE
from tts_container.engines.base import Ending
from tts_container.text.g2p import MAX_SEGMENT_TOKENS, Phonemes, Phonemizer

# The voice's style row follows the utterance's length and sets its speaking rate (rows of short
# utterances speak faster; docs/benchmarks.md, "Facts behind the code's rules"). A piece of a sentence
# takes the row of the sentence as far as it is known (the text before it, its own, the next words), and
# at least this: a sentence a client had to cut is a long one.
TYPICAL_SENTENCE_TOKENS = 80
_SENTENCE_MARKS = frozenset(".!?…")
_CLAUSE_MARKS = frozenset(",;:—–")
_CLOSERS = "\"'”’)]»"


@dataclass(frozen=True, slots=True)
class SpokenSegment:
    """One model call: the phonemes to render, and which of them this request speaks.

    ``phonemes`` is context before + own phonemes + context after; its ``word_of`` marks only the own
    words (context characters belong to no word). ``own`` is the character range of the own phonemes.
    """

    phonemes: Phonemes
    own: tuple[int, int]
    continues_before: bool  # words were spoken just before: the audio starts at the first own word
    ending: Ending  # "continues": words follow in the same sentence, the audio ends at the next one
    # The voice's style row is picked by utterance length and sets the speaking rate: a piece of a
    # sentence takes the row of (about) its whole sentence, not of the few words it is rendered with.
    style_tokens: int | None = None

    @property
    def has_context(self) -> bool:
        """Whether its phonemes hold words it does not speak (a neighbour's, rendered for prosody)."""
        return self.own != (0, len(self.phonemes.text))


def ending_of(phonemes: str) -> Literal["sentence", "clause", "open"]:
    """How a phoneme string ends: a sentence mark, a clause mark, or neither."""
    last = phonemes.rstrip().rstrip(_CLOSERS)[-1:]
    if last in _SENTENCE_MARKS:
        return "sentence"
    if last in _CLAUSE_MARKS:
        return "clause"
    return "open"


def plan_utterance(
    phonemizer: Phonemizer,
    text: str,
    *,
    voice: str,
    lang: str,
    previous_text: str | None = None,
    next_text: str | None = None,
    limit: int = MAX_SEGMENT_TOKENS,
) -> list[SpokenSegment]:
    """G2P for ``text`` (and its context), split into segments the model accepts, each with its context."""
    own = phonemizer.phonemes(text, lang=lang, voice=voice)
    pieces = own.split(limit)
    if not pieces:
        return []
    spoken_before = _phonemes(phonemizer, previous_text, lang=lang, voice=voice)
    before = _words(spoken_before, -CONTEXT_WORDS_BEFORE)
    if before and ending_of(before) == "sentence":
        before, spoken_before = "", ""  # the request starts a new sentence: nothing to continue
    after = _words(_phonemes(phonemizer, next_text, lang=lang, voice=voice), CONTEXT_WORDS_AFTER)
    sentence_tokens = len(spoken_before) + len(own.text) + len(after)
    segments = []
    for index, piece in enumerate(pieces):
        kind = ending_of(piece.text)
        if index + 1 < len(pieces):
            context_after = "" if kind == "sentence" else _words(pieces[index + 1].text, CONTEXT_WORDS_AFTER)
        else:
            context_after = "" if kind == "sentence" else after
        if index == 0:
            context_before = before
        else:
            previous = pieces[index - 1].text
            context_before = (
                "" if ending_of(previous) == "sentence" else _words(previous, -CONTEXT_WORDS_BEFORE)
            )
        context_before, context_after = _fit(context_before, piece.text, context_after, limit)
        ending: Ending = "continues" if context_after else ("clause" if kind == "clause" else "sentence")
        segment = _with_context(piece, context_before, context_after, ending)
        if context_before or context_after:
            style = max(TYPICAL_SENTENCE_TOKENS, sentence_tokens, len(segment.phonemes.text))
            segment = replace(segment, style_tokens=min(style, limit))
        segments.append(segment)
    return segments


def _phonemes(phonemizer: Phonemizer, text: str | None, *, lang: str, voice: str) -> str:
    """The phonemes of a context text (empty for none)."""
    if not text or not text.strip():
        return ""
    return phonemizer.phonemes(text, lang=lang, voice=voice).text


def _words(phonemes: str, count: int) -> str:
    """The first ``count`` words of a phoneme string (its last ``-count`` when negative)."""
    words = phonemes.split()
    return " ".join(words[count:] if count < 0 else words[:count])


def _fit(before: str, own: str, after: str, limit: int) -> tuple[str, str]:
    """Drop context words (the farthest first) until context + own fits the model's context."""
    while before and len(before) + len(own) + len(after) + 2 > limit:
        before = _words(before, -(len(before.split()) - 1))
    while after and len(own) + len(after) + 1 > limit:
        after = _words(after, len(after.split()) - 1)
    return before, after


def _with_context(piece: Phonemes, before: str, after: str, ending: Ending) -> SpokenSegment:
    lead = f"{before} " if before else ""
    tail = f" {after}" if after else ""
    phonemes = Phonemes(
        lead + piece.text + tail,
        piece.words,
        (-1,) * len(lead) + piece.word_of + (-1,) * len(tail),
    )
    return SpokenSegment(phonemes, (len(lead), len(lead) + len(piece.text)), bool(before), ending)
