"""Turn an LLM's markdown into text worth speaking, as it streams.

:class:`SpeechTextFilter` removes markup while the text arrives, holding a span split across fragments
(``**bo`` + ``ld**``) back only until it can be decided. Markers, fenced code, images, tags and emoji go;
links are read as their text, table rows as cells; headings, list items and table rows end with a blank
line so the sentence chunker after it starts a new chunk there. It is the only layer that knows
markdown: its output is spoken as it is. :func:`clean_for_speech` applies it to one whole piece of text.
What each construct becomes: architecture §9, "Text".
"""

from __future__ import annotations

import re

from strands_kokoro.text.blank_lines import PARAGRAPH_BREAK
from strands_kokoro.text.emoji_chars import SAID_EVERYWHERE, emoji_class, pictograph_class
from strands_kokoro.text.emoji_chars import is_emoji_char as _is_emoji_char

__all__ = ["SpeechTextFilter", "clean_for_speech", "is_emoji_char"]

# Pictographs the server reads, kept for it: ©, ® and ™; ‼ and ⁉ (the marks they double); ℹ; arrows.
_KEPT = SAID_EVERYWHERE + "‼⁉ℹ↔↕↖↗↘↙↩↪"
_PICTOGRAPHIC_CLASS = pictograph_class(_KEPT)
_EMOJI_CLASS = emoji_class(_KEPT)
_KEYCAP_BASE = "0123456789#*"


def is_emoji_char(ch: str) -> bool:
    """True for an emoji character this filter drops (:mod:`strands_kokoro.text.emoji_chars`; ©, ®, ™, ‼, ⁉,
    ℹ and arrows are kept for the server to read)."""
    return _is_emoji_char(ch, _KEPT)


