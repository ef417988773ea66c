"""`tf.audio`: 16-bit PCM WAV decoding and encoding (TensorFlow's conversions), as primitive ops
so they run eagerly, in Dataset.map and inside tf.function."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op


def _chunks(data: bytes) -> dict:
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise errors.InvalidArgumentError(None, "DecodeWav",
                                          "decode_wav: header mismatch: not a RIFF/WAVE file")
    out, pos = {}, 12
    while pos + 8 <= len(data):
        name, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        out.setdefault(name, data[pos + 8:pos + 8 + size])
        pos += 8 + size + (size & 1)
    return out


@op("DecodeWav", multi_output=True,
    shape=lambda x, *, channels, samples: [((samples if samples >= 0 else None,
                                             channels if channels > 0 else None),
                                            _dtypes.float32), ((), _dtypes.int32)])
def _decode_wav(contents, *, channels, samples):
    chunks = _chunks(contents[()])
    fmt = chunks.get(b"fmt ")
    if fmt is None or b"data" not in chunks:
        raise errors.InvalidArgumentError(None, "DecodeWav", "decode_wav: missing fmt or data")
    kind, stored, rate = struct.unpack("<HHI", fmt[:8])
    bits = struct.unpack("<H", fmt[14:16])[0]
    if kind != 1 or bits != 16:
        raise errors.InvalidArgumentError(
            None, "DecodeWav", f"decode_wav: only 16-bit PCM is supported, got format {kind} "
            f"with {bits} bits per sample")
    pcm = np.frombuffer(chunks[b"data"], dtype="<i2")
    audio = (pcm[:len(pcm) // stored * stored].astype(np.float32) / 32768.0).reshape(-1, stored)
    if channels > 0 and channels != stored:
        audio = audio[:, :1].repeat(channels, axis=1) if stored == 1 else audio[:, :channels]
        if audio.shape[1] < channels:
            raise errors.InvalidArgumentError(
                None, "DecodeWav", f"decode_wav: cannot make {channels} channels of {stored}")
    if samples >= 0:
        out = np.zeros((samples, audio.shape[1]), np.float32)
        out[:min(samples, len(audio))] = audio[:samples]
        audio = out
    return audio, np.asarray(rate, np.int32)


@export("audio.decode_wav")
def decode_wav(contents: Any, desired_channels: int = -1, desired_samples: int = -1,
               name: str | None = None) -> tuple:
    """(audio [samples, channels] float32 in [-1, 1), sample_rate int32) of a 16-bit PCM WAV."""
    return tuple(apply(_decode_wav, convert_to_tensor(contents, _dtypes.string),
                       channels=int(desired_channels), samples=int(desired_samples)))


@op("EncodeWav", shape=lambda audio, rate: ((), _dtypes.string))
def _encode_wav(audio, rate):
    if audio.ndim != 2:
        raise errors.InvalidArgumentError(
            None, "EncodeWav", f"encode_wav: audio must be [samples, channels], got shape "
            f"{list(audio.shape)}")
    pcm = np.clip(np.round(audio.astype(np.float64) * 32768.0), -32768, 32767).astype("<i2")
    samples, channels = audio.shape
    rate = int(rate)
    body = pcm.tobytes()
    header = (b"RIFF" + struct.pack("<I", 36 + len(body)) + b"WAVEfmt " +
              struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * channels * 2, channels * 2,
                          16) + b"data" + struct.pack("<I", len(body)))
    out = np.empty((), dtype=object)
    out[()] = header + body
    return out


@export("audio.encode_wav")
def encode_wav(audio: Any, sample_rate: Any, name: str | None = None) -> Any:
    """16-bit PCM WAV bytes of float32 audio [samples, channels] (clipped to [-1, 1])."""
    return apply(_encode_wav, convert_to_tensor(audio, _dtypes.float32),
                 convert_to_tensor(sample_rate, _dtypes.int32))
