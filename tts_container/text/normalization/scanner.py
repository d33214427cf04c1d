"""Apply an ordered list of rules to a sentence and collect what each rewrites.

A rule is a regular expression and a handler. At each place where some rule's expression matches, the
rules are tried in order and the first handler that accepts its match (returns pieces, not ``None``)
wins; the text it matched is then done, and scanning goes on after it. A handler returns
:class:`Piece` s: a span of the written text and the words spoken for it. Spans a rule does not cover
stay as written. Handlers say one piece per written word where they can (``60 km/h`` is "sixty" and
"kilometers per hour"), so captions can show each written word while its spoken words are heard.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Piece:
    """``text[start:end]`` is spoken as ``spoken`` (which may be empty: the span is not said)."""

    start: int
    end: int
    spoken: str


Handler = Callable[[re.Match[str], bool], list[Piece] | None]


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of thing to read (a time, a unit after a number, ...). ``handle(match, british)``."""

    name: str
    pattern: re.Pattern[str]
    handle: Handler


def alternation(words: Iterable[str]) -> str:
    """A regular-expression alternative of ``words``, longest first (so "km/h" wins over "km")."""
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
_BACKREF = re.compile(r"\(\?P=\w+\)")


class Scanner:
    """The rules, in priority order, and one expression that finds where any of them may start."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self._rules = tuple(rules)
        for rule in self._rules:
            if _BACKREF.search(rule.pattern.pattern):
                raise ValueError(f"rule {rule.name!r}: back references cannot join the candidate pattern")
        anywhere = "|".join(f"(?:{_NAMED_GROUP.sub('(?:', r.pattern.pattern)})" for r in self._rules)
        self._candidates = re.compile(anywhere)

    def pieces(self, text: str, british: bool) -> list[Piece]:
        """Every rewrite in ``text``, in order, never overlapping."""
        found: list[Piece] = []
        position = 0
        while (candidate := self._candidates.search(text, position)) is not None:
            at = candidate.start()
            position = at + 1
            for rule in self._rules:
                match = rule.pattern.match(text, at)
                if match is None or match.end() == at:
                    continue
                accepted = rule.handle(match, british)
                if accepted is None:
                    continue
                found.extend(accepted)
                position = max(match.end(), at + 1)
                break
        return found
