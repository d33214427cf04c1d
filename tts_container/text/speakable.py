"""Is there anything a voice can say in this text? Checked when a request is accepted, before any work.

:func:`screen` first leaves out what is never read aloud: emoji and what glues or modifies them (©, ®
and ™ stay), control characters and terminal colour codes, invisible characters (Unicode ``Cf``); other
spaces become plain ones, a blank line ends a sentence, a single line break is a space. Then it refuses
text with no letter, number or symbol (``nothing_to_say``) and text mostly in a script the request's
language does not read (``unsupported_script``); a minority of such runs is left out and the rest spoken.
Scripts come from Unicode's Script property (``regex``); ``Common`` and ``Inherited`` suit every language.
Why each rule: docs/architecture.md, "What the model server will say".
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
