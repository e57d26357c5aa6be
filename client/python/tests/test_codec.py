"""The wire codec: every dtype round-trips exactly, decoding does not copy, bad payloads are refused."""

from __future__ import annotations

import struct

import msgpack
import numpy as np
import pytest

from gymwire.codec import DTYPES, TENSOR_EXT_TYPE, TensorFormatError, decode_tensor, encode_tensor, pack, unpack


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips_with_its_exact_dtype(dtype: str) -> None:
    rng = np.random.default_rng(0)
    arr = (rng.random((2, 3, 4)) * 100).astype(dtype)
    out = unpack(pack({"x": arr}))["x"]
    assert out.dtype == np.dtype(dtype)
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out, arr)


def test_payload_layout_matches_protocol_tensor_ts() -> None:
    ext = encode_tensor(np.array([[1, 2, 3]], dtype=np.float32))
    assert ext.code == TENSOR_EXT_TYPE
    assert ext.data[0] == DTYPES.index("float32") == 10
    assert ext.data[1] == 2
    assert struct.unpack_from("<2I", ext.data, 2) == (1, 3)
    assert ext.data[10:] == np.array([1, 2, 3], dtype="<f4").tobytes()


def test_decoding_is_a_view_over_the_frame() -> None:
    payload = encode_tensor(np.arange(1000, dtype=np.float64)).data
    arr = decode_tensor(payload)
    assert not arr.flags.owndata
    assert not arr.flags.writeable


def test_scalars_infinities_and_non_contiguous_arrays() -> None:
    arr = np.arange(12, dtype=np.int64).reshape(3, 4)[:, ::2]
    assert np.array_equal(unpack(pack(arr)), arr)
    inf = np.array([-np.inf, np.inf, np.nan], dtype=np.float32)
    np.testing.assert_array_equal(unpack(pack(inf)), inf)
    zero_d = unpack(pack(np.array(3.5, dtype=np.float16)))
    assert zero_d.shape == () and zero_d.dtype == np.float16
    assert unpack(pack({"a": np.int32(4), "b": np.float32(0.5), "c": np.bool_(True)})) == {"a": 4, "b": 0.5, "c": True}
    big = np.array([2**63 - 1], dtype=np.int64)
    assert unpack(pack(big))[0] == 2**63 - 1


def test_bad_payloads_raise_tensor_format_error() -> None:
    with pytest.raises(TensorFormatError, match="dtype code"):
        decode_tensor(bytes([99, 0]))
    with pytest.raises(TensorFormatError, match="needs 16 bytes"):
        decode_tensor(bytes([10, 1]) + struct.pack("<I", 4) + b"\0" * 8)
    with pytest.raises(TensorFormatError, match="no wire encoding"):
        encode_tensor(np.zeros(2, dtype=np.complex64))
    with pytest.raises(TypeError, match="cannot send"):
        pack({"x": object()})


def test_other_extension_types_pass_through() -> None:
    frame = msgpack.packb(msgpack.ExtType(7, b"abc"))
    assert unpack(frame) == msgpack.ExtType(7, b"abc")
