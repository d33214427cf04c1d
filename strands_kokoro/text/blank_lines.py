"""A blank line ends a block of text: the one rule, for the speech filter, the sentence chunker and the
model server.

A blank line is two line breaks with nothing but spaces, tabs and carriage returns between them. A
reader pauses there as at a sentence end even without a period (a heading, a list item, a paragraph
that ends without one), so the filter writes one after such a line (:data:`PARAGRAPH_BREAK`), the
chunker ends a chunk at one, a sentence mark followed by one ends its sentence whatever comes next, and
the model server reads one as a sentence end.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

__all__ = ["BLANK_LINE", "PARAGRAPH_BREAK", "blank_line_follows", "has_blank_line"]

PARAGRAPH_BREAK: Final = "\n\n"  # what ends a block: a line break and a blank line
_FILL: Final = (" ", "\t", "\r")  # what a blank line may hold
# A blank line and the spaces around it, as a regular expression (``re`` or ``regex``).
BLANK_LINE: Final = r"[ \t\r]*(?:\n[ \t\r]*){2,}"
_BLANK_IN_GAP: Final = re.compile(r"\n[ \t\r]*\n")


def blank_line_follows(at: Callable[[int], str], k: int) -> bool:
    """``at(k - 1)`` is a line break: is the line from ``k`` on blank? ``at`` reads one character at a
    time (a streaming reader may stop it for more text) and ``""`` past the end."""
    while at(k) in _FILL:
        k += 1
    return at(k) == "\n"


def has_blank_line(gap: str) -> bool:
    """Does this run of whitespace hold a blank line?"""
    return _BLANK_IN_GAP.search(gap) is not None
