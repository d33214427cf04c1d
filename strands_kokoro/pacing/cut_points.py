"""Where a sentence may be cut into pieces, if it must be: its words, clause marks and weak endings.

The pacer decides *whether* to cut and how much may go; this module says *where* a cut sounds least
broken off: a clause mark (or just before a word that opens a clause) is best; a weak word ("of", "the",
"du", "de la") or a number is never chosen while there is another choice. One vocabulary serves every
language Kokoro writes with spaces, so the pacer need not know the request's language. A cut in a
sentence still being written leaves :data:`MIN_LOOKAHEAD_WORDS` written words after it, sent as
``next_text`` (architecture §9, "Pacing").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MIN_LOOKAHEAD_WORDS", "MIN_WORDS", "Word", "first_phrase", "longest_prefix", "words_of"]

MIN_WORDS = 3
MIN_LOOKAHEAD_WORDS = 3
FIRST_PHRASE_MIN_WORDS = 3
FIRST_PHRASE_MAX_WORDS = 5
FIRST_PHRASE_WORDS = 4
# A clause mark is preferred to a word cut if it keeps at least this share of what fits.
CLAUSE_SHARE = 0.5

_TOKEN = re.compile(r"\S+")
_WORDLIKE = re.compile(r"\w")
_CLAUSE_END = (",", ";", ":", "—", "–", ")")
_BARE = re.compile(r"[^\w']+")


def _vocabulary(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WEAK_ENDINGS = _vocabulary("""
    a an the of to in on at by for with from into onto about over under between through during without
    within and or but nor so that which who whom whose when where while if as than is are was were be
    been am do does did has have had will would can could shall should may might must not no my your
    his her its our their this these those very more most such some any each every it i we you they he
    she them us me him""")
_WEAK_ENDINGS |= _vocabulary("""
    le la les un une des du de au aux et ou en dans pour par sur sous avec sans chez vers que qui
    ce cet cette ces mon mes ta tes sa ses notre nos votre vos leur leurs ne est sont
    el los las unos unas del al y e o u con por para entre hacia desde hasta mi mis tu tus su sus es se
    il lo gli uno della delle dei degli dello nel nella nei negli di da tra fra che per è
    os as uma uns umas do dos das no na nos nas pelo pela pelos pelas ao aos em com sem
    का की के को से में मैं और या पर है""")
_CLAUSE_OPENERS = _vocabulary("""
    and but or nor so yet because although though while whereas when whenever where which who whom
    whose that if unless until since after before than""")
_WEAK_ENDINGS |= _CLAUSE_OPENERS  # "... purr because" | "they need ..." is broken off too


@dataclass(frozen=True, slots=True)
class Word:
    """A word with the punctuation around it, as offsets into the turn's text."""

    start: int
    end: int
    clause: bool  # ends at a clause mark, or just before a word that opens a clause (a good place to cut)
    weak: bool  # ends on a word a speaker would not pause after (an article, a preposition, a number)


def words_of(text: str, start: int, *, complete: bool) -> list[Word]:
    """The words of ``text`` (which begins at offset ``start``). In text still being written the last
    token may be a word cut mid-way, so only tokens followed by more text count."""
    words: list[Word] = []
    names: list[str] = []
    for m in _TOKEN.finditer(text):
        if not complete and m.end() == len(text):
            break
        token, word_start = m.group(), start + m.start()
        name = _BARE.sub("", token).lower()
        if words and not _WORDLIKE.search(token):  # a lone dash or quote belongs to the word before
            word_start = words.pop().start
            name = names.pop()
        if words and name in _CLAUSE_OPENERS and not words[-1].clause:
            words[-1] = Word(words[-1].start, words[-1].end, True, words[-1].weak)
        weak = name in _WEAK_ENDINGS or name[-1:].isdigit()
        words.append(Word(word_start, start + m.end(), token.endswith(_CLAUSE_END), weak))
        names.append(name)
    return words


def longest_prefix(words: list[Word], budget: float, *, complete: bool) -> int | None:
    """The end of the longest piece of at least MIN_WORDS words that fits ``budget`` characters and
    leaves written words after it (one of a complete sentence, else :data:`MIN_LOOKAHEAD_WORDS`): at a
    clause mark if one keeps enough of it, else not on a weak word if there is any other."""
    start = words[0].start
    after = 1 if complete else MIN_LOOKAHEAD_WORDS
    fitting = [w for w in words[MIN_WORDS - 1 : len(words) - after] if w.end - start <= budget]
    if not fitting:
        return None
    enough = CLAUSE_SHARE * (fitting[-1].end - start)
    clauses = [w for w in fitting if w.clause and w.end - start >= enough]
    strong = [w for w in fitting if not w.weak]
    return (clauses or strong or fitting)[-1].end


def first_phrase(words: list[Word], end: int, *, complete: bool) -> int | None:
    """For a server whose first audio grows with the text: the first clause or sentence ending within
    3-5 words, else four words (not on "of" or "the" when there is a choice); a short sentence whole
    (``end``). None: a clause may still end within five words of text being written, or the words
    after the five are not yet :data:`MIN_LOOKAHEAD_WORDS`."""
    if complete and len(words) <= FIRST_PHRASE_MAX_WORDS + 1:
        return end
    if len(words) < FIRST_PHRASE_MAX_WORDS + (1 if complete else MIN_LOOKAHEAD_WORDS):
        return end if complete else None
    options = words[FIRST_PHRASE_MIN_WORDS - 1 : FIRST_PHRASE_MAX_WORDS]
    for word in options:
        if word.clause:
            return word.end
    by_preference = sorted(options, key=lambda w: abs(words.index(w) + 1 - FIRST_PHRASE_WORDS))
    return next((w for w in by_preference if not w.weak), words[FIRST_PHRASE_WORDS - 1]).end
