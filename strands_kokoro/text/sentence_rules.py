"""Where an English sentence ends: the decision the streaming chunker asks about each terminal mark.

Every rule looks at a bounded *window* from the mark and a bounded *left* context in the sentence; when
the window ends before it can decide and more input may come it raises :class:`NeedMore`, so its answer
cannot depend on how the input was fragmented. A period ends a sentence before whitespace and a
capitalised word unless the word before is a title, an initial in a name, a list marker or a known
abbreviation before a word that does not open sentences; a run of marks with ``?`` or ``!`` ends like
``?``. Initials lean towards one sentence: a split inside a name is heard, a missed split barely
(architecture §9, "Text").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from strands_kokoro.text.blank_lines import has_blank_line

#: The most characters any decision reads past the mark it is deciding. Bounds the chunker's holdback.
WINDOW = 128

#: ``‽`` ``⁇`` ``⁈`` ``⁉`` are the one-character forms of ``?!`` and its kin.
TERMINALS = frozenset(".!?…‽⁇⁈⁉")
CJK_TERMINALS = frozenset("。！？")
#: Characters that may follow a terminal mark and still belong to the sentence ("Stop." / (See p.))
CLOSERS = frozenset("\"'”’»)]}」』）】〉》›`*_")
#: Characters that may open the next sentence before its first letter ("Hi. 'Go,' he said.")
OPENERS = frozenset("\"'“‘«([{「『（【〈《‹`*_¿¡")
QUOTES = frozenset("\"'“”‘`")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Prepositive abbreviations: followed by a name or a number, never the end of a sentence.
_TITLES = _words(
    "mr mrs ms dr prof st mt gen gov sen rep rev hon capt lt col sgt cmdr adm pres supt messrs mme "
    "mlle fr vol vols fig figs eq e.g i.e vs cf approx viz"
)
# Abbreviations a number follows ("Jan. 5", "p. 55", "5 ft. 6 in."): before a digit, no end.
_BEFORE_NUMBER = _words("""
    jan feb mar apr jun jul aug sep sept oct nov dec no nos n° nº p pp vol ch fig sec art ed v ver
    op ca c ref eq tel ext ft in lb lbs oz mi yd sq fl km kg cm mm m g pt qt gal hr hrs min mo yr yrs
    st page b.c a.d b.c.e c.e""")
# Acronyms used as nouns' modifiers ("U.S. Government"): a sentence ends after them only before a
# word that typically opens a sentence ("U.S. How about you?").
_NOUN_ACRONYMS = _words("u.s u.k u.n u.s.a e.u")
# Countries written as initials: a chain of capitals spelling one ends a sentence ("like U. A. E.
# Start"); three letters at least, since "U. S. Grant" and "U. N. Owen" are names.
_COUNTRY_INITIALS = _words("u.a.e u.s.a u.s.s.r")
_TIMES = _words("a.m p.m")
# What goes on after "a.m."/"p.m." with a capital: a time zone ("3 p.m. EST") or a day ("9 a.m. Monday
# through Friday"); not months, which "May" and "March" make ambiguous.
_AFTER_TIMES = _words("""
    est edt cst cdt mst mdt pst pdt et ct mt pt gmt utc bst cet cest ist aest jst
    monday tuesday wednesday thursday friday saturday sunday""")
_ERAS = _words("b.c a.d b.c.e c.e")
# Words that open a clause as a time/place adverbial: "At 5 a.m. Mr. Smith went ..." does not end.
_PREPOSITIONS = _words("at on in by around about before after until till from since during")
# Words that typically start an English sentence; used where an abbreviation makes a period ambiguous.
_STARTERS = _words("""
    i you he she it we they the a an this that these those my your his her its our their some many
    most all each every what when where why how who which whose but and or so yet however then there
    here also now still thus therefore meanwhile if although though because since while after before
    as at in on for from to with by of is are was were do does did can could will would should may
    might must have has had let please yes not once next finally first today tomorrow yesterday""")
# Words that start with an apostrophe, not a quotation: 'Tis, 'em, and tokenised contractions ('s, 're).
_ELISIONS = _words("tis twas em cause til n bout round s re ll ve d m t")
_LIST_MARKER = re.compile(r"(?:[•⁃‣◦▪]\s*)?(?:\d{1,3}|[A-Za-z])")
_CITATION = re.compile(r" ?\[\d[\d,–\- ]{0,12}\]")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_INITIAL = re.compile(r"[A-Z]\.")
_CAPITALS = re.compile(r"[A-Z](?:\.[A-Z])*")  # the word before a period: "T", "T.S", "J.R.R"
# What opens a Chinese or Japanese sentence: a Han character, a kana or a CJK opening bracket.
_CJK_START = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff「『（【〈《]")


class NeedMore(Exception):
    """The window ends before the rule can decide and more input may still arrive."""


class Window:
    """Text from the mark on; reading past its end raises NeedMore unless the input is complete."""

    __slots__ = ("complete", "text")

    def __init__(self, text: str, complete: bool) -> None:
        self.text = text[:WINDOW]
        # Past WINDOW characters a rule decides as if the input ended there: a bounded holdback.
        self.complete = complete or len(text) >= WINDOW

    def at(self, k: int) -> str:
        """The character at offset k, or "" past the end of a complete window."""
        if k < len(self.text):
            return self.text[k]
        if self.complete:
            return ""
        raise NeedMore


@dataclass(slots=True)
class SentenceContext:
    """What the chunker knows about the current sentence, left of the mark."""

    left: str  # up to the last LEFT characters of the sentence before the mark
    left_is_whole: bool  # left starts at the sentence's start
    head: str  # the first characters of the sentence (for its first word)
    quote_open: bool  # inside a quotation opened in this sentence (recently)
    quotes_seen: int  # quotation marks met so far in this sentence
    spaced_odd: bool  # an odd number of quotes standing alone (tokenised text: " '' ") so far


#: How many characters of left context the rules use.
LEFT = 96


@dataclass(slots=True, frozen=True)
class Verdict:
    """``boundary``: offset after which the sentence ends, or None; ``resume``: where to scan on."""

    boundary: int | None
    resume: int


def _is(c: str, chars: frozenset[str]) -> bool:
    return c != "" and c in chars


def _prev_tokens(left: str) -> list[str]:
    return left.split()[-4:]


def _strip_openers(token: str) -> str:
    return token.lstrip("".join(OPENERS))


def clause_first_word(ctx: SentenceContext) -> str:
    """The first word of the clause the mark is in (after the last ``:``/``;``, or the sentence's)."""
    cuts = [m.end() for m in re.finditer(r"[:;]\s", ctx.left)]
    text = ctx.left[cuts[-1] :] if cuts else (ctx.left if ctx.left_is_whole else ctx.head)
    m = _WORD.search(text)
    return m.group(0).lower() if m else ""


def _read_run(w: Window, k: int) -> int:
    """Offset after a run of terminal marks (``?!``, ``...``, spaced ``. . .``) starting at k."""
    while True:
        c = w.at(k)
        if _is(c, TERMINALS):
            k += 1
        elif c == " " and _is(w.at(k + 1), TERMINALS):
            k += 2
        else:
            return k


def _spaced_quote_opens(w: Window, k: int, quote: str, ctx: SentenceContext, closed: int) -> bool:
    """A quote standing alone after a sentence's end (``done . ' Next``): opener or closer?"""
    if (ctx.quote_open and closed == 0) or ctx.spaced_odd:
        return False
    k2 = k + len(quote)
    while w.at(k2) == " ":
        k2 += 1
    if w.at(k2) in ",;:" or _is(w.at(k2), TERMINALS):
        return False  # "shower. ' , Tim": punctuation follows, so it closes
    if ctx.quotes_seen:
        return True
    # No quotation in this sentence: it opens one if its partner follows soon.
    if quote in w.text[k + len(quote) : k + 80]:
        return True
    w.at(k + 79)
    return False


def decide_terminal(w: Window, ctx: SentenceContext) -> Verdict:
    """Decide the terminal mark at offset 0 of ``w`` (``.``, ``!``, ``?`` or ``…``)."""
    run_end = _read_run(w, 0)
    run = w.text[:run_end]
    dots = run.replace(" ", "")
    left = ctx.left
    sentence_so_far = left.strip().lstrip("".join(OPENERS)) if ctx.left_is_whole else "x"
    no = Verdict(None, run_end)
    if not sentence_so_far:
        return no  # ". . . The practice" opening a sentence
    if left.endswith(("[", "(")) and dots in ("...", "…"):
        return no  # omission marker "[...]"
    if run == "." and ctx.left_is_whole and _LIST_MARKER.fullmatch(sentence_so_far):
        return no  # "1. The first item", "a. The first item"
    end, closed = _closing_marks(w, run_end, ctx)
    if ctx.quote_open and closed == 0:
        return no  # '"How many? I don't know."' stays one sentence
    yes = Verdict(end, end)
    nxt = w.at(end)
    if nxt == "":
        return yes
    if _CJK_START.match(nxt) and (dots == "." or dots.strip(".…")) and not ctx.left[-1:].isdigit():
        return yes  # Chinese and Japanese put no space after a sentence: "好!我"
    if not nxt.isspace():
        return no  # "3.14", "example.com", "Jr.'s", "p.m.,"
    k = _next_sentence_start(w, end)
    if k is None:
        return yes  # the text ends, or a blank line: the sentence ends whatever follows
    first = w.at(k)
    next_word = functools.partial(_next_word, w, _WORD.match(w.text, k))
    if first == "" or first in ",;:" or _is(first, TERMINALS):
        return no
    is_ellipsis = dots != "." and not dots.strip(".…")  # "?!", "!!", "?..." read as "?" / "!"
    if is_ellipsis:
        if first.islower() or first.isdigit() or (first == "I" and next_word() == "I"):
            return no
        if run == ". . . ." and not left.endswith(" "):
            return Verdict(1, 1)  # "compounds. . . . The practice": the period ends, ". . ." starts
        return yes
    if dots != ".":  # ! ? and their runs
        return no if first.islower() or first.isdigit() else yes
    return _period_verdict(w, ctx, k, next_word, yes, no)


def _closing_marks(w: Window, k: int, ctx: SentenceContext) -> tuple[int, int]:
    """Where the marks closing a sentence end, from ``k`` (quotes, brackets, citations ("gas. [1]"),
    tokenised "! '' ." and more marks), and how many of them are quotes."""
    closed = 0
    while True:
        c = w.at(k)
        if _is(c, CLOSERS) or _is(c, TERMINALS):
            closed += c in QUOTES or c in "”’"
            k += 1
            continue
        if c == "[" or (c == " " and w.at(k + 1) == "["):
            if w.text.find("]", k, k + 17) < 0:
                w.at(k + 16)  # a citation is short: have all of it before matching
            if m := _CITATION.match(w.text, k):
                k = m.end()
                continue
        if c == " ":
            q = w.at(k + 1)
            if _is(q, QUOTES) or q == "’":
                quote = "''" if q == "'" and w.at(k + 2) == "'" else q
                after = w.at(k + 1 + len(quote))
                if after in ("", " ", "\n") and not _spaced_quote_opens(w, k + 1, quote, ctx, closed):
                    closed += 1
                    k += 1 + len(quote)
                    continue
            if _is(q, TERMINALS) and w.at(k + 2) in ("", " ", "\n"):
                k += 2
                continue
        return k, closed


def _next_sentence_start(w: Window, end: int) -> int | None:
    """Where the next sentence would begin after the gap at ``end`` (past its opening marks); None when
    the text ends there or the gap holds a blank line."""
    k = end
    while (c := w.at(k)).isspace() and c != "":
        k += 1
    if c == "" or has_blank_line(w.text[end:k]):
        return None
    while _is(w.at(k), OPENERS):
        k += 1
    return k


def _next_word(w: Window, word_match: re.Match[str] | None) -> str:
    """The next word, read only by the rules that need it (most need just its first letter)."""
    if word_match is None:
        return ""
    w.at(word_match.end() + 1)  # an apostrophe and a letter could still extend it
    return word_match.group(0)


def _period_verdict(
    w: Window, ctx: SentenceContext, k: int, next_word: Callable[[], str], yes: Verdict, no: Verdict
) -> Verdict:
    """A single period before a capital, a digit or a word at ``k``: a sentence end or an
    abbreviation's, by the token before it."""
    first = w.at(k)
    tokens = _prev_tokens(ctx.left)
    token = _strip_openers(tokens[-1]).rpartition("/")[2] if tokens else ""
    key = token.lower()
    before = tokens[-2] if len(tokens) >= 2 else ""
    if key.lstrip("0123456789") in _TIMES or (key == "m" and before.lower() == "a."):
        if first.isdigit():
            return yes  # "7 a.m. is before 7 p.m. 7 a.m. is before dinner."
        if first.islower() or first in "-–—":
            return no  # "8 a.m. – 6 p.m." is a range
        if next_word().lower() in _AFTER_TIMES:
            return no  # "9 a.m. Monday through Friday", "3:00 p.m. EST."
        if next_word().lower() in _STARTERS:
            return yes
        return no if clause_first_word(ctx) in _PREPOSITIONS else yes
    if first.isdigit():
        # "p. 55", "Jan. 5", "5 ft. 6 in." go on; "before dinner. 7 a.m. is" ends.
        return no if key in _BEFORE_NUMBER or key in _TITLES or not token[-1:].isalpha() else yes
    if first.islower():
        return no  # "5 lb. of flour", "e.g. the"
    if key in _TITLES:
        return no
    if key in _NOUN_ACRONYMS:
        return yes if next_word().lower() in _STARTERS else no
    if key in _ERAS:
        if next_word().lower() in _STARTERS:
            return yes
        return no if clause_first_word(ctx) in _PREPOSITIONS else yes
    if _CAPITALS.fullmatch(token):
        if first.isupper() and w.at(k + 1) == ".":
            return no  # inside a chain of initials: "U. A. E."
        return _initial_verdict(tokens, token, next_word(), yes, no)
    return yes


def _initial_verdict(tokens: list[str], token: str, next_word: str, yes: Verdict, no: Verdict) -> Verdict:
    """The period of a capital (``E``) or dotted capitals (``T.S``) before a capitalised word.

    ``T. S. Eliot`` / ``J.R.R. Tolkien`` / ``Jonas E. Smith`` go on; ``you and I. Did`` /
    ``like U. A. E. Start`` / ``took vitamin C. Doctors`` end (see the module's notes on initials).
    """
    if next_word.lower() in _STARTERS:
        return yes
    i = len(tokens) - 2
    while i >= 0 and _INITIAL.fullmatch(_strip_openers(tokens[i])):
        i -= 1
    letters = [_strip_openers(t)[0] for t in tokens[i + 1 : -1]] + token.split(".")
    if len(letters) > 1:  # a chain: initials of a name, unless they spell a country
        return yes if ".".join(letters).lower() in _COUNTRY_INITIALS else no
    if i < 0:
        return no  # the sentence opens with the initial
    word = _strip_openers(tokens[i])
    return no if word[:1].isupper() and word[-1:].isalpha() else yes


def decide_cjk(w: Window) -> Verdict:
    """``。！？`` (and their runs: ``？！``) end a sentence without a following space; closing brackets
    stay with it. An ASCII ``.``, ``!`` or ``?`` right before a Han character or a kana does too (see
    :func:`decide_terminal`): models writing Chinese or Japanese mix both widths."""
    k = 0
    while _is(w.at(k), CJK_TERMINALS) or _is(w.at(k), CLOSERS):
        k += 1
    return Verdict(k, k)


def quote_role(prev: str, w: Window, depth: int) -> tuple[int, int, bool]:
    """Classify the quote at offset 0: returns (depth change, characters consumed, stands alone).

    ``prev`` is the character before it ("" at the sentence start, where even a quote standing
    alone opens a quotation). Letters on both sides make an
    apostrophe (don't); space before and a letter after open ('Tis excepted); a letter before and a
    space after close. A quote standing alone between spaces (tokenised text) is only counted: it is
    too ambiguous to hold a sentence open.
    """
    q = w.at(0)
    width = 2 if q in "'`" and w.at(1) == q else 1
    nxt = w.at(width)
    before_space = prev == "" or prev.isspace() or _is(prev, OPENERS)
    after_space = nxt == "" or nxt.isspace() or not nxt.isalnum()
    if q == "“" or q == "‘":
        return 1, width, False
    if q == "”":
        return -1, width, False
    if not before_space and not after_space:
        return 0, width, False  # apostrophe inside a word
    if before_space and not after_space:
        if q == "'":
            k = width
            while k < width + 7 and w.at(k).isalpha():
                k += 1
            if nxt.isdigit() or w.text[width:k].lower() in _ELISIONS:
                return 0, width, False  # '80s, 'Tis, 'em
        return 1, width, False
    if not before_space and after_space:
        return (-1 if depth > 0 else 0), width, False
    if (nxt.isspace() or nxt == "") and prev != "":
        return (-1, width, False) if depth > 0 else (0, width, True)
    return (-1 if depth > 0 else 1), width, False
