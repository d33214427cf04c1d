"""Japanese text to Kokoro phonemes: misaki's cutlet reader, with numbers read by OpenJTalk.

cutlet (MeCab via ``fugashi``, ``unidic-lite``'s dictionary from its wheel) is misaki's default reader;
its ``pyopenjtalk`` version writes symbols Kokoro v1.0's vocabulary lacks. cutlet reads numbers without
counters ("3本" as "san hon"), so each number and its counter are first rewritten into OpenJTalk's
katakana (``pyopenjtalk-plus``: "3本" サンボン, "2024年" ニセンニジューヨネン); past
:data:`MAX_NUMBER_DIGITS` digits a number is read digit by digit. Half-width katakana and full-width
Latin are folded as cutlet folds them. A word is one of cutlet's groups, its written span where it came
from (:mod:`tts_container.text.cjk_text`). Nothing is downloaded.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from tts_container.text.cjk_text import Rewrite, SpokenPiece, SpokenText, assemble

__all__ = ["MAX_NUMBER_DIGITS", "JapaneseReader"]

MAX_NUMBER_DIGITS = 15
# Digits (ASCII or full-width), thousands commas, a decimal point, then the numerals that scale them
# ("3万", "1.5億"): OpenJTalk reads all of it as one number.
_NUMBER = re.compile(r"[0-9０-９]+(?:[,，][0-9０-９]{3})*(?:[.．][0-9０-９]+)?[十百千万億兆]*")
# A half-width katakana with its (half-width) voicing mark is one character once folded.
_UNIT = re.compile(r"[\uff66-\uff9d][\uff9e\uff9f]?|.", re.DOTALL)
_DIGIT_NAMES = dict(
    zip(
        "0123456789",
        ["ゼロ", "イチ", "ニ", "サン", "ヨン", "ゴ", "ロク", "ナナ", "ハチ", "キュウ"],
        strict=True,
    )
)
_CONTEXT = 3  # characters after a number that OpenJTalk sees, so its counter is read with it
# Where cutlet's output drops a space: around a glottal stop ʔ (misaki's own rule, kept as it is).
_GLOTTAL_SPACE = re.compile(r'(?<![!",.:;?»—…”]) (?=ʔ)|(?<=ʔ) (?!["«“])')


class JapaneseReader:
    """Text -> (phonemes, written words, word of each phoneme); built once, called under one lock."""

    def __init__(self) -> None:
        import jaconv
        from misaki.cutlet import Cutlet, Word

        self._kata2hira = jaconv.kata2hira
        self._word = Word
        self._cutlet = _TracingCutlet(Cutlet)

    def __call__(self, text: str) -> tuple[str, tuple[str, ...], tuple[int, ...]]:
        spoken = SpokenText.of(text, self._rewrites(text))
        tagged = [
            self._word(
                w.surface,
                self._kata2hira(w.feature.pron or w.feature.kana or w.surface),
                6 if w.char_type == 7 or not w.is_unk else w.char_type,
            )
            for w in self._cutlet.tagger(spoken.spoken)
        ]
        groups, tokens = self._cutlet.read(tagged)
        return assemble(spoken, _pieces(spoken.spoken, groups, tokens))

    def _rewrites(self, text: str) -> list[Rewrite]:
        """Numbers (with their counters) in OpenJTalk's katakana; every other character folded as
        cutlet folds it (NFKC, half-width Latin, full-width katakana)."""
        rewrites: list[Rewrite] = []
        at = 0
        for match in _NUMBER.finditer(text):
            rewrites.extend(self._folded(text, at, match.start()))
            number = _number_reading(text, match.start(), match.end())
            rewrites.append(number)
            at = number.end
        rewrites.extend(self._folded(text, at, len(text)))
        return [r for r in rewrites if r.spoken != text[r.start : r.end]]

    def _folded(self, text: str, start: int, end: int) -> list[Rewrite]:
        return [
            Rewrite(start + m.start(), start + m.end(), _fold(m.group()))
            for m in _UNIT.finditer(text[start:end])
        ]


def _fold(unit: str) -> str:
    """What cutlet's own normalization makes of one character (digits aside: they are read first)."""
    import mojimoji

    folded = unicodedata.normalize("NFKC", unit)
    folded = mojimoji.zen_to_han(folded, kana=False)
    return str(mojimoji.han_to_zen(folded, digit=False, ascii=False))


