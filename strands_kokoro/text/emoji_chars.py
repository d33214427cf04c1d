"""Which characters are emoji: the one rule, used by the client's speech filter and the model server.

A pictograph is a character of Unicode's Extended_Pictographic property (Unicode 15.1), folded into
ranges, with whole blocks taken where Unicode reserves code points for future pictographs; emoji
components (joiners, keycap marks, variation selectors, tags) go wherever they appear. What each end
keeps is its own choice, passed as ``kept`` (:data:`SAID_EVERYWHERE`: ©, ® and ™).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

__all__ = [
    "COMPONENTS",
    "PICTOGRAPHIC",
    "SAID_EVERYWHERE",
    "emoji_class",
    "is_emoji_char",
    "pictograph_class",
]

PICTOGRAPHIC: Final = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049), (0x2122, 0x2122),
    (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA),
    (0x231A, 0x231B), (0x2328, 0x2328), (0x23CF, 0x23CF), (0x23E9, 0x23F3), (0x23F8, 0x23FA),
    (0x24C2, 0x24C2), (0x25AA, 0x25AB), (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE),
    (0x2600, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C), (0x2B50, 0x2B50),
    (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D), (0x3297, 0x3297), (0x3299, 0x3299),
    (0x1F000, 0x1FAFF), (0x1FC00, 0x1FFFD),
)  # fmt: skip
COMPONENTS: Final = (
    (0x200D, 0x200D),  # zero width joiner (👩‍💻)
    (0x20E3, 0x20E3),  # combining enclosing keycap (1️⃣)
    (0xFE0E, 0xFE0F),  # variation selectors: text / emoji presentation
    (0xE0020, 0xE007F),  # tag characters (subdivision flags 🏴󠁧󠁢󠁳󠁣󠁴󠁿)
)
SAID_EVERYWHERE: Final = "©®™"


def is_emoji_char(ch: str, kept: str = "") -> bool:
    """True for a pictograph or an emoji component (ZWJ, VS16, keycap, tag, skin tone) not in ``kept``."""
    cp = ord(ch)
    return ch not in kept and any(lo <= cp <= hi for lo, hi in (*PICTOGRAPHIC, *COMPONENTS))


def pictograph_class(kept: str = "") -> str:
    """The pictographs but ``kept``, as the inside of a regular expression's ``[...]`` (re or regex)."""
    return _class(PICTOGRAPHIC, kept)


def emoji_class(kept: str = "") -> str:
    """Pictographs (but ``kept``) and components, as the inside of a regular expression's ``[...]``."""
    return _class(PICTOGRAPHIC, kept) + _class(COMPONENTS, "")


def _class(ranges: Iterable[tuple[int, int]], kept: str) -> str:
    out: list[str] = []
    holes = sorted(ord(ch) for ch in set(kept))
    for lo, hi in ranges:
        start = lo
        for hole in (h for h in holes if lo <= h <= hi):
            if start < hole:
                out.append(_span(start, hole - 1))
            start = hole + 1
        if start <= hi:
            out.append(_span(start, hi))
    return "".join(out)


def _span(lo: int, hi: int) -> str:
    return chr(lo) if lo == hi else f"{chr(lo)}-{chr(hi)}"
