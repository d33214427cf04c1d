"""Cut a stream of model text into sentences the moment each one is complete, for a TTS model.

Each character is scanned once and a boundary is decided only from a bounded window after the mark
(:data:`~strands_kokoro.text.sentence_rules.WINDOW`), so the output is the same however the input was
fragmented, and a reported sentence is never taken back. Every :class:`Sentence` is a verbatim slice of
the input with its ``start``/``end`` offsets (counted across flushes); joined they equal the input up to
whitespace. A blank line ends a chunk; ``max_chars`` cuts an over-long sentence. :meth:`flush` ends the
input and resets, and :meth:`IncrementalSentenceChunker.pending` hands out the settled part of the
sentence still being written. Why hand-written: architecture §9, "Text".
"""

from __future__ import annotations

import re

from strands_kokoro.text.blank_lines import blank_line_follows
from strands_kokoro.text.sentence_rules import (
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

__all__ = ["WINDOW", "IncrementalSentenceChunker", "Sentence"]

_BULLETS = "•⁃"
_MARKS = "".join(sorted(TERMINALS | CJK_TERMINALS)) + "\n\"'“”‘’`)" + _BULLETS
_CLAUSE_MARKS = ",;:—"
_HEAD = 48  # characters of a sentence's start kept for its first word and list marker
_COMPACT = 8192  # scanned characters kept in the working string before moving them aside
_QUOTE_REACH = 300  # a quotation opened further back than this no longer holds a sentence open
_HEAD_MARKER = re.compile(r"\s*(?:[•⁃]\s*)?(\d{1,3}|[A-Za-z])(\.\)|\.|\))\s")
_NON_SPACE = re.compile(r"\S")


class Sentence(str):
    """A sentence's text (the ``str`` itself) and where it lies in the text fed: ``[start, end)``."""

    __slots__ = ("end", "start")
    start: int
    end: int

    def __new__(cls, text: str, start: int) -> Sentence:
        sentence = super().__new__(cls, text)
        sentence.start = start
        sentence.end = start + len(text)
        return sentence


class IncrementalSentenceChunker:
    """Feed text fragments, get back the sentences they completed.

    ``feed(fragment) -> list[Sentence]`` returns the sentences the fragment completed; ``flush() ->
    list[Sentence]`` the ones left at the end of input; ``settled`` how far the decisions have reached.
    """

    def __init__(self, *, max_chars: int | None = None) -> None:
        if max_chars is not None and max_chars < 1:
            raise ValueError("max_chars must be a positive number of characters or None")
        self._max_chars = max_chars
        marks = _MARKS + (_CLAUSE_MARKS if max_chars else "")
        self._marks = re.compile("[" + re.escape(marks) + "]")
        self._reset()

    # -- public API -----------------------------------------------------------------------------

    def feed(self, fragment: str) -> list[Sentence]:
        """Add a fragment of text; return the sentences it completed (possibly none), each stripped."""
        if not isinstance(fragment, str):
            raise TypeError(f"feed() takes str, not {type(fragment).__name__}")
        self._buf += fragment
        out: list[Sentence] = []
        self._advance(out, eof=False)
        self._compact()
        return out

    def flush(self) -> list[Sentence]:
        """End of input: return the sentences left (each stripped, in order; [] if none); start over.

        The next ``feed`` begins a new segment: ``settled`` counts from 0 again (sentence offsets do not).
        """
        out: list[Sentence] = []
        self._advance(out, eof=True)
        self._emit(out, self._end)
        self._origin += self._end
        self._reset()
        return out

    def pending(self) -> Sentence:
        """The sentence still being written, up to :attr:`settled` (stripped; empty if there is none)."""
        return self._sentence(self._start, max(self._start, self._scan))

    @property
    def settled(self) -> int:
        """Characters of the current segment (fed since the last flush) that are decided.

        The chunker places no further sentence boundary before this offset, except a ``max_chars``
        forced cut: text before it either went out in a sentence or belongs to the unfinished one. It
        never decreases within a segment and never exceeds the characters fed. It is the scan position:
        it stops on a mark whose verdict waits for more text (``Dr.`` + ``␣``: is a capital next?).
        """
        return self._scan

    # -- state ------------------------------------------------------------------------------------

    def _reset(self) -> None:
        if not hasattr(self, "_origin"):
            self._origin = 0  # characters fed in earlier segments: sentence offsets count on across flushes
        self._parts: list[str] = []  # scanned text of the current chunk that left the working string
        self._buf = ""  # working string: text from absolute offset _base on
        self._base = 0
        self._scan = 0  # absolute offset of the next character to examine
        self._start = 0  # absolute offset where the current chunk begins
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
        if cut - self._base < _COMPACT:
            return
        if self._head is None:
            self._head = self._text(self._start, self._start + _HEAD)
        self._parts.append(self._buf[: cut - self._base])
        self._buf = self._buf[cut - self._base :]
        self._base = cut

    def _sentence(self, start: int, end: int) -> Sentence:
        raw = self._text(start, end)
        text = raw.strip()
        return Sentence(text, self._origin + start + len(raw) - len(raw.lstrip()))

    def _emit(self, out: list[Sentence], end: int) -> None:
        if end < self._base:  # a forced cut inside the moved-aside text: join it back first
            self._buf = "".join(self._parts) + self._buf
            self._base = self._start
        sentence = self._sentence(self._start, end)
        if sentence:
            out.append(sentence)
        self._parts = []
        self._buf = self._buf[end - self._base :]
        self._base = self._start = end
        self._scan = max(self._scan, end)
        self._new_chunk()

    # -- scanning ---------------------------------------------------------------------------------

    def _advance(self, out: list[Sentence], eof: bool) -> None:
        try:
            while self._step(out, eof):
                pass
        except NeedMore:
            pass  # wait for the next fragment; _scan stays on the undecided mark

    def _step(self, out: list[Sentence], eof: bool) -> bool:
        """Examine up to the next mark; False once everything available is scanned.

        The scan stops before any place a boundary could still go: on the mark, or before the ``2``
        of `` 2.`` (or of a `` 2`` ending the text so far) while it may open the next list item, so
        ``settled`` never passes a boundary.
        """
        m = self._marks.search(self._buf, self._scan - self._base)
        j = self._base + m.start() if m else self._end
        stop = j
        if m is None or m.group() in ".)":
            item = self._next_item(j)
            lo = None if item is None else self._item_start(j, item[0], whole=m is not None)
            if lo is not None:
                stop = lo
        limit = self._limit()
        if limit is not None and stop > limit:
            stop = limit
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

    def _examine(self, out: list[Sentence], j: int, eof: bool) -> None:
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
            self._examine_clause(j, w)
        else:
            self._examine_quote(j, w)

    def _take_verdict(self, out: list[Sentence], j: int, boundary: int | None, resume: int) -> None:
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

    def _examine_newline(self, out: list[Sentence], j: int, w: Window) -> None:
        if blank_line_follows(w.at, 1):
            self._emit(out, j)  # a blank line ends a paragraph
            self._scan = j + 1
            return
        self._last_space = j
        self._scan = j + 1

    def _examine_clause(self, j: int, w: Window) -> None:
        """max_chars: remember a clause mark (``,`` before a space, or ``—``) as a place to cut."""
        if w.at(0) == "—" or w.at(1).isspace() or w.at(1) == "":
            self._last_clause = j + 1
        self._scan = j + 1

    def _next_item(self, j: int) -> tuple[str, str] | None:
        """``1. The first item 2. The second item``: in a chunk opened by a list marker, the next item's
        number (or letter) and the marker's style; else None."""
        m = _HEAD_MARKER.match(self._chunk_head(j))
        if m is None:
            return None
        value, style = m.groups()
        return (str(int(value) + 1) if value.isdigit() else chr(ord(value) + 1)), style

    def _item_start(self, j: int, succ: str, whole: bool) -> int | None:
        """Where the next item would begin: after whitespace, ``succ`` ends at j (``whole``) or the text
        before j ends with a beginning of it (``1`` of ``10`` at the end of what was fed)."""
        for n in [len(succ)] if whole else range(1, len(succ) + 1):
            lo = j - n
            text = self._buf[lo - self._base : j - self._base]
            if lo > self._start and text == succ[:n] and self._buf[lo - self._base - 1].isspace():
                return lo
        return None

    def _list_item_cut(self, out: list[Sentence], j: int, w: Window) -> bool:
        """End the chunk before the next list item's number if the mark at j completes its marker."""
        item = self._next_item(j)
        lo = None if item is None else self._item_start(j, item[0], whole=True)
        if item is None or lo is None:
            return False
        c, style = w.at(0), item[1]
        if style == ".)":
            ok = c == "." and w.at(1) == ")" and w.at(2).isspace()
        else:
            ok = c == style and w.at(1).isspace()
        if ok:
            self._emit(out, lo)
        return ok

    def _force_cut(self, out: list[Sentence], limit: int) -> None:
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
