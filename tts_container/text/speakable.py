"""Is there anything a voice can say in this text? Checked when a request is accepted, before any work.

Why: the engine speaks whatever its G2P makes of the text, and two kinds of text make nothing useful.

- **Nothing to say.** Text of only combining marks, zero-width spaces, format or private-use characters,
  or punctuation has no letter, digit or symbol: the engine made 0 bytes of audio and the server answered
  a silent ``synthesis_complete`` (WebSocket) or an empty 200 (POST). It is refused with
  ``nothing_to_say`` instead. Text that passes this check and still makes no audio (``$`` or ``#`` alone:
  the G2P has no sound for them) gets the same code from the routes, so every such input is answered alike.
- **A script the language cannot read.** misaki and eSpeak spell what they cannot read letter by letter
  ("Arabic letter mim, Arabic letter ra...", "Chinese letter" per character): 30 characters of Arabic,
  Hebrew or CJK with an English voice were 13-18 s of letter names, first audio after 8-11 s. When most
  of the sayable characters are in a script the request's language does not read, the request is
  refused with ``unsupported_script`` (Japanese or Chinese with an English voice and no ``lang``, Arabic
  with any voice); when they are a minority (a name or a word in an English
  sentence), those runs are left out and the rest is spoken.

- **Emoji** are not read aloud (eSpeak says their names: "😀🐱🎉" was "grinning cat party", with no
  written word to caption it): pictographs and what glues or modifies them (ZWJ, variation selectors,
  skin tones, flags, tags, keycaps) are left out first, as the client's speech filter does; ©, ® and ™
  stay (a person says "copyright"), in English also the arrows the normalizer reads ("↔" is "to and
  from"), and ‼ and ⁉ are read as the ! and ? they double. Text of only emoji has nothing to say.
  Control characters go too, and terminal colour codes whole (``ESC[31m`` was heard as "31 meters";
  a NUL reached a caption).
- **Line breaks** are read as a reader reads them: a blank line ends a sentence where its line has no
  mark of its own, and a single line break is a space. misaki merged the words on either side of a line
  break into one token ("nice\nBerlin": one caption word, no pause), so markdown sent straight to the
  server ran a heading into the next words ("Getting Started\n\nHere are the steps").
- **Invisible characters** go as well (zero-width spaces and joiners, soft hyphens, byte order and
  direction marks: Unicode ``Cf``), and every other space is a plain one: a zero-width joiner split
  "Hel\u200dlo" into two words (a quarter longer), a no-break space merged five caption words into two,
  and a right-to-left override inside a caption word would draw it backwards.

"Sayable" is a letter, a number or a symbol (Unicode ``L``, ``N``, ``S``); its script decides whether
the language reads it (``Common`` and ``Inherited`` characters, such as digits, math letters and
combining accents, belong to every language). The scripts come from Unicode's Script property via the
``regex`` package.
"""

from __future__ import annotations

from dataclasses import replace

import regex

from strands_kokoro.protocol import ErrorCode, ServerError, SynthesizeRequest
from strands_kokoro.text.blank_lines import BLANK_LINE
from strands_kokoro.text.emoji_chars import SAID_EVERYWHERE, emoji_class
from tts_container.text.normalization.normalizer import ENGLISH_DIALECTS
from tts_container.text.normalization.tables import SYMBOLS
from tts_container.text.pronunciation import hold_phonemes, restore_phonemes

# The scripts each G2P dialect reads (tts_container.text.g2p); every other script is foreign to it.
LATIN = ("Latin",)
READABLE_SCRIPTS: dict[str, tuple[str, ...]] = {
    "en-us": LATIN,
    "en-gb": LATIN,
    "es": LATIN,
    "fr-fr": LATIN,
    "it": LATIN,
    "pt-br": LATIN,
    "hi": ("Devanagari", *LATIN),
    # Latin too: a brand or an acronym inside a Japanese or Mandarin sentence is kept, not left out.
    "ja": ("Han", "Hiragana", "Katakana", *LATIN),
    "zh": ("Han", *LATIN),
}
# Refused when more than this share of the sayable characters is foreign.
MAX_FOREIGN_SHARE = 0.5

_SAYABLE = regex.compile(r"[\p{L}\p{N}\p{S}]")
# An ANSI escape sequence (CSI ... final byte), or a C0/C1 control character other than tab and newlines.
_CONTROL = regex.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_INVISIBLE = regex.compile(r"\p{Cf}+")
_OTHER_SPACE = regex.compile(r"[^\S \t\n\r]")  # no-break, thin, ideographic... spaces, line separators
_BEFORE_PUNCTUATION = regex.compile(r"\s+(?=[.,;:!?…)\]}])")  # "a lot 🎉." is "a lot."
# A blank line after a line without a closing mark of its own; then every other line break.
_PARAGRAPH_END = regex.compile(rf"(?<=[^\s.,;:!?…。！？।]){BLANK_LINE}(?=\S)")
_LINE_BREAK = regex.compile(r"[ \t]*[\r\n]+[ \t]*")


