"""Cut a stream of model text into sentences the moment each one is complete, for a TTS model.

Why hand-written: the segmenters the field uses (pySBD, sentencex, blingfire, spaCy) take a whole text
and re-segment it from the start; run on a growing buffer they cost quadratic time and may move a
boundary they already reported. A speaking agent needs the opposite: a sentence is handed to the TTS
model as soon as it is certain, and never taken back. So this chunker scans each character once
(keeping a scan position, never searching the buffer from its start again), and decides a boundary
only from a bounded window after the terminal mark (:data:`~strands_kokoro.sentence_rules.WINDOW`
characters at most, usually just the space and the next letter). Because every decision sees the same
window however the input was fragmented, the output is identical for the whole text, one character
at a time, or token-sized pieces. The language rules live in :mod:`strands_kokoro.sentence_rules`.

Nothing is lost: the sentences (stripped of surrounding whitespace) joined together equal the input
up to whitespace. What is held back between feeds is the unfinished sentence plus at most the window.

Markdown and the order of the layers. ``KokoroSpeech`` runs ``SpeechTextFilter.feed`` FIRST and feeds
its output to this chunker: the filter knows markdown (it removes fenced code blocks entirely, drops
emphasis and emoji, and ends headings, list items and table rows with a blank line), the chunker knows
sentences. The chunker is still safe on raw markdown: a fenced code block (```` ``` ```` or ``~~~``) is
never split, it comes out as one chunk of its own (which ``clean_for_speech`` turns into ""), and a
line that starts a list item, heading, quote or table row starts a new chunk.

Options (off by default, so the default output is plain sentences):

- ``first_chunk_words=N``: the first chunk is cut early at a clause mark (``,`` ``;`` ``:`` ``—``)
  once it holds at least N words, so the first audio starts sooner; with neither that nor a sentence
  end by its 2N-th word (``_WORD_CUT_FACTOR``), at the whitespace after it (never in a word or URL).
- ``max_chars=M``: no chunk is longer than M characters (code blocks excepted); an over-long sentence
  is cut at its last clause mark past a third of M, else at its last space, else at M.

``flush()`` ends the input: it returns what is left (with the sentences only the end of input could
settle, joined by a space) and resets the chunker, so one instance serves one text segment after
another.
"""

from __future__ import annotations

import re

from strands_kokoro.sentence_rules import (
    CJK_TERMINALS,
    LEFT,
    TERMINALS,
    WINDOW,
    NeedMore,
    SentenceContext,
    Window,
    decide_cjk,
    decide_terminal,
    quote_role,
)

__all__ = ["WINDOW", "IncrementalSentenceChunker"]

_BASE_MARKS = ".!?…。！？\n\"'“”‘’`)•⁃"
_CLAUSE_MARKS = ",;:—"
_BULLETS = "•⁃"
_HEAD = 48  # characters of a sentence's start kept for its first word and list marker
_COMPACT = 8192  # scanned characters kept in the working string before moving them aside
_QUOTE_REACH = 300  # a quotation opened further back than this no longer holds a sentence open
_WORD_CUT_FACTOR = 2  # first_chunk_words=N: with no clause mark by word N * this, cut at a space
_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")
_STRUCTURAL_LINE = re.compile(r"[ \t]{0,3}(?:[-*+•⁃][ \t]|\d{1,3}[.)][ \t]|#{1,6}[ \t]|>|\|)")
_HEAD_MARKER = re.compile(r"\s*(?:[•⁃]\s*)?(\d{1,3}|[A-Za-z])(\.\)|\.|\))\s")
_WORD_START = re.compile(r"(?<!\S)\S")
_NON_SPACE = re.compile(r"\S")
_SPACE = re.compile(r"\s")


