"""The wire codec: msgpack with tensors as extension type 1.

A tensor's extension payload is ``[dtype code u8][ndim u8][ndim x u32 LE dims][raw LE data]``
(``protocol/tensor.ts``). Decoding returns a read-only ``np.frombuffer`` view over the received
frame, so large observations are not copied; call ``.copy()`` before mutating one. Encoding takes
any ``np.ndarray`` (made C-contiguous and little-endian first) and numpy scalars become plain
msgpack numbers.

Example::

    frame = pack({"id": 1, "type": "step", "action": np.zeros(2, np.float32)})
    unpack(frame)["action"]  # array([0., 0.], dtype=float32)
"""

from __future__ import annotations

import functools
import struct
import sys
from typing import Any

import msgpack
import numpy as np

from ._protocol import DTYPES, TENSOR_EXT_TYPE

DTYPE_CODE: dict[str, int] = {name: i for i, name in enumerate(DTYPES)}
_NP_DTYPES: tuple[np.dtype, ...] = tuple(np.dtype(name).newbyteorder("<") for name in DTYPES)
_LITTLE = sys.byteorder == "little"
# dtype -> wire code without building dtype names (numpy's dtype.name is slow enough to show in a step).
_CODE_OF_DTYPE: dict[np.dtype, int] = {**{np.dtype(name): i for i, name in enumerate(DTYPES)}, **{d: i for i, d in enumerate(_NP_DTYPES)}}


@functools.cache
def _dims(ndim: int) -> struct.Struct:
    """The compiled struct of ``ndim`` little-endian u32 dims (built once per rank, not per tensor)."""
    return struct.Struct(f"<{ndim}I")


class TensorFormatError(ValueError):
    """The bytes of a tensor do not match its dtype and shape, or its dtype has no wire code."""


def wire_dtype_name(dtype: np.dtype) -> str:
    """The wire name of a numpy dtype; raises :class:`TensorFormatError` for dtypes with none."""
    name = np.dtype(dtype).name
    if name not in DTYPE_CODE:
        raise TensorFormatError(f"dtype {name} has no wire encoding; use one of {', '.join(DTYPES)}")
    return name


def dtype_code(dtype: np.dtype) -> int:
    """The wire code of a numpy dtype; raises :class:`TensorFormatError` for dtypes with none."""
    code = _CODE_OF_DTYPE.get(dtype)
    return DTYPE_CODE[wire_dtype_name(dtype)] if code is None else code


def _tensor_payload(array: np.ndarray) -> bytes:
    """The extension type 1 payload of an ndarray: header and little-endian row-major data."""
    code = _CODE_OF_DTYPE.get(array.dtype)
    if code is None:
        code = DTYPE_CODE[wire_dtype_name(array.dtype)]
    ndim = array.ndim
    if ndim > 255:
        raise TensorFormatError(f"tensors have at most 255 dimensions, got {ndim}")
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    if not _LITTLE or array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return bytes((code, ndim)) + _dims(ndim).pack(*array.shape) + array.tobytes()


def encode_tensor(array: np.ndarray) -> msgpack.ExtType:
    """Encodes an ndarray as extension type 1."""
    return msgpack.ExtType(TENSOR_EXT_TYPE, _tensor_payload(array))


# A stepped env sends the same few tensor headers on every step: their layouts are remembered, so the
# common case is one cached call instead of a struct unpack and a size computation per tensor.
@functools.lru_cache(maxsize=256)
def _tensor_layout(header: bytes) -> tuple[np.dtype, tuple[int, ...], int]:
    """What a tensor header ``[code][ndim][dims]`` describes: ``(dtype, shape, data bytes)``."""
    code, ndim = header[0], header[1]
    if code >= len(DTYPES):
        raise TensorFormatError(f"unknown tensor dtype code {code}")
    shape = _dims(ndim).unpack_from(header, 2)
    dtype = _NP_DTYPES[code]
    count = 1
    for d in shape:
        count *= d
    return dtype, shape, count * dtype.itemsize


# msgpack's fixext markers by payload size.
_FIXEXT = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}


def pack_tensor(array: np.ndarray) -> bytes:
    """The msgpack bytes of an ndarray as extension type 1: what :func:`pack` gives for it, without the
    packer's round trip through ``default`` (a vector env's actions go out this way on every step)."""
    payload = _tensor_payload(array)
    size = len(payload)
    fixed = _FIXEXT.get(size)
    if fixed is not None:
        head = bytes((fixed, TENSOR_EXT_TYPE))
    elif size < 256:
        head = bytes((0xC7, size, TENSOR_EXT_TYPE))
    elif size < 65536:
        head = b"\xc8" + size.to_bytes(2, "big") + bytes((TENSOR_EXT_TYPE,))
    else:
        head = b"\xc9" + size.to_bytes(4, "big") + bytes((TENSOR_EXT_TYPE,))
    return head + payload


def decode_tensor(payload: bytes) -> np.ndarray:
    """Decodes an extension type 1 payload into a read-only view (no copy)."""
    size = len(payload)
    if size < 2:
        raise TensorFormatError("tensor payload shorter than its 2-byte header")
    offset = 2 + 4 * payload[1]
    if size < offset:
        if payload[0] >= len(DTYPES):
            raise TensorFormatError(f"unknown tensor dtype code {payload[0]}")
        raise TensorFormatError(f"tensor header declares {payload[1]} dims but the payload is {size} bytes")
    header = payload[:offset]
    if type(header) is not bytes:
        header = bytes(header)  # a memoryview or bytearray payload: its slice is no dict key
    dtype, shape, nbytes = _tensor_layout(header)
    if size - offset != nbytes:
        raise TensorFormatError(f"{DTYPES[payload[0]]} tensor of shape {list(shape)} needs {nbytes} bytes, got {size - offset}")
    # The array over the payload in its shape in one call (np.frombuffer then reshape is two, and slower).
    return np.ndarray(shape, dtype, payload, offset)


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return encode_tensor(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, (tuple, set, frozenset)):
        return list(obj)
    if isinstance(obj, memoryview):
        return bytes(obj)
    raise TypeError(f"cannot send a {type(obj).__name__} over the wire: use numbers, strings, bytes, lists, dicts or numpy arrays")


def _ext_hook(code: int, data: bytes) -> Any:
    if code == TENSOR_EXT_TYPE:
        return decode_tensor(data)
    return msgpack.ExtType(code, data)


def pack(value: Any) -> bytes:
    """Encodes one message (tensors included)."""
    return msgpack.packb(value, default=_default, use_bin_type=True, strict_types=False)


def packer() -> msgpack.Packer:
    """A reusable packer with :func:`pack`'s settings, for hot loops (``packer().pack(value)``)."""
    return msgpack.Packer(default=_default, use_bin_type=True, strict_types=False)


def unpack(frame: bytes) -> Any:
    """Decodes one message: maps to dicts, bin to bytes, tensors to read-only ndarrays."""
    return msgpack.unpackb(frame, ext_hook=_ext_hook, raw=False, strict_map_key=False, use_list=True)