_PLAIN = re.compile(r"[^\\`*~_\[!<\n" + re.escape(_KEYCAP_BASE) + _EMOJI_CLASS + "]+")
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")
_HEADING = re.compile(r"[ \t]*#{1,6}(?:[ \t]+|$)")
_BULLET = re.compile(r"[ \t]*[-*+•][ \t]+(?=[^ \t])")  # a rule ("* * *") was told apart before it
_RULE = re.compile(r"[ \t]*([-*_=])(?:[ \t]*\1){2,}[ \t]*")
_ORDERED = re.compile(r"[ \t]*\d{1,9}[.)][ \t]+")
_CHECKBOX = re.compile(r"\[[ xX]\](?:[ \t]+|$)")  # a task list's "- [ ] " / "- [x] ": not read
_CHECKBOX_START = re.compile(r"\[(?:[ xX]\]?)?")  # what may still become one
_QUOTE = re.compile(r"[ \t]*(?:>[ \t]?)+")
_TABLE_SEPARATOR = re.compile(r"[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+(?:[ \t]*:?-+:?[ \t]*)?")
_UNDECIDED_PREFIX = re.compile(
    # Line starts whose kind the rest of the line decides (a heading's "#"s, a list marker, a table row,
    # a line of only table-separator characters such as ":-- |"): they wait for it.
    # Behind a quote's ">" too ("> -" may be a quoted list item), and a digit that may become a keycap.
    r"[ \t]*(?:>[> \t]*)?"
    r"(?:`{1,2}|~{1,2}|#{1,6}|[-*+•_=][-*_= \t]*|[-:|][-:| \t]*|\d{1,9}(?:[.)][ \t]*|\ufe0f)?|\|.*)?"
)
# A line that starts with emphasis ("**Lunch**", "**Step 1:** Mix it") or with an emoji ("✅ Done",
# "1️⃣ Preheat") is a label or an item: it ends as a sentence of its own, like a list item.
_LABEL = re.compile(r"[ \t]*(?:\*{1,3}|_{1,3})(?=[^\s*_])")
_EMOJI_ITEM = re.compile(f"[ \t]*(?:[{_PICTOGRAPHIC_CLASS}]|(?P<keycap>\\d)\ufe0f?\u20e3)")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>\n]{0,200})?/?>|<(?:https?://|mailto:)[^<>\s]{1,500}>")
# Tags that end a line or a block where they are shown: the words on either side stay apart.
_BREAK_TAG = re.compile(
    r"</?(?:br|p|div|li|ul|ol|tr|td|th|table|h[1-6]|hr|summary|details|blockquote)\b", re.IGNORECASE
)
_RUNS = re.compile(r"[ \t]+|[^ \t]+")  # output cut into runs of spaces and runs of the rest
_AFTER_GAP = frozenset(".,!?;:…)]}”’\n")  # no space before these where markup was removed
_SPAN_LIMIT = 500  # a link, tag or bracket held back longer than this is read as plain text


class SpeechTextFilter:
    """Incremental markdown-to-speech filter: ``feed(fragment) -> str``, ``flush() -> str``."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._pending = ""
        self._cr = ""  # a fragment's last "\r", until the next one says whether "\n" follows
        self._line_start = True
        self._fence: str | None = None  # the opening fence while inside a fenced code block
        self._drop_line = False  # fence lines, rules, table separators
        self._structural = False  # heading / list item / table row: ends with a blank line
        self._prev = ""  # last character of the current line seen (for intraword "_")
        self._held = ""  # spaces at the end of the output, held until the next text decides them
        self._cut = False  # markup or an emoji was removed after the held spaces began
        self._line_text = False  # the current line has put out some text
        self._gap = False  # the previous line was text ending in one newline (no blank line yet)

    def feed(self, fragment: str) -> str:
        """Add a fragment; return the speakable text it completed ("" while a span is undecided)."""
        if not isinstance(fragment, str):
            raise TypeError(f"feed() takes str, not {type(fragment).__name__}")
        text = self._cr + fragment
        self._cr = "\r" if text.endswith("\r") else ""  # its "\n" may be in the next fragment
        self._pending += _line_ends(text[:-1] if self._cr else text)
        return self._run(final=False)

    def flush(self) -> str:
        """End of input: return what was held back (an unfinished span is read as plain text)."""
        self._pending += _line_ends(self._cr)
        out = self._run(final=True)
        if not self._cut:
            out += self._held
        self._reset()
        return out

    # -- output -----------------------------------------------------------------------------------

    def _put(self, out: list[str], text: str) -> None:
        """Append speakable text, holding trailing spaces back until what follows them is known.

        Where something was removed after a space (an emoji, an image, a tag, a footnote mark: ``Bye
        👋.``, ``see <br>,``), the space goes if punctuation or a line end follows (``Bye.``), and later
        spaces add nothing (``a 🙂 b`` reads ``a b``). Markers around words that are read (``**``,
        ``` ` ```) remove nothing: ``Type `.env` now`` keeps its space. Held spaces only wait for the
        next character, which the chunker needs anyway, and the decision never depends on where a
        fragment ended.
        """
        for run in _RUNS.findall(text):
            if run[0] in " \t":
                # Spaces before a line's first text say nothing (and where a heading's or a bullet's
                # marker ends depends on how much of the line has arrived): they go.
                if not self._cut and self._line_text:
                    self._held += run
                continue
            if self._held and not (self._cut and run[0] in _AFTER_GAP):
                out.append(self._held)
            self._held, self._cut = "", False
            self._line_text = self._line_text or bool(run.strip("\n"))  # (a "\r" is a "\n" by now)
            out.append(run)

    def _removed(self) -> None:
        """Markup or an emoji produced no output (see :meth:`_put`)."""
        if self._held:
            self._cut = True

    # -- the state machine ------------------------------------------------------------------------

    def _run(self, final: bool) -> str:
        p = self._pending
        out: list[str] = []
        i = 0
        while i < len(p):
            if self._line_start:
                n = self._line_prefix(p, i, final, out)
                if n is None:
                    break
                i = n
                continue
            if self._fence is not None or self._drop_line:
                nl = p.find("\n", i)
                if nl < 0:
                    i = len(p)
                    break
                i = nl
                self._drop_line = False
                if self._fence is not None:
                    i += 1
                    self._line_start = True
                continue
            n = self._inline(p, i, final, out)
            if n is None:
                break
            i = n
        self._pending = p[i:]
        return "".join(out)

    def _line_prefix(self, p: str, i: int, final: bool, out: list[str]) -> int | None:
        """Classify a line by its first characters; return where its content starts."""
        nl = p.find("\n", i)
        line = p[i:] if nl < 0 else p[i:nl]
        complete = nl >= 0 or final
        if not complete and _UNDECIDED_PREFIX.fullmatch(line):
            return None  # "##", "- ", "1", "|..." : wait for the rest of the prefix
        item = None if complete else _BULLET.match(line) or _ORDERED.match(line)
        if item and _CHECKBOX_START.fullmatch(line, item.end()):
            return None  # "- [", "- [x": a task's checkbox or a link, decided by the next character
        self._line_start = False
        self._structural = False
        self._prev = ""
        gap, self._gap = self._gap, False
        fence = _FENCE.match(line)
        if self._fence is not None:
            marker = fence.group(1) if fence else ""
            closing = marker[:1] == self._fence[0] and len(marker) >= len(self._fence)
            if fence and closing and not line[fence.end() :].strip():
                self._fence = None
                self._put(out, "\n")
            self._drop_line = True
            return i
        if fence:
            self._fence = fence.group(1)
            self._drop_line = True
            return i
        if _RULE.fullmatch(line) or _TABLE_SEPARATOR.fullmatch(line):
            self._drop_line = True
            return i
        if line.lstrip(" \t").startswith("|"):  # the same leading blanks as every other line prefix
            if not complete:
                self._line_start = True
                self._gap = gap
                return None  # a table row is read cell by cell: wait for the whole row
            cells = [clean_for_speech(cell) for cell in line.split("|")]
            self._structural = True
            self._put(out, "\n" if gap else "")  # a blank line before it too, after a text line
            self._put(out, ", ".join(c for c in cells if c))
            return i + len(line)
        quote = _QUOTE.match(line)
        start = quote.end() if quote else 0  # a quoted line may hold a heading or an item too
        for pattern in (_HEADING, _BULLET, _ORDERED, _LABEL, _EMOJI_ITEM):
            m = pattern.match(line, start)
            if m:
                self._structural = True
                if gap:
                    self._put(out, "\n")
                if pattern is _EMOJI_ITEM and m["keycap"]:
                    self._put(out, m["keycap"] + ".")  # "1️⃣ Mix" is read as "1. Mix" (its space follows)
                    return i + m.end()
                if pattern in (_LABEL, _EMOJI_ITEM):
                    return i + start  # its markers and emoji go as they do anywhere
                if pattern is _ORDERED:
                    self._put(out, m.group(0).strip() + " ")  # "1." kept, as a reader says it
                box = _CHECKBOX.match(line, m.end()) if pattern in (_BULLET, _ORDERED) else None
                return i + (box.end() if box else m.end())
        return i + start

    def _inline(self, p: str, i: int, final: bool, out: list[str]) -> int | None:
        """Handle the text at p[i] inside a line; None to wait for more input."""
        m = _PLAIN.match(p, i)
        if m:
            self._put(out, m.group(0))
            self._prev = m.group(0)[-1]
            return m.end()
        c = p[i]
        nxt = p[i + 1] if i + 1 < len(p) else ""
        needs_next = c in "\\~_!" or c in _KEYCAP_BASE
        if needs_next and not nxt and not final:
            return None
        if c == "\n":
            blank = self._structural
            self._put(out, PARAGRAPH_BREAK if blank else "\n")
            self._gap = self._line_text and not blank
            self._line_text = False
            self._line_start = True
            return i + 1
        if is_emoji_char(c):
            self._removed()
            return i + 1
        if c in _KEYCAP_BASE:
            if nxt in ("\ufe0f", "\u20e3"):
                self._removed()
                return i + 1  # the keycap's base; the components after it go as emoji
            if c == "*":
                if (self._prev.isdigit() and nxt.isdigit()) or (self._prev in " \t" and nxt in " \t"):
                    self._put(out, c)  # "2*3", "5 * 3": a product, not emphasis (no emphasis opens so)
                    self._prev = c
                return i + 1  # emphasis
            self._put(out, c)
            self._prev = c
            return i + 1
        if c == "\\":
            if nxt and not nxt.isalnum() and nxt != "\n" and not is_emoji_char(nxt):
                self._put(out, nxt)
                self._prev = nxt
                return i + 2
            self._put(out, c)
            return i + 1
        if c == "`":
            return i + 1  # inline code is read as its content
        if c == "~":
            if nxt == "~":
                return i + 2
            self._put(out, c)
            return i + 1
        if c == "_":
            if self._prev.isalnum() and nxt.isalnum():
                self._put(out, " ")  # snake_case reads as two words
                self._prev = " "
            return i + 1
        if c == "!" and nxt != "[":
            self._put(out, c)
            self._prev = c
            return i + 1
        if c in "![":
            return self._bracket(p, i, final, out)
        return self._angle(p, i, final, out)

    def _bracket(self, p: str, i: int, final: bool, out: list[str]) -> int | None:
        """``[text](url)`` -> text, ``![alt](url)`` -> nothing, ``[^1]`` -> nothing, else literal."""
        image = p[i] == "!"
        start = i + 2 if image else i + 1
        close = _find_closing(p, start, "[", "]")
        if close is None:
            return self._undecided(p, i, final, out)
        after = close + 1
        if after >= len(p) and not final:
            return None
        text = p[start:close]
        if p.startswith("^", start) and not image:
            self._removed()
            return after  # footnote mark
        if after < len(p) and p[after] in "([":
            end = _find_closing(p, after + 1, p[after], "]" if p[after] == "[" else ")")
            if end is None:
                return self._undecided(p, i, final, out)
            spoken = "" if image else clean_for_speech(text)
            if spoken:
                self._put(out, spoken)
            else:
                self._removed()
            return end + 1
        self._put(out, p[i])  # just brackets: read what is inside as usual
        return i + 1

    def _angle(self, p: str, i: int, final: bool, out: list[str]) -> int | None:
        m = _TAG.match(p, i)
        if m:
            if _BREAK_TAG.match(m.group(0)) and not self._held:
                self._put(out, " ")  # "tea<br>coffee" is two words, not "teacoffee"
            self._removed()
            return m.end()
        if ">" not in p[i : i + _SPAN_LIMIT] and "\n" not in p[i : i + _SPAN_LIMIT]:
            return self._undecided(p, i, final, out)
        self._put(out, "<")
        self._prev = "<"
        return i + 1

    def _undecided(self, p: str, i: int, final: bool, out: list[str]) -> int | None:
        """A span still open: wait, unless the input ended, the line ended or it grew too long."""
        rest = p[i : i + _SPAN_LIMIT]
        if not final and "\n" not in rest and len(rest) < _SPAN_LIMIT:
            return None
        self._put(out, p[i])
        self._prev = p[i]
        return i + 1


def _line_ends(text: str) -> str:
    """Windows' and old Macs' line ends as ``\n``: a rule, a table separator or a list ending in
    ``\r\n`` was not told apart (``---`` was read aloud)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _find_closing(p: str, start: int, opener: str, closer: str) -> int | None:
    """Index of the bracket closing at ``start`` (one level of nesting), or None if not seen yet."""
    depth = 0
    for k in range(start, min(len(p), start + _SPAN_LIMIT)):
        c = p[k]
        if c == "\n":
            return None
        if c == opener:
            depth += 1
        elif c == closer:
            if depth == 0:
                return k
            depth -= 1
    return None


def clean_for_speech(text: str) -> str:
    """Speakable form of one whole piece of text (a sentence, a table cell): the filter's output with
    whitespace runs collapsed to one space and the ends stripped."""
    f = SpeechTextFilter()
    return " ".join((f.feed(text) + f.flush()).split())
