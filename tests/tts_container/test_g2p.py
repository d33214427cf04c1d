"""misaki G2P loaded offline from the installed spaCy pipeline, dialects, languages, segment splitting."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tts_container.text import g2p
from tts_container.text.g2p import (
    MAX_SEGMENT_TOKENS,
    Phonemizer,
    UnsupportedLanguage,
    dialect_for,
    split_phonemes,
)


@pytest.fixture(scope="module")
def phonemizer() -> Phonemizer:
    return Phonemizer()


@pytest.mark.slow
def test_english_g2p_never_downloads_a_spacy_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import spacy.cli

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("spacy.cli.download was called")

    monkeypatch.setattr(spacy.cli, "download", refuse)
    phonemes = Phonemizer().phonemize("Hello there.", voice="af_heart")
    assert phonemes == "həlˈO ðˈɛɹ."


@pytest.mark.slow
def test_installed_pipeline_g2p_sets_what_misakis_own_constructor_sets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Guards the subclass against a misaki upgrade that adds state to ``G2P.__init__``."""
    import spacy
    from misaki import en

    pipeline = g2p._spacy_pipeline()
    monkeypatch.setattr(spacy.util, "is_package", lambda name: True)
    monkeypatch.setattr(spacy, "load", lambda name, enable: pipeline)
    reference = en.G2P(british=False)
    ours = g2p._installed_pipeline_g2p(british=False)
    assert isinstance(ours, en.G2P)
    assert set(vars(ours)) == set(vars(reference))
    assert ours.nlp is pipeline
    assert ours.fallback is not None


def test_voice_prefix_picks_american_or_british(phonemizer: Phonemizer) -> None:
    american = phonemizer.phonemize("I can't dance.", voice="af_heart")
    british = phonemizer.phonemize("I can't dance.", voice="bf_emma")
    explicit = phonemizer.phonemize("I can't dance.", lang="en-gb", voice="af_heart")
    assert "æ" in american
    assert "ɑː" in british
    assert explicit == british


def test_unknown_word_is_spoken_through_the_espeak_fallback(phonemizer: Phonemizer) -> None:
    phonemes = phonemizer.phonemize("Frobnicated.", voice="af_heart")
    assert phonemes.startswith("fɹ")
    assert "❓" not in phonemes


def test_espeak_languages_phonemize(phonemizer: Phonemizer) -> None:
    assert phonemizer.phonemize("Bonjour tout le monde.", lang="fr", voice="ff_siwis").startswith("bɔ̃ʒ")
    assert phonemizer.phonemize("Hola, amigo.", lang="es", voice="ef_dora")


@pytest.mark.parametrize(
    ("lang", "voice", "dialect"),
    [
        ("en-us", "af_heart", "en-us"),
        ("en-us", "bm_george", "en-gb"),
        ("en-gb", "am_adam", "en-gb"),
        ("EN_US", "af_heart", "en-us"),
        ("fr", "ff_siwis", "fr-fr"),
        ("pt", "pf_dora", "pt-br"),
        ("ja", "af_heart", "ja"),
        ("ZH_CN", "zf_xiaobei", "zh"),
    ],
)
def test_dialect_for(lang: str, voice: str, dialect: str) -> None:
    assert dialect_for(lang, voice) == dialect


@pytest.mark.parametrize(
    ("voice", "dialect"),
    [
        ("af_heart", "en-us"),
        ("bf_emma", "en-gb"),
        ("ff_siwis", "fr-fr"),
        ("ef_dora", "es"),
        ("pf_dora", "pt-br"),
        ("jf_alpha", "ja"),
        ("zf_xiaobei", "zh"),
    ],
)
def test_a_request_without_lang_is_read_in_its_voices_language(voice: str, dialect: str) -> None:
    assert dialect_for(None, voice) == dialect


@pytest.mark.parametrize("lang", ["ko", "de", "klingon", ""])
def test_unsupported_languages_are_refused_with_the_supported_list(lang: str) -> None:
    with pytest.raises(UnsupportedLanguage, match="supported: "):
        dialect_for(lang, "af_heart")


def test_one_segment_per_sentence() -> None:
    assert split_phonemes("həlˈO. ðˈɛɹ! hˌWˈɑɹ ju?  fˈIn.") == ["həlˈO.", "ðˈɛɹ!", "hˌWˈɑɹ ju?", "fˈIn."]


