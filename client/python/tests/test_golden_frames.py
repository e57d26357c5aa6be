"""The golden frames in test/fixtures/frames (written by the TypeScript codec) decode here to the
values their index.json documents, and survive a Python encode/decode round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gymwire.codec import pack, unpack, wire_dtype_name

FRAMES = Path(__file__).resolve().parents[3] / "test" / "fixtures" / "frames"
INDEX: dict[str, Any] = json.loads((FRAMES / "index.json").read_text())
SAFE = 2**53


def json_form(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        raw = value.astype(value.dtype.newbyteorder("<"), copy=False).tobytes()
        return {"$tensor": {"dtype": wire_dtype_name(value.dtype), "shape": list(value.shape), "hex": raw.hex()}}
    if isinstance(value, (bytes, bytearray)):
        return {"$bin": bytes(value).hex()}
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int) and not -SAFE < value < SAFE:
        return {"$int": str(value)}
    if isinstance(value, list):
        return [json_form(v) for v in value]
    if isinstance(value, dict):
        return {k: json_form(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("name", sorted(INDEX))
def test_golden_frame_decodes_to_its_documented_value(name: str) -> None:
    decoded = unpack((FRAMES / f"{name}.msgpack").read_bytes())
    assert json_form(decoded) == INDEX[name]


@pytest.mark.parametrize("name", sorted(INDEX))
def test_golden_frame_survives_a_python_round_trip(name: str) -> None:
    decoded = unpack((FRAMES / f"{name}.msgpack").read_bytes())
    assert json_form(unpack(pack(decoded))) == INDEX[name]
