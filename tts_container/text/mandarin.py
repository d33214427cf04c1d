"""Mandarin text to Kokoro phonemes: misaki's ``zh`` reader as hexgrad's pipeline runs it for Kokoro-82M.

The same steps as ``ZHG2P(version=None)`` (numbers by ``cn2an``, Chinese punctuation mapped, ``jieba``
words, ``pypinyin`` to IPA with tone arrows), keeping where each word came from: a word is a jieba word,
its written span the characters it was read from. A number is read with the character after it ("2024年"
二零二四年, "3-5个" 三到五个, "10%" 百分之十), thousands commas dropped; past :data:`MAX_NUMBER_DIGITS`
digits, digit by digit. Latin letters go to the model as they are, as misaki's reader leaves them.
"""

from __future__ import annotations

import logging
import re
import warnings

from tts_container.text.cjk_text import Rewrite, SpokenPiece, SpokenText, assemble

__all__ = ["MAX_NUMBER_DIGITS", "MandarinReader"]

MAX_NUMBER_DIGITS = 15
_NUMBER = re.compile(
    r"[0-9０-９]+(?:[,，][0-9０-９]{3})*(?:[.．][0-9０-９]+)?"
    r"(?:[-~～][0-9０-９]+(?:[.．][0-9０-９]+)?|/[0-9０-９]+)?[%％℃]?"
)
_HAN = re.compile(r"[\u4E00-\u9FFF]+|[^\u4E00-\u9FFF]+")  # misaki's split (the CJK unified block)
_WORDS = re.compile(r"[^\W_]+|\W|_")
# misaki's zh punctuation map, with the space it puts after a closing mark (before an opening one).
_MARKS = "、，。．！：；？«»《》「」【】（）"
_OPENING = "“("
# Full-width digits and number marks as cn2an reads them (not NFKC: it would make ℃ "°C").
_HALF_WIDTH = str.maketrans("０１２３４５６７８９，．％～", "0123456789,.%~")


class MandarinReader:
    """Text -> (phonemes, written words, word of each phoneme); built once, called under one lock."""

    def __init__(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # jieba 0.42's regex literals
            import cn2an
            import jieba
            import jieba.finalseg  # imported by jieba's first cut otherwise, outside this guard
        from misaki.zh import ZHG2P

        jieba.setLogLevel(logging.WARNING)  # its dictionary-loading banner
        self._cut = jieba.lcut
        self._cn2an = cn2an
        self._word_ipa = ZHG2P.word2ipa
        self._marks = {mark: _spaced(ZHG2P.map_punctuation(mark)) for mark in _MARKS}

    def __call__(self, text: str) -> tuple[str, tuple[str, ...], tuple[int, ...]]:
        spoken = SpokenText.of(text, self._rewrites(text))
        pieces: list[SpokenPiece] = []
        for segment in _HAN.finditer(spoken.spoken):
            at = segment.start()
            if "\u4e00" <= segment.group()[0] <= "\u9fff":
                for index, word in enumerate(self._cut(segment.group(), cut_all=False)):
                    ipa = self._word_ipa(word).replace(chr(815), "")
                    pieces.append(SpokenPiece((" " if index else "") + ipa, at, at + len(word)))
                    at += len(word)
            else:
                for part in _WORDS.finditer(segment.group()):
                    if part.group().isalnum():  # a Latin word: spaced, so it stays a word of its own
                        start, end = at + part.start(), at + part.end()
                        pieces.append(SpokenPiece(f" {part.group()} ", start, end))
                    else:
                        pieces.append(SpokenPiece(part.group()))
        return assemble(spoken, pieces)

    def _rewrites(self, text: str) -> list[Rewrite]:
        """Numbers in characters, and Chinese punctuation as the marks the model knows."""
        rewrites: list[Rewrite] = []
        numbers = {m.start(): m for m in _NUMBER.finditer(text)}
        at = 0
        while at < len(text):
            if at in numbers:
                match = numbers[at]
                reading = self._number(match.group(), text[match.end() : match.end() + 1])
                rewrites.append(Rewrite(match.start(), match.end(), reading))
                at = match.end()
                continue
            if text[at] in self._marks:
                rewrites.append(Rewrite(at, at + 1, self._marks[text[at]]))
            at += 1
        return rewrites

    def _number(self, number: str, after: str) -> str:
        """``number`` in characters as it is read before ``after`` (a measure word, 年, 月...)."""
        plain = number.translate(_HALF_WIDTH).replace(",", "").replace("~", "-")
        if sum(char.isdigit() for char in plain) > MAX_NUMBER_DIGITS:
            return str(self._cn2an.transform(plain, "an2cn", direct=True))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # cn2an warns (and leaves the digits) on what it cannot read
            read = str(self._cn2an.transform(plain + after, "an2cn"))
            if after and read.endswith(after):
                read = read[: -len(after)]
            else:
                read = str(self._cn2an.transform(plain, "an2cn"))
        return read


def _spaced(mark: str) -> str:
    """A mapped mark with misaki's spacing: a space before an opening mark, after any other."""
    return f" {mark}" if mark in _OPENING else f"{mark} "
