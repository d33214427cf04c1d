"""The wire's voice mixes and lexicons: what both ends accept, and the coded refusals of the rest."""

from __future__ import annotations

import pytest

from strands_kokoro.protocol import (
    MAX_LEXICON_ENTRIES,
    MAX_VOICE_PARTS,
    ErrorCode,
    ProtocolError,
    SynthesizeRequest,
    parse_client_message,
    parse_lexicon,
    parse_voice,
    voice_names,
)
from strands_kokoro.speech import KokoroSpeech


@pytest.mark.parametrize(
    ("spec", "canonical"),
    [
        ("af_bella", "af_bella"),
        ("af_bella+af_sky", "af_bella(0.5)+af_sky(0.5)"),
        ("af_bella(2)+af_sky(1)", "af_bella(0.6667)+af_sky(0.3333)"),
        (" af_bella ( 2 ) + af_sky ", "af_bella(0.6667)+af_sky(0.3333)"),
        ("af_bella(1)+af_sky(1)+af_bella(2)", "af_bella(0.75)+af_sky(0.25)"),
        ("af_bella(3)", "af_bella"),
    ],
)
def test_a_mix_is_read_in_kokoro_fastapis_syntax(spec: str, canonical: str) -> None:
    mix = parse_voice(spec)
    assert mix.canonical == canonical
    assert sum(share for _, share in mix.parts) == pytest.approx(1.0)
    assert parse_voice(mix.canonical).canonical == canonical  # the canonical spelling reads back the same


@pytest.mark.parametrize(
    "spec",
    [
        "af_bella(0)+af_sky",
        "af_bella(-1)+af_sky",
        "af_bella(x)+af_sky",
        "af_bella()+af_sky",
        "af_bella(inf)",
        "af_bella(1000)+af_sky",
        "+af_sky",
        "af_bella++af_sky",
        "af bella+af_sky",
        "af_bella(2",
        "+".join(["af_bella"] * (MAX_VOICE_PARTS + 1)),
    ],
)
def test_a_bad_mix_is_refused_bad_voice_on_the_wire(spec: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        parse_client_message(SynthesizeRequest("Hi.", "r1", voice=spec).to_wire())
    assert refused.value.code == ErrorCode.BAD_VOICE and refused.value.request_id == "r1"
    assert voice_names(spec) == ()


def test_a_plain_name_is_left_for_the_server_to_judge() -> None:
    message = parse_client_message(SynthesizeRequest("Hi.", voice="no such voice").to_wire())
    assert isinstance(message, SynthesizeRequest) and message.voice == "no such voice"
    mixed = parse_client_message(SynthesizeRequest("Hi.", voice="af_bella(2)+af_sky(1)").to_wire())
    assert isinstance(mixed, SynthesizeRequest) and mixed.voice == "af_bella(0.6667)+af_sky(0.3333)"
    assert voice_names(mixed.voice) == ("af_bella", "af_sky")


def test_a_lexicon_travels_with_its_request() -> None:
    request = SynthesizeRequest("Kokoro speaks.", lexicon=(("Kokoro", "kˈOkəɹO"),))
    assert request.to_dict()["lexicon"] == {"Kokoro": "kˈOkəɹO"}
    assert parse_client_message(request.to_wire()) == request
    assert "lexicon" not in SynthesizeRequest("Hi.").to_dict()


@pytest.mark.parametrize(
    "lexicon",
    [
        ["Kokoro"],
        {"Kokoro": 3},
        {"Kokoro": ""},
        {"": "kˈO"},
        {"two words": "kˈO"},
        {"Kokoro": "k(O"},
        {"Kokoro": "/kˈO/"},
        {"x" * 65: "kˈO"},
        {"Kokoro": "k" * 129},
        {f"w{i}": "kˈO" for i in range(MAX_LEXICON_ENTRIES + 1)},
    ],
)
def test_a_bad_lexicon_is_refused_bad_lexicon(lexicon: object) -> None:
    with pytest.raises(ProtocolError) as refused:
        parse_lexicon(lexicon)
    assert refused.value.code == ErrorCode.BAD_LEXICON


def test_kokoro_speech_takes_a_mix_and_a_lexicon_and_refuses_bad_ones() -> None:
    speech = KokoroSpeech(voice="af_bella(2)+af_sky(1)", lexicon={"Kokoro": "kˈOkəɹO"})
    assert speech.options.voice == "af_bella(2)+af_sky(1)"
    assert speech.options.lexicon == (("Kokoro", "kˈOkəɹO"),)
    with pytest.raises(ValueError, match="weight"):
        KokoroSpeech(voice="af_bella(0)+af_sky")
    with pytest.raises(ValueError, match="lexicon"):
        KokoroSpeech(lexicon={"Kokoro": "k(O"})
