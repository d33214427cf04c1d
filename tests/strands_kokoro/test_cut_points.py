"""Where a sentence may be cut: lookahead left after the cut, clause marks, weak endings in each language."""

from __future__ import annotations

import math

import pytest

from strands_kokoro.pacing.cut_points import MIN_LOOKAHEAD_WORDS, first_phrase, longest_prefix, words_of


def cut(text: str, *, complete: bool, budget: float = math.inf) -> str | None:
    end = longest_prefix(words_of(text, 0, complete=complete), budget, complete=complete)
    return None if end is None else text[:end]


def test_a_sentence_being_written_is_cut_with_three_written_words_after_the_cut() -> None:
    text = "The old ferry carried farmers and their goats across the riv"  # "riv" is still being written
    piece = cut(text, complete=False)
    assert piece is not None
    after = text[len(piece) :].split()[:-1]  # the written words after the cut (not the partial one)
    assert len(after) >= MIN_LOOKAHEAD_WORDS
    assert piece == "The old ferry carried farmers"  # not "... and their goats" on "the", nor "their"


def test_too_few_written_words_for_a_cut_and_its_lookahead_wait() -> None:
    assert cut("The old ferry carried far", complete=False) is None  # three words and one of lookahead
    assert cut("The old ferry carried farmers and the", complete=False) == "The old ferry"


def test_a_complete_sentence_may_be_cut_before_its_last_word() -> None:
    """Its lookahead is the true rest of the sentence, however short."""
    text = "Light from the sun takes about eight minutes."
    assert cut(text, complete=True, budget=len(text) - 3) == "Light from the sun takes about eight"


def test_a_strong_word_is_chosen_over_a_weak_one_even_early_in_the_piece() -> None:
    # the only strong endings are in the first half: still better than ending on "of the"
    text = "Dogs bark at the edge of the field of the farm near the old house by the river"
    piece = cut(text, complete=False)
    assert piece is not None
    assert piece.split()[-1] not in {"at", "the", "of", "by", "near"}


@pytest.mark.parametrize(
    "text",
    [
        "Le chat dort sur le canapé du salon pendant que les enfants jouent dehors dans le jardin",
        "El perro duerme en la casa de los abuelos mientras los niños juegan en el parque grande",
        "Il gatto dorme sul divano della nonna mentre i bambini giocano nel giardino con gli amici",
        "O gato dorme no sofá da avó enquanto as crianças brincam com os amigos no jardim grande",
    ],
)
def test_articles_and_prepositions_of_other_languages_are_weak_endings(text: str) -> None:
    words = words_of(text, 0, complete=False)
    weak = [text[w.start : w.end] for w in words if w.weak]
    assert len(weak) >= 4, weak  # the language's "the", "of", "in" are known
    piece = cut(text, complete=False)
    assert piece is not None
    assert not words_of(piece, 0, complete=True)[-1].weak, piece


def test_a_first_phrase_of_text_being_written_waits_for_its_lookahead() -> None:
    text = "Domestic cats usually purr while they are being stro"
    words = words_of(text, 0, complete=False)  # eight written words: five and three of lookahead
    end = first_phrase(words, len(text), complete=False)
    assert end is not None and text[:end] == "Domestic cats usually purr"
    shorter = "Domestic cats usually purr while they are"
    assert first_phrase(words_of(shorter, 0, complete=False), len(shorter), complete=False) is None


def test_english_words_spelled_like_a_function_word_elsewhere_are_not_weak() -> None:
    """French "son"/"ton", Portuguese "um", Italian "ed" are a son, a ton, a pause, a name in English."""
    for word in ("son", "ton", "um", "Ed"):
        (only,) = words_of(word, 0, complete=True)
        assert not only.weak, word