def test_long_sentence_is_cut_at_clauses_before_words() -> None:
    clause = "a" * 200 + ","
    segments = split_phonemes(f"{clause} {clause} {clause} end.", limit=MAX_SEGMENT_TOKENS)
    assert segments == [f"{clause} {clause}", f"{clause} end."]


def test_real_long_text_fits_the_model(phonemizer: Phonemizer) -> None:
    text = " ".join(["This clause is long, and it goes on and on, without any full stop at all"] * 12) + "."
    phonemes = phonemizer.phonemize(text, voice="af_heart")
    segments = split_phonemes(phonemes)
    assert len(phonemes) > MAX_SEGMENT_TOKENS
    assert len(segments) > 1
    assert all(len(segment) <= MAX_SEGMENT_TOKENS for segment in segments)
    assert all(segment.endswith(",") or segment.endswith(".") for segment in segments)
    lengths = [len(segment) for segment in segments]
    assert max(lengths) - min(lengths) < MAX_SEGMENT_TOKENS // 4  # even shares: the first is not the longest


phoneme_text = st.lists(
    st.one_of(
        st.text(alphabet="abcdəɪˈˌ", min_size=1, max_size=60),
        st.sampled_from([".", ",", "!", "?", ";", "—"]),
    ),
    max_size=80,
).map(" ".join)


@given(phoneme_text, st.integers(min_value=5, max_value=MAX_SEGMENT_TOKENS))
def test_split_keeps_every_symbol_and_respects_the_limit(phonemes: str, limit: int) -> None:
    segments = split_phonemes(phonemes, limit=limit)
    assert all(0 < len(segment) <= limit for segment in segments)
    assert re.sub(r"\s", "", "".join(segments)) == re.sub(r"\s", "", phonemes)


def test_rewritten_words_keep_their_written_form_in_the_word_map(phonemizer: Phonemizer) -> None:
    """ "km/h" is one word spoken as three: every phoneme of "kilometers per hour" belongs to it."""
    phonemes = phonemizer.phonemes("Drive 60 km/h, then call 555-0123.", voice="af_heart")
    assert phonemes.words == ("Drive", "60", "km/h", "then", "call", "555-0123")
    spoken = [phonemes.text[i] for i, word in enumerate(phonemes.word_of) if word == 2]
    assert "".join(spoken) == "".join(phonemizer.phonemize("kilometers per hour").split())
    assert "/" not in phonemes.text and "5" not in phonemes.text


def test_other_languages_reach_espeak_as_written(phonemizer: Phonemizer) -> None:
    """English rules must not rewrite French: eSpeak reads "5" and "km" in French itself."""
    text = "Il a 5 ans et roule à 60 km."
    direct, _ = g2p._espeak_g2p("fr-fr")(text)
    assert phonemizer.phonemize(text, lang="fr", voice="ff_siwis") == " ".join(direct.split())


def test_a_letter_the_normalizer_spelled_is_the_letter_a_not_the_article(phonemizer: Phonemizer) -> None:
    """misaki tags a capital "A" before a word as the article ("gate uh three"); a blind review heard it.
    Spelled by the normalizer ("A3", "ABC123"), it is the letter's name; the user's own article stays."""
    gate = phonemizer.phonemize("Go to gate A3.")
    code = phonemizer.phonemize("The ABC123 code.")
    article = phonemizer.phonemize("A dog barked.")
    assert "ɐ" not in gate and "ˈA θɹˈi" in gate, gate
    assert "ɐ" not in code and code.startswith("ði ˈA bˈi"), code
    assert article.startswith("ɐ dˈɔɡ"), article


def test_a_long_chain_of_joined_pieces_is_read_as_words_it_stands_for(phonemizer: Phonemizer) -> None:
    # misaki's merge of a hyphenated token's pieces is cubic in their number: 999 pieces (a text under
    # the request limit) held the engine for over six minutes; past MAX_JOINED_PIECES they are words.
    chain = "-".join(["word"] * 999)
    assert g2p.break_long_chains(chain) == " ".join(["word"] * 999)
    assert phonemizer.phonemize(chain) == phonemizer.phonemize(" ".join(["word"] * 999))
    for kept in ("state-of-the-art", "snake_case_name", "-".join("abcdefgh")):  # at most 8 pieces: as written
        assert g2p.break_long_chains(kept) == kept
    assert g2p.break_long_chains("x_" * 20 + "x") == "x " * 20 + "x"
