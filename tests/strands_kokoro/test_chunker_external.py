"""The chunker on public English test sets, fed the way an LLM streams: in random token-sized pieces.

Data (MIT, provenance inside each file): pySBD's 48 Golden Rules and sentencex's 236 English cases,
copied into ``chunker_data/``. Compared after collapsing whitespace, as both projects do. The floors
are the scores reached so far (a rule change may add passes, never lose one); the scores for each way
of feeding are printed by benchmarks/chunker_scores.py.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from strands_kokoro.text.chunker import IncrementalSentenceChunker

DATA = Path(__file__).parent / "chunker_data"
FLOORS = {"golden": 48, "sentencex": 231}


def load(name: str) -> list[tuple[str, list[str]]]:
    if name == "golden":
        cases = json.loads((DATA / "golden_rules_en.json").read_text())["cases"]
    else:
        cases = json.loads((DATA / "sentencex_en.json").read_text())["en"]
    return [(c["input"], c["expected"]) for c in cases]


def normalise(segments: list[str]) -> list[str]:
    return [s for s in (re.sub(r"\s+", " ", seg).strip() for seg in segments) if s]


def segment(pieces: list[str]) -> list[str]:
    chunker = IncrementalSentenceChunker()
    out = [sentence for piece in pieces for sentence in chunker.feed(piece)]
    return out + chunker.flush()


def token_pieces(text: str, rng: random.Random) -> list[str]:
    pieces, i = [], 0
    while i < len(text):
        n = rng.randint(1, 8)
        pieces.append(text[i : i + n])
        i += n
    return pieces


def test_data_sets_are_complete() -> None:
    assert len(load("golden")) == 48
    assert len(load("sentencex")) == 236


@pytest.mark.parametrize("name", ["golden", "sentencex"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_score_fed_in_random_fragments_meets_the_floor(name: str, seed: int) -> None:
    rng = random.Random(seed)
    cases = load(name)
    passed = sum(normalise(segment(token_pieces(text, rng))) == normalise(exp) for text, exp in cases)
    assert passed >= FLOORS[name], f"{name}: {passed}/{len(cases)} is below the floor {FLOORS[name]}"


@pytest.mark.parametrize("name", ["golden", "sentencex"])
def test_whole_text_and_one_char_feeding_give_identical_output(name: str) -> None:
    for text, _ in load(name):
        assert segment(list(text)) == segment([text]), text
