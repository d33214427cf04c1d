"""The batch baseline reads the answer in the sentences bidi cuts it into (a listener heard batch run a
heading into the next sentence: "Getting started To install...", no pause, no falling pitch)."""

from __future__ import annotations

import pytest

from strands_kokoro import KokoroSpeech
from strands_kokoro.turn.batch_text import whole_answer_text
from tests.model_server_process import RunningServer
from tests.scripted_model import ScriptedCall
from tests.strands_kokoro.speech_doubles import make_agent, run_turn

MARKDOWN = """## Getting started

To install the package, run `pip install foo`. It **fetches** a page.

### A warning
Never hard-code secrets.

1. Keep it short
2. Keep it "simple"

He said "Go now!" Then left"""


def test_headings_and_items_end_as_sentences_and_sentences_are_kept() -> None:
    assert whole_answer_text(MARKDOWN) == (
        "Getting started. To install the package, run pip install foo. It fetches a page. A warning. "
        'Never hard-code secrets. 1. Keep it short. 2. Keep it "simple". He said "Go now!" Then left.'
    )


@pytest.mark.parametrize(
    "written", ["", "   \n\n  ", "Already a sentence.", "Two? Yes!", "A list: one; two…", "(Quoted.)"]
)
def test_text_that_already_ends_as_sentences_is_unchanged(written: str) -> None:
    assert whole_answer_text(written) == " ".join(written.split())


@pytest.mark.anyio
async def test_a_batch_turn_ends_the_heading_as_bidi_does(model_server: RunningServer) -> None:
    """The heading's last word, with the pause after it (a word's span runs to the next sound), lasts in
    batch about what it lasts in bidi, which speaks the heading as a request of its own: the heading is
    not run on into the next sentence."""
    spans = {}
    for mode in ("bidi", "batch"):
        speech = KokoroSpeech(endpoint=model_server.ws_url, mode=mode)  # type: ignore[arg-type]
        agent, _ = make_agent(speech, [ScriptedCall(MARKDOWN)], tokens_per_s=500)
        turn = await run_turn(speech.stream(agent, "How do I start?"))
        first = turn.of("sentence_complete")[0]
        assert first["text"].startswith("Getting started")
        started = first["words"][1]
        assert started["text"] == "started"
        spans[mode] = started["end_ms"] - started["start_ms"]
    assert turn.of("sentence_complete")[0]["text"].startswith("Getting started. To install the package")
    assert spans["batch"] > 0.8 * spans["bidi"], spans
