"""Env outputs as wire values: observations through their space, infos and tool results checked
so that only what msgpack and the tensor encoding carry goes back (no pickle, no JSON lists)."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from ..codec import TensorFormatError, dtype_code


class UnencodableValueError(TypeError):
    """An env returned a value the wire cannot carry; the message names where it sits."""


_PLAIN = (str, bytes, bool, int, float, type(None))


def wire_value(value: Any, path: str = "info") -> Any:
    """Converts numpy scalars, tuples and array-likes (torch/jax CPU tensors) to wire values; raises
    :class:`UnencodableValueError` naming ``path`` for anything else."""
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, np.ndarray):
        try:
            dtype_code(value.dtype)
        except TensorFormatError:
            if value.dtype.kind in "US":
                return value.tolist()
            raise UnencodableValueError(f"{path} is a numpy array of dtype {value.dtype}, which has no wire encoding") from None
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {(k if isinstance(k, (str, int)) else str(k)): wire_value(v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [wire_value(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if hasattr(value, "__array__"):
        return wire_value(np.asarray(value), path)
    raise UnencodableValueError(f"{path} is a {type(value).__name__}, which the wire cannot carry (use numbers, strings, bytes, lists, dicts or numpy arrays)")


def wire_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """An env's metadata as wire values. Metadata only describes the env, so a value the wire cannot
    carry (an enum, a class) is sent as its value or text instead of failing the make."""
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        try:
            out[str(key)] = wire_value(value, f"metadata.{key}")
        except UnencodableValueError:
            out[str(key)] = value.value if isinstance(value, enum.Enum) and isinstance(value.value, (str, int, float)) else repr(value)
    return out


def wire_info(info: dict[str, Any]) -> dict[str, Any]:
    """An info dict as wire values (the empty dict, the common case, costs nothing)."""
    return wire_value(info) if info else {}


def render_frame(frame: Any) -> Any:
    """A render result: an RGB(A) uint8 array, ANSI text, or None; a list of frames sends the last."""
    if frame is None or isinstance(frame, str):
        return frame
    if isinstance(frame, list):
        return render_frame(frame[-1]) if frame else None
    return wire_value(np.ascontiguousarray(np.asarray(frame)), "render()")
