"""Pattern pieces the number rules share (:mod:`.numeric_rules`, :mod:`.amount_rules`)."""

from __future__ import annotations

import re

from tts_container.text.normalization.scanner import Piece, alternation
from tts_container.text.normalization.unit_tables import UNITS

NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
START = r"(?<![\w.,/:\-−])"  # not inside a word, a number, a path or a time
UNIT = alternation(UNITS)
AMOUNT = rf"(?:\d+\s+\d+/\d+|\d+/\d+|{NUM})"


def piece(match: re.Match[str], group: str | int, spoken: str) -> Piece:
    """The part of ``match`` in ``group``, read as ``spoken``."""
    return Piece(match.start(group), match.end(group), spoken)