class IncrementalSentenceChunker:
    """Feed text fragments, get back the sentences they completed."""

    def __init__(self, first_chunk_words: int | None = None, max_chars: int | None = None) -> None:
        if first_chunk_words is not None and first_chunk_words < 1:
            raise ValueError("first_chunk_words must be a positive number of words or None")
        if max_chars is not None and max_chars < 1:
            raise ValueError("max_chars must be a positive number of characters or None")
        self._first_chunk_words = first_chunk_words
        self._max_chars = max_chars
        marks = _BASE_MARKS + (_CLAUSE_MARKS if first_chunk_words or max_chars else "")
        self._marks = re.compile("[" + re.escape(marks) + "]")
        self._reset()

    # -- public API -----------------------------------------------------------------------------

    def feed(self, fragment: str) -> list[str]:
        """Add a fragment of text; return the sentences it completed (possibly none)."""
        if not isinstance(fragment, str):
            raise TypeError(f"feed() takes str, not {type(fragment).__name__}")
        self._buf += fragment
        out: list[str] = []
        self._advance(out, eof=False)
        self._compact()
        return out

    def flush(self) -> str | None:
        """End of input: return what is left (None if nothing) and start over."""
        out: list[str] = []
        self._advance(out, eof=True)
        rest = self._text(self._start, self._end).strip()
        if rest:
            out.append(rest)
        self._reset()
        return " ".join(out) if out else None

    # -- state ------------------------------------------------------------------------------------

    def _reset(self) -> None:
        self._parts: list[str] = []  # scanned text of the current chunk that left the working string
        self._buf = ""  # working string: text from absolute offset _base on
        self._base = 0
        self._scan = 0  # absolute offset of the next character to examine
        self._start = 0  # absolute offset where the current chunk begins
        self._emitted_any = False
        self._at_stream_start = True
        self._fence: str | None = None  # the opening fence while inside a fenced code block
        # first_chunk_words: words counted up to _words_upto; where the N-th and 2N-th start, and the
        # whitespace ending the 2N-th (-1: not yet); no whitespace from the 2N-th up to _space_from
        self._words, self._words_upto, self._word_n, self._word_cut_at = 0, 0, -1, -1
        self._space_at, self._space_from = -1, 0
        self._new_chunk()

    def _new_chunk(self) -> None:
        self._head: str | None = None  # the chunk's first characters, once they left _buf
        self._depth = 0
        self._quote_at = -1
        self._quotes_seen = 0
        self._spaced_quotes = 0
        self._last_clause = -1
        self._last_space = -1
        self._lead: int | None = None  # the chunk's first non-space character (max_chars counts from it)

    @property
    def _end(self) -> int:
        return self._base + len(self._buf)

    def _text(self, a: int, b: int) -> str:
        """Text between absolute offsets; ``a`` may lie in the moved-aside part only if it is _start."""
        if a < self._base:
            return "".join(self._parts) + self._buf[: b - self._base]
        return self._buf[a - self._base : b - self._base]

    def _window(self, j: int, eof: bool) -> Window:
        return Window(self._buf[j - self._base : j - self._base + WINDOW], eof)

    def _compact(self) -> None:
        """Move scanned text aside so appending stays O(fragment) however long the sentence grows."""
        cut = self._scan - LEFT - _HEAD
        if self._fence is not None or cut - self._base < _COMPACT:
            return
        if self._head is None:
            self._head = self._text(self._start, self._start + _HEAD)
        self._count_words(cut)  # normally already done: _word_cut counts up to the end of _buf
        self._parts.append(self._buf[: cut - self._base])
        self._buf = self._buf[cut - self._base :]
        self._base = cut

    def _emit(self, out: list[str], end: int) -> None:
        if end < self._base:  # a forced cut inside the moved-aside text: join it back first
            self._buf = "".join(self._parts) + self._buf
            self._base = self._start
        text = self._text(self._start, end).strip()
        if text:
            out.append(text)
            self._emitted_any = True
        self._parts = []
        self._buf = self._buf[end - self._base :]
        self._base = self._start = end
        self._scan = max(self._scan, end)
        self._new_chunk()

    # -- scanning ---------------------------------------------------------------------------------

    def _advance(self, out: list[str], eof: bool) -> None:
        try:
            while self._step(out, eof):
                pass
        except NeedMore:
            pass  # wait for the next fragment; _scan stays on the undecided mark

    def _step(self, out: list[str], eof: bool) -> bool:
        """Examine up to the next mark; False once everything available is scanned."""
        if self._fence is not None:
            return self._step_fence(out, eof)
        if self._at_stream_start:
            if not self._buf and not eof:
                return False
            if self._line_opens_fence(self._window(0, eof), 0):
                self._fence = self._buf.lstrip(" \t")[:3]
            self._at_stream_start = False
            return True
        m = self._marks.search(self._buf, self._scan - self._base)
        j = self._base + m.start() if m else self._end
        stop = j
        limit = self._limit()
        if limit is not None and stop > limit:
            stop = limit
        space = self._word_cut()
        if space is not None and space <= stop:
            self._bulk(space)
            self._emit(out, space)
            return True
        self._bulk(stop)
        if limit is not None and self._scan >= limit and self._end > limit:
            self._force_cut(out, limit)
            return True
        if m is None:
            return False
        self._examine(out, j, eof)
        return True

    def _limit(self) -> int | None:
        """Where max_chars forces a cut: max_chars past the chunk's first non-space character."""
        if self._max_chars is None:
            return None
        if self._lead is None:
            m = _NON_SPACE.search(self._buf, max(self._start, self._base) - self._base)
            if m is None:
                return None
            self._lead = self._base + m.start()
        return self._lead + self._max_chars

    def _bulk(self, stop: int) -> None:
        """Characters with no mark: only the last space matters (for max_chars)."""
        if stop <= self._scan:
            return
        if self._max_chars is not None:
            seg = self._buf[self._scan - self._base : stop - self._base]
            space = max(seg.rfind(" "), seg.rfind("\t"))
            if space >= 0:
                self._last_space = self._scan + space
        self._scan = stop

    def _examine(self, out: list[str], j: int, eof: bool) -> None:
        c = self._buf[j - self._base]
        w = self._window(j, eof)
        if c == "\n":
            self._examine_newline(out, j, w)
        elif c in TERMINALS or c == ")":
            if self._list_item_cut(out, j, w):
                return
            if c == ")":
                self._scan = j + 1
                return
            verdict = decide_terminal(w, self._context(j))
            self._take_verdict(out, j, verdict.boundary, verdict.resume)
        elif c in CJK_TERMINALS:
            verdict = decide_cjk(w)
            self._take_verdict(out, j, verdict.boundary, verdict.resume)
        elif c in _BULLETS:
            before = self._buf[j - self._base - 1] if j > self._start else ""
            if before.isspace() and self._chunk_head(j).lstrip().startswith(c):
                self._emit(out, j)
            self._scan = j + 1
        elif c in _CLAUSE_MARKS:
            self._examine_clause(out, j, w)
        else:
            self._examine_quote(j, w)

    def _take_verdict(self, out: list[str], j: int, boundary: int | None, resume: int) -> None:
        if boundary is not None:
            end = j + boundary
            limit = self._limit()
            if limit is None or end <= limit:
                self._emit(out, end)
                return
        self._scan = j + resume

    def _context(self, j: int) -> SentenceContext:
        lo = max(self._start, j - LEFT)
        return SentenceContext(
            left=self._buf[lo - self._base : j - self._base],
            left_is_whole=lo == self._start,
            head=self._chunk_head(j),
            quote_open=self._depth > 0 and j - self._quote_at <= _QUOTE_REACH,
            quotes_seen=self._quotes_seen,
            spaced_odd=self._spaced_quotes % 2 == 1,
        )

    def _chunk_head(self, j: int) -> str:
        if self._head is not None:
            return self._head
        return self._text(self._start, min(j, self._start + _HEAD))

    def _examine_quote(self, j: int, w: Window) -> None:
        lead = self._buf[max(self._start, j - 8) - self._base : j - self._base]
        prev = lead[-1] if lead and (j - self._start > 8 or not lead.isspace()) else ""
        change, width, alone = quote_role(prev, w, self._depth)
        if alone:
            self._quotes_seen += 1
            self._spaced_quotes += 1
        elif change:
            self._quotes_seen += 1
            if change > 0 and self._depth == 0:
                self._quote_at = j
            self._depth = max(0, self._depth + change)
        self._scan = j + width

    def _examine_newline(self, out: list[str], j: int, w: Window) -> None:
        k = 1
        while w.at(k) in (" ", "\t", "\r"):
            k += 1
        if w.at(k) == "\n":
            self._emit(out, j)  # a blank line ends a paragraph
            self._scan = j + 1
            return
        if self._line_opens_fence(w, 1):
            self._emit(out, j)
            self._fence = w.text[1:].lstrip(" \t")[:3]
            self._scan = j + 1
            return
        head = self._chunk_head(j).lstrip()
        if head.startswith(("#", "|")) or _STRUCTURAL_LINE.match(w.text, 1):
            self._emit(out, j)
        self._last_space = j
        self._scan = j + 1

    @staticmethod
    def _line_opens_fence(w: Window, k: int) -> bool:
        """Does the line starting at offset k open a fenced code block? Reads 8 characters at most."""
        line = w.text[k : k + 8]
        if "\n" not in line:
            w.at(k + 7)
        return _FENCE.match(line) is not None

    def _step_fence(self, out: list[str], eof: bool) -> bool:
        """Inside a fenced block only the closing fence line matters: jump from line to line."""
        assert self._fence is not None
        rel = self._buf.find("\n", self._scan - self._base)
        if rel < 0:
            self._scan = self._end
            return False
        n = self._base + rel
        w = self._window(n + 1, eof)
        line_end = w.text.find("\n")
        if line_end < 0:
            w.at(len(w.text))  # need the whole line (bounded by the window)
            line_end = len(w.text)
        line = w.text[:line_end]
        stripped = line.strip(" \t")
        indent = len(line) - len(line.lstrip(" \t"))
        if indent <= 3 and set(stripped) == {self._fence[0]} and len(stripped) >= len(self._fence):
            self._fence = None
            self._emit(out, n + 1 + line_end)
            return True
        self._scan = n + 1
        return True

    def _examine_clause(self, out: list[str], j: int, w: Window) -> None:
        c = w.at(0)
        after = w.at(1)
        if c == "—" or after.isspace() or after == "":
            self._last_clause = j + 1
            self._count_words(j)
            if not self._emitted_any and 0 <= self._word_n < j:  # N words before the mark
                self._emit(out, j + 1)
                return
        self._scan = j + 1

    def _count_words(self, upto: int) -> None:
        """Where the first chunk's N-th and 2N-th words start (counted from the segment's start)."""
        n = self._first_chunk_words
        if n is None or self._emitted_any or self._word_cut_at >= 0 or upto <= self._words_upto:
            return
        lo = max(self._words_upto, self._base)  # a lookbehind at _buf's start sees a chunk start
        for m in _WORD_START.finditer(self._buf, lo - self._base, upto - self._base):
            self._words += 1
            if self._words == n:
                self._word_n = self._base + m.start()
            if self._words == n * _WORD_CUT_FACTOR:
                self._word_cut_at = self._base + m.start()
                break
        self._words_upto = upto

    def _word_cut(self) -> int | None:
        """The first chunk's word cut: the first whitespace past its 2N-th word's start and the scan
        (a mark's verdict may move the scan past a space), once it has arrived; else None."""
        if self._first_chunk_words is None or self._emitted_any:
            return None
        self._count_words(self._end)
        if self._word_cut_at < 0:
            return None
        if self._space_at < self._scan:
            frm = max(self._space_from, self._scan, self._word_cut_at)
            m = _SPACE.search(self._buf, frm - self._base)
            if m is None:
                self._space_from = self._end
                return None
            self._space_at = self._base + m.start()
        return self._space_at

    def _list_item_cut(self, out: list[str], j: int, w: Window) -> bool:
        """``1. The first item 2. The second item``: a chunk opened by a list marker ends at the next."""
        m = _HEAD_MARKER.match(self._chunk_head(j))
        if m is None:
            return False
        value, style = m.groups()
        succ = str(int(value) + 1) if value.isdigit() else chr(ord(value) + 1)
        c = w.at(0)
        if style == ".)":
            ok = c == "." and w.at(1) == ")" and w.at(2).isspace()
        else:
            ok = c == style and w.at(1).isspace()
        lo = j - len(succ)
        if not ok or lo <= self._start or self._buf[lo - self._base : j - self._base] != succ:
            return False
        before = self._buf[lo - self._base - 1]
        if not (before.isspace() or before in _BULLETS):
            return False
        self._emit(out, lo - 1 if before in _BULLETS else lo)
        return True

    def _force_cut(self, out: list[str], limit: int) -> None:
        """max_chars: cut at the last clause mark past a third of the limit, else the last space."""
        assert self._max_chars is not None and self._lead is not None
        if self._last_clause > self._lead + self._max_chars // 3:
            cut = self._last_clause
        elif self._buf[limit - self._base].isspace():
            cut = limit  # the text up to the limit ends with a whole word
        elif self._last_space > self._lead:
            cut = self._last_space
        else:
            cut = limit
        clause, space = self._last_clause, self._last_space
        self._emit(out, cut)
        self._last_clause = clause if clause > cut else -1
        self._last_space = space if space > cut else -1
