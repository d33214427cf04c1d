"""Kokoro voices: names, and the style vector each synthesis call conditions on.

A voice is 510 style vectors ``(510, 1, 256)``; a segment of ``n`` phoneme tokens uses row ``n - 1``
(as ``KPipeline.infer``: both engines pick the same row). All voices of the cache's ``voices.npz`` are
read eagerly: a loaded dict is safe to share between threads, lazy ``NpzFile`` reads are not. A mix
(``af_bella(2)+af_sky(1)``) is the weighted mean of its voices' tables; the last :data:`MIXES_KEPT` are
kept, built under a lock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt

from strands_kokoro.protocol import ProtocolError, is_voice_mix, parse_voice

STYLE_ROWS = 510
STYLE_DIM = 256
MIXES_KEPT = 32

StyleTable = npt.NDArray[np.float32]

# First letter of a voice name -> its language (hexgrad's naming: a=American English, b=British, ...).
VOICE_LANGS: Mapping[str, str] = {
    "a": "en-us",
    "b": "en-gb",
    "e": "es",
    "f": "fr-fr",
    "h": "hi",
    "i": "it",
    "j": "ja",
    "p": "pt-br",
    "z": "zh",
}


class UnknownVoice(KeyError):
    """The requested voice is not in the cache's voice set."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown voice"


class VoiceTables:
    """Every voice's style table, keyed by name; read-only after construction, so thread-safe."""

    def __init__(self, tables: Mapping[str, StyleTable]) -> None:
        for name, table in tables.items():
            if table.shape != (STYLE_ROWS, 1, STYLE_DIM):
                raise ValueError(
                    f"voice {name}: shape {table.shape}, expected ({STYLE_ROWS}, 1, {STYLE_DIM})"
                )
        self._tables = dict(tables)
        self.names = frozenset(self._tables)
        self._mixes: OrderedDict[str, StyleTable] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path | str) -> VoiceTables:
        """Read a ``voices.npz`` written by the weight provisioning."""
        with np.load(path) as npz:
            return cls({name: np.asarray(npz[name], dtype=np.float32) for name in npz.files})

    def table(self, voice: str) -> StyleTable:
        """The whole ``(510, 1, 256)`` table (the torch engine hands it to ``KPipeline`` as a tensor)."""
        table = self._tables.get(voice)
        if table is not None:
            return table
        if is_voice_mix(voice):
            return self._mix(voice)
        raise UnknownVoice(f"unknown voice {voice!r}")

    def knows(self, voice: str) -> bool:
        """Whether ``voice`` is one of the tables or a well-formed mix of them."""
        return voice in self._tables or (is_voice_mix(voice) and mix_parts(voice, self.names) is not None)

    def _mix(self, voice: str) -> StyleTable:
        with self._lock:
            if (kept := self._mixes.get(voice)) is not None:
                self._mixes.move_to_end(voice)
                return kept
        parts = mix_parts(voice, self.names)
        if parts is None:
            raise UnknownVoice(f"unknown voice {voice!r}")
        mixed = sum(
            (share * self._tables[name] for name, share in parts), np.zeros_like(self._tables[parts[0][0]])
        )
        table = np.asarray(mixed, dtype=np.float32)
        with self._lock:
            self._mixes[voice] = table
            while len(self._mixes) > MIXES_KEPT:
                self._mixes.popitem(last=False)
        return table

    def style(self, voice: str, n_tokens: int) -> npt.NDArray[np.float32]:
        """The ``(1, 256)`` style vector for a segment of ``n_tokens`` phoneme tokens."""
        row = min(max(n_tokens - 1, 0), STYLE_ROWS - 1)
        return self.table(voice)[row]

    def english(self) -> frozenset[str]:
        """Voices whose names mark them as American or British English."""
        return frozenset(name for name in self.names if name[:1] in {"a", "b"})


def mix_parts(voice: str, known: frozenset[str]) -> tuple[tuple[str, float], ...] | None:
    """A mix's ``(voice, share)`` parts when it is well formed and every voice is ``known``, else None."""
    try:
        parts = parse_voice(voice).parts
    except ProtocolError:
        return None
    return parts if all(name in known for name, _ in parts) else None


def voice_lang(voice: str) -> str | None:
    """The language a voice was trained on, from its name's first letter (``None`` if unknown)."""
    return VOICE_LANGS.get(voice[:1])