def _emoji_pattern(kept: str) -> regex.Pattern[str]:
    """Emoji (:mod:`strands_kokoro.text.emoji_chars`: pictographs and what glues or modifies them), except the
    characters in ``kept``, with the spaces around them."""
    return regex.compile(rf"\s*[{emoji_class(kept)}]+\s*")


# ©, ® and ™ are said in every language; in English also the pictographic symbols the normalizer reads
# ("↔" is "to and from"), which the client's speech filter keeps for it.
_EMOJI = _emoji_pattern(SAID_EVERYWHERE)
_ENGLISH_EMOJI = _emoji_pattern(SAID_EVERYWHERE + "".join(symbol for symbol in SYMBOLS if len(symbol) == 1))
# Doubled marks that are pictographs too: their punctuation is kept (a question is read as one).
_MARKS = str.maketrans({"‼": "!", "⁉": "?"})
_NEUTRAL = r"\p{Script=Common}\p{Script=Inherited}"


def _foreign_pattern(scripts: tuple[str, ...]) -> regex.Pattern[str]:
    """A run of sayable characters in none of ``scripts`` (nor Common/Inherited), with its marks."""
    known = "".join(rf"\p{{Script={name}}}" for name in scripts)
    return regex.compile(rf"(?:(?=[\p{{L}}\p{{N}}\p{{S}}])[^{_NEUTRAL}{known}]\p{{M}}*)+")


def _left_out(foreign: regex.Pattern[str], text: str) -> str:
    """``text`` without its foreign runs; the spaces around each run become one."""
    return regex.sub(rf"\s*(?:{foreign.pattern})\s*", " ", text).strip()


_FOREIGN = {dialect: _foreign_pattern(scripts) for dialect, scripts in READABLE_SCRIPTS.items()}


def screen(request: SynthesizeRequest, dialect: str) -> SynthesizeRequest | ServerError:
    """The request to speak (emoji left out, and foreign runs when they are a minority), or why there is
    nothing. Inline phonemes (``[word](/phonemes/)``) are held out of it: they are no words of the text."""
    text, held = hold_phonemes(request.text)
    screened = _screen(replace(request, text=text) if held else request, dialect)
    if isinstance(screened, ServerError) or not held:
        return screened
    return replace(screened, text=restore_phonemes(screened.text, held))


def _screen(request: SynthesizeRequest, dialect: str) -> SynthesizeRequest | ServerError:
    if _CONTROL.search(request.text):
        request = replace(request, text=_CONTROL.sub("", request.text))
    if _INVISIBLE.search(request.text) or _OTHER_SPACE.search(request.text):  # before emoji: their ZWJ
        request = replace(request, text=_OTHER_SPACE.sub(" ", _INVISIBLE.sub("", request.text)))
    if "\n" in request.text or "\r" in request.text:
        text = _PARAGRAPH_END.sub(". ", request.text)
        request = replace(request, text=_LINE_BREAK.sub(" ", text).strip())
    if any(mark in request.text for mark in "‼⁉"):
        request = replace(request, text=request.text.translate(_MARKS))
    emoji = _ENGLISH_EMOJI if dialect in ENGLISH_DIALECTS else _EMOJI
    if emoji.search(request.text):
        request = replace(request, text=_BEFORE_PUNCTUATION.sub("", emoji.sub(" ", request.text)).strip())
    sayable = len(_SAYABLE.findall(request.text))
    if sayable == 0:
        return nothing_to_say(request.request_id)
    foreign = _FOREIGN.get(dialect)
    if foreign is None:
        return request
    runs = foreign.findall(request.text)
    if not runs:
        return request
    foreign_chars = sum(len(_SAYABLE.findall(run)) for run in runs)
    if foreign_chars > MAX_FOREIGN_SHARE * sayable:
        message = (
            f"most of the text is in a script the language {dialect!r} cannot read "
            f"({foreign_chars} of {sayable} letters, digits or symbols); use a voice and lang that read it"
        )
        return ServerError(request.request_id, ErrorCode.UNSUPPORTED_SCRIPT, message)
    return replace(request, text=_left_out(foreign, request.text))


def nothing_to_say(request_id: str | None) -> ServerError:
    """The one answer to a text the voice has nothing to say for (refused early, or no audio made)."""
    message = "the text has nothing to say: no letter, digit or symbol the voice can speak"
    return ServerError(request_id, ErrorCode.NOTHING_TO_SAY, message)
