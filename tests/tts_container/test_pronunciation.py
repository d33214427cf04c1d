"""Pronunciation control: inline phonemes, a lexicon, pauses (unit level, real G2P; no model).

What the listener hears is checked over the real server in ``test_voice_mix_and_pronunciation_real``;
here: the marker reaches misaki intact (the speech screen and the normalizer leave it alone), its
phonemes are the ones said, captions show the written word, and a malformed marker is text.
"""

from __future__ import annotations

from functools import cache

import pytest

from strands_kokoro.protocol import SynthesizeRequest
from tts_container.text.g2p import Phonemizer
from tts_container.text.normalization.normalizer import normalize_text
from tts_container.text.pronunciation import (
    MAX_PAUSE_S,
    Pause,
    apply_lexicon,
    hold_phonemes,
    restore_phonemes,
    spoken_parts,
)
from tts_container.text.speakable import screen

KOKORO = "kˈOkəɹO"


@cache
def phonemizer() -> Phonemizer:
    return Phonemizer()


def spoken(text: str, lang: str = "en-us") -> tuple[str, tuple[str, ...]]:
    """What G2P makes of ``text`` after the server's screen: the phonemes and the caption words."""
    screened = screen(SynthesizeRequest(text), lang)
    assert isinstance(screened, SynthesizeRequest), screened
    phonemes = phonemizer().phonemes(screened.text, lang=lang)
    return phonemes.text, phonemes.words


def test_inline_phonemes_are_said_and_captioned_as_the_written_word() -> None:
    plain, _ = spoken("Say Kokoro now.")
    marked, words = spoken(f"Say [Kokoro](/{KOKORO}/) now.")
    assert KOKORO not in plain and KOKORO in marked
    assert words == ("Say", "Kokoro", "now")


def test_phonemes_in_another_script_survive_the_screen_and_numbers_beside_them_are_still_read() -> None:
    # θ is Greek to Unicode: outside a marker it would be a foreign letter and left out.
    phonemes, words = spoken("I [think](/θˈɪŋk/) so, at 3 pm.")
    assert "θˈɪŋk" in phonemes and "θɹˈi" in phonemes  # "3" is still read "three"
    assert words[:2] == ("I", "think")


def test_the_normalizer_leaves_a_marker_as_written() -> None:
    text = "Call [Dr](/dˈɑktəɹ/) Who at 3 pm."
    spoken_text = normalize_text(text).spoken
    assert "[Dr](/dˈɑktəɹ/)" in spoken_text and "three" in spoken_text


def test_espeak_languages_splice_the_phonemes_in_themselves() -> None:
    phonemes, words = spoken(f"Hola [Kokoro](/{KOKORO}/) amigo.", lang="es")
    assert KOKORO in phonemes and words == ("Hola", "Kokoro", "amigo")


@pytest.mark.parametrize(
    "text",
    [
        "Bad [Kokoro](/kˈOk now.",
        "Bad [Kokoro](kˈOkəɹO) now.",
        "Bad [](/kˈOkəɹO/) now.",
        "Wait [pause:soon] now.",
        "Wait [pause:-1s] now.",
    ],
)
def test_a_malformed_marker_is_read_as_text(text: str) -> None:
    phonemes, words = spoken(text)
    assert phonemes and words[0] in ("Bad", "Wait") and words[-1] == "now"
    assert spoken_parts(text) == [text]


def test_the_lexicon_becomes_inline_phonemes_for_whole_words_any_capitalization() -> None:
    lexicon = (("Kokoro", KOKORO),)
    assert apply_lexicon("Kokoro, kokoro's KOKORO; Kokoros", lexicon) == (
        f"[Kokoro](/{KOKORO}/), [kokoro](/{KOKORO}/)'s [KOKORO](/{KOKORO}/); Kokoros"
    )
    # A word written inline keeps its own phonemes.
    assert apply_lexicon("[Kokoro](/kˈɔ/) Kokoro", lexicon) == f"[Kokoro](/kˈɔ/) [Kokoro](/{KOKORO}/)"
    assert apply_lexicon("Kokoro", ()) == "Kokoro"


def test_pauses_cut_the_text_into_parts() -> None:
    assert spoken_parts("One. [pause:0.5s] Two [pause:300ms][pause: 20 S] three") == [
        "One. ",
        Pause(0.5),
        " Two ",
        Pause(0.3),
        Pause(MAX_PAUSE_S),
        " three",
    ]
    assert spoken_parts("[pause:1s]") == [Pause(1.0)]


def test_held_phonemes_come_back_and_a_dropped_word_drops_its_marker() -> None:
    text = f"A [Kokoro](/{KOKORO}/) and [think](/θˈɪŋk/)."
    held_text, held = hold_phonemes(text)
    assert "θ" not in held_text and restore_phonemes(held_text, held) == text
    assert restore_phonemes(held_text.replace("[think]", ""), held) == f"A [Kokoro](/{KOKORO}/) and ."
