"""A randomly initialised Kokoro-82M in the hub's checkpoint format, for the torch engine's tests.

No fp32 Kokoro checkpoint exists on the registries this machine reaches, so the tests build one:
hexgrad's ``KModel`` from Kokoro-82M's real ``config.json`` (written below), randomly initialised, its
duration head fixed so every token lasts exactly one frame at speed 1, saved as ``kokoro-v1_0.pth``
the way the hub stores it. :class:`RandomCheckpointSource` hands it to ``ensure_weights`` in place of
the hub, so it enters the cache through the production provisioning code.

torch and kokoro are imported inside the functions: importing them takes ~12 s, which every ``pytest``
run would otherwise pay at collection.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tts_container.weights.cache import CONFIG_FILE, TORCH_FILE, VOICES_FILE
from tts_container.weights.sources import write_voices_npz

if TYPE_CHECKING:
    from kokoro import KModel

VOICE_NAMES = ("af_heart", "bf_emma")

# hexgrad/Kokoro-82M config.json (the same content kokoro-onnx ships; test_torch_engine checks it when it
# is installed).
# fmt: off
KOKORO_82M_VOCAB = {
    ";": 1, ":": 2, ",": 3, ".": 4, "!": 5, "?": 6, "—": 9, "…": 10, '"': 11, "(": 12, ")": 13,
    "“": 14, "”": 15, " ": 16, "\u0303": 17, "ʣ": 18, "ʥ": 19, "ʦ": 20, "ʨ": 21, "ᵝ": 22, "ꭧ": 23,
    "A": 24, "I": 25, "O": 31, "Q": 33, "S": 35, "T": 36, "W": 39, "Y": 41, "ᵊ": 42, "a": 43,
    "b": 44, "c": 45, "d": 46, "e": 47, "f": 48, "h": 50, "i": 51, "j": 52, "k": 53, "l": 54,
    "m": 55, "n": 56, "o": 57, "p": 58, "q": 59, "r": 60, "s": 61, "t": 62, "u": 63, "v": 64,
    "w": 65, "x": 66, "y": 67, "z": 68, "ɑ": 69, "ɐ": 70, "ɒ": 71, "æ": 72, "β": 75, "ɔ": 76,
    "ɕ": 77, "ç": 78, "ɖ": 80, "ð": 81, "ʤ": 82, "ə": 83, "ɚ": 85, "ɛ": 86, "ɜ": 87, "ɟ": 90,
    "ɡ": 92, "ɥ": 99, "ɨ": 101, "ɪ": 102, "ʝ": 103, "ɯ": 110, "ɰ": 111, "ŋ": 112, "ɳ": 113,
    "ɲ": 114, "ɴ": 115, "ø": 116, "ɸ": 118, "θ": 119, "œ": 120, "ɹ": 123, "ɾ": 125, "ɻ": 126,
    "ʁ": 128, "ɽ": 129, "ʂ": 130, "ʃ": 131, "ʈ": 132, "ʧ": 133, "ʊ": 135, "ʋ": 136, "ʌ": 138,
    "ɣ": 139, "ɤ": 140, "χ": 142, "ʎ": 143, "ʒ": 147, "ʔ": 148, "ˈ": 156, "ˌ": 157, "ː": 158,
    "ʰ": 162, "ʲ": 164, "↓": 169, "→": 171, "↗": 172, "↘": 173, "ᵻ": 177,
}
# fmt: on
KOKORO_82M_CONFIG = {
    "istftnet": {
        "upsample_kernel_sizes": [20, 12],
        "upsample_rates": [10, 6],
        "gen_istft_hop_size": 5,
        "gen_istft_n_fft": 20,
        "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
        "resblock_kernel_sizes": [3, 7, 11],
        "upsample_initial_channel": 512,
    },
    "dim_in": 64,
    "dropout": 0.2,
    "hidden_dim": 512,
    "max_conv_dim": 512,
    "max_dur": 50,
    "multispeaker": True,
    "n_layer": 3,
    "n_mels": 80,
    "n_token": 178,
    "style_dim": 128,
    "text_encoder_kernel_size": 5,
    "plbert": {
        "hidden_size": 768,
        "num_attention_heads": 12,
        "intermediate_size": 2048,
        "max_position_embeddings": 512,
        "num_hidden_layers": 12,
        "dropout": 0.1,
    },
    "vocab": KOKORO_82M_VOCAB,
}


def random_kmodel(config_path: Path, empty_checkpoint: Path) -> KModel:
    """A randomly initialised Kokoro-82M (KModel loads nothing from an empty checkpoint)."""
    import torch
    from kokoro import KModel

    from tts_container.engines.torch_engine import REPO_ID

    torch.save({}, empty_checkpoint)
    torch.manual_seed(0)
    model = KModel(repo_id=REPO_ID, config=str(config_path), model=str(empty_checkpoint))
    # Every token lasts exactly one frame at speed 1: duration = sum(sigmoid(bias)) over max_dur outputs.
    head = model.predictor.duration_proj.linear_layer
    with torch.no_grad():
        head.weight.zero_()
        head.bias.fill_(math.log(1 / (head.out_features - 1)))  # sigmoid = 1/max_dur, summed: 1 frame
    return model


def save_like_the_hub(model: KModel, path: Path) -> None:
    """The hub file's format: one state dict per component, keys with DataParallel's ``module.`` prefix."""
    import torch

    from tts_container.engines.torch_engine import COMPONENTS

    checkpoint = {
        name: {f"module.{key}": value for key, value in getattr(model, name).state_dict().items()}
        for name in COMPONENTS
    }
    torch.save(checkpoint, path)


class RandomCheckpointSource:
    """A :class:`tts_container.weights.cache.WeightsSource` providing the test's config, checkpoint and
    voices."""

    label = "test: randomly initialised Kokoro-82M"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    def fetch(self, names: frozenset[str], staging: Path) -> None:
        assert names == {CONFIG_FILE, TORCH_FILE, VOICES_FILE}
        config = staging / CONFIG_FILE
        config.write_text(json.dumps(KOKORO_82M_CONFIG, ensure_ascii=False), encoding="utf-8")
        save_like_the_hub(random_kmodel(config, self.workdir / "empty.pth"), staging / TORCH_FILE)
        rng = np.random.default_rng(0)
        tables = {
            name: (rng.standard_normal((510, 1, 256)) * 0.15).astype("<f4").tobytes() for name in VOICE_NAMES
        }
        write_voices_npz(tables, staging / VOICES_FILE)