def _number_reading(text: str, start: int, end: int) -> Rewrite:
    """The number at ``text[start:end]`` and its counter, as OpenJTalk reads them in katakana."""
    import pyopenjtalk

    digits = unicodedata.normalize("NFKC", text[start:end])
    if sum(char.isdigit() for char in digits) > MAX_NUMBER_DIGITS:
        return Rewrite(start, end, "".join(_DIGIT_NAMES.get(char, "") for char in digits))
    context = re.split(r"[0-9０-９]", text[end : end + _CONTEXT], maxsplit=1)[0]  # not the next number
    nodes: list[Any] = pyopenjtalk.run_frontend(digits + context)
    taken = 0
    while taken < len(nodes) and _is_number(nodes[taken]):
        taken += 1
        if re.search(r"\d\D*$", nodes[taken - 1]["string"]) and not _is_digits(nodes[taken - 1]["string"]):
            break  # a number and its counter in one node ("１月"): nothing of the number follows
    tail = ""
    last = unicodedata.normalize("NFKC", nodes[taken - 1]["string"]) if taken else ""
    if taken and re.search(r"\d", last) and re.search(r"\D$", last):
        tail = re.sub(r"^[\d.,]+", "", last)  # one node for a number and its counter ("１月")
    elif taken < len(nodes) and nodes[taken]["pos_group2"] == "助数詞":
        tail = unicodedata.normalize("NFKC", nodes[taken]["string"])
        taken += 1
    if tail and unicodedata.normalize("NFKC", text[end : end + len(tail)]) != tail:
        return Rewrite(start, end, "".join(_DIGIT_NAMES.get(char, char) for char in digits))
    reading = "".join(str(node["pron"]).replace("’", "") for node in nodes[:taken])
    if not reading:
        return Rewrite(start, end, "".join(_DIGIT_NAMES.get(char, "") for char in digits))
    return Rewrite(start, end + len(tail), reading + " ")  # a word of its own for MeCab (and captions)


def _is_digits(string: str) -> bool:
    return bool(re.fullmatch(r"[\d.,]+", unicodedata.normalize("NFKC", string)))


def _is_number(node: dict[str, Any]) -> bool:
    string = unicodedata.normalize("NFKC", str(node["string"]))
    return bool(node["pos_group1"] == "数" or string in {".", ","} or re.search(r"\d", string))


class _TracingCutlet:
    """misaki's :class:`~misaki.cutlet.Cutlet`, remembering the written group each romaji token reads."""

    def __init__(self, cutlet_class: type) -> None:
        groups: list[str] = []

        class Tracing(cutlet_class):
            def _romaji_word(self, word: Any) -> str:
                groups.append(word.surface)
                return str(super()._romaji_word(word))

        self._groups = groups
        self._inner = Tracing()
        self.tagger = self._inner.tagger

    def read(self, tagged: list[Any]) -> tuple[list[str], list[Any]]:
        """Cutlet's tokens for the tagged words, and the written group of each."""
        self._groups.clear()
        tokens = self._inner._romaji_tokens(tagged)
        return list(self._groups), tokens


def _pieces(spoken: str, groups: list[str], tokens: list[Any]) -> list[SpokenPiece]:
    """Cutlet's output (``str`` of each token joined, spaces collapsed, brackets as « », no space
    around ʔ) cut back into one piece per group, each with the spoken span its group came from."""
    text: list[str] = []
    owner: list[int] = []
    for index, token in enumerate(tokens):
        for char in str(token):
            text.append(char)
            owner.append(index)
    joined = "".join(text)
    keep = [True] * len(joined)
    for match in re.finditer(r"\s+", joined):  # collapse runs to their first space
        for index in range(match.start() + 1, match.end()):
            keep[index] = False
    chars = [(" " if c.isspace() else c, o) for c, o, k in zip(joined, owner, keep, strict=True) if k]
    collapsed = "".join(c for c, _ in chars).replace("(", "«").replace(")", "»")
    dropped = {m.start() for m in _GLOTTAL_SPACE.finditer(collapsed)}
    chars = [(collapsed[i], chars[i][1]) for i in range(len(chars)) if i not in dropped]
    spans: list[tuple[int, int]] = []
    cursor = 0
    for group in groups:
        at = spoken.find(group, cursor)
        if at < 0:
            spans.append((-1, -1))
            continue
        spans.append((at, at + len(group)))
        cursor = at + len(group)
    pieces: list[SpokenPiece] = []
    last = -1
    for char, index in chars:
        if pieces and index == last:
            pieces[-1] = SpokenPiece(pieces[-1].phonemes + char, pieces[-1].start, pieces[-1].end)
        else:
            start, end = spans[index] if index < len(spans) else (-1, -1)
            pieces.append(SpokenPiece(char, start, end))
        last = index
    return pieces
