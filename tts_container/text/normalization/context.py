"""The words around a match: what the rules look at to decide how a thing is read.

"St." is "Saint" before a name and "Street" after one; "IV" is "four" after "Chapter"; "3.12" is a version
after "Python". These helpers read one word either side of a span, skipping spaces and light punctuation.
"""

from __future__ import annotations

from tts_container.text.normalization.tables import SENTENCE_STARTERS

# How far a rule looks past its match: a sentence's neighbourhood, so a long text stays linear.
WINDOW = 80
_EDGE = "\"'“”‘’()[]{},;:!?"


def word_before(text: str, start: int) -> str:
    """The whitespace-separated word that ends before ``start`` ("" at the start of the text)."""
    return previous_word(text, start)[0]


def previous_word(text: str, start: int) -> tuple[str, int]:
    """:func:`word_before` and where that word starts in ``text``."""
    end = start
    floor = max(0, start - WINDOW)
    while end > floor and text[end - 1].isspace():
        end -= 1
    begin = end
    while begin > floor and not text[begin - 1].isspace():
        begin -= 1
    return text[begin:end].strip(_EDGE), begin


def word_after(text: str, end: int) -> str:
    """The whitespace-separated word that starts after ``end`` ("" at the end of the text)."""
    begin = end
    ceiling = min(len(text), end + WINDOW)
    while begin < ceiling and text[begin].isspace():
        begin += 1
    stop = begin
    while stop < ceiling and not text[stop].isspace():
        stop += 1
    return text[begin:stop].strip(_EDGE)


def starts_sentence(text: str, start: int) -> bool:
    """Whether only spaces and opening quotes lie between the last sentence end and ``start``."""
    index = start
    floor = max(0, start - WINDOW)
    while index > floor and (text[index - 1].isspace() or text[index - 1] in "\"'“‘(["):
        index -= 1
    return index == 0 or text[index - 1] in ".!?…:"


def is_name(word: str) -> bool:
    """A capitalized word ("Main", "Louis"), not an all-capital one ("I", "USA") or a number."""
    return len(word) > 1 and word[0].isupper() and word[1:].islower() and word.isalpha()


def ends_sentence(text: str, end: int) -> bool:
    """Whether a period at ``end - 1`` also ends the sentence: the text ends there, or a closing quote,
    or a word that mostly starts sentences ("etc. Then ..."), follows. Before a name ("U.S. Route", "p.m.
    PDT") it is taken for the abbreviation's own period."""
    after = text[end : end + WINDOW].lstrip()
    if not after or after[0] in '"”’)]':
        return not after or after[1:2] in ("", " ")
    first = after.split(None, 1)[0].strip("\"'“”‘’,;:!?.")
    return first in SENTENCE_STARTERS


def word_follows(text: str, end: int) -> bool:
    """Whether a word (not the end of the text or punctuation) comes next."""
    return text[end : end + WINDOW].lstrip()[:1].isalnum()


DETERMINERS = frozenset({"a", "an", "the", "this", "that", "our", "my", "your", "his", "her", "their", "its"})
_NOT_NOUNS = frozenset(
    {"of", "in", "on", "at", "to", "for", "and", "or", "per", "a", "an", "the", "is", "was"}
)


def before_a_noun(text: str, start: int, end: int) -> bool:
    """ "a 5 km run": after "a"/"an" and before a noun the unit is an adjective, and singular."""
    if word_before(text, start).lower() not in DETERMINERS:
        return False
    after = word_after(text, end).rstrip(".")
    acronym = after.isupper() and len(after) > 1  # "a 2 TB SSD"
    return after.isalpha() and (after.islower() or acronym) and after not in _NOT_NOUNS


def negative_allowed(text: str, start: int) -> bool:
    """A leading minus is a sign after a space, an opening bracket or the start, not after a word."""
    return start == 0 or text[start - 1].isspace() or text[start - 1] in "([{=<>~≈:"
