"""The make_vec step path's parts: the request template's frames, the packed tensors, the adaptive spin window."""

from __future__ import annotations

import numpy as np
import pytest

from gymwire._request_template import RequestTemplate
from gymwire._spin import AdaptiveSpin, SpinOptions
from gymwire.codec import pack, pack_tensor, unpack


def test_a_filled_template_decodes_to_the_same_message_as_a_packed_dict() -> None:
    ids = [f"s{i:02d}" for i in range(20)]  # more fields than a fixmap holds are fine too
    template = RequestTemplate("step_batch", {"session_ids": ids, "autoreset_mode": "next_step"})
    actions = np.array([0, 1, 1, 0], dtype=np.int64)
    request = template.fill(actions=actions, extra={"k": [1, 2]})
    assert "session_ids" in request and "actions" in request and "seed" not in request
    got = unpack(request.encode(rid=300, ack=299))
    want = unpack(
        pack({"session_ids": ids, "autoreset_mode": "next_step", "actions": actions, "extra": {"k": [1, 2]}, "id": 300, "ack": 299, "type": "step_batch"})
    )
    assert got.keys() == want.keys()
    np.testing.assert_array_equal(got.pop("actions"), want.pop("actions"))
    assert got == want
    with pytest.raises(ValueError, match="per request"):
        RequestTemplate("step", {"id": 1})


@pytest.mark.parametrize("shape,dtype", [((16,), np.int64), ((1,), np.uint8), ((0,), np.float32), ((2, 3), np.float16), ((), np.int16), ((20000,), np.float64)])
def test_pack_tensor_gives_the_bytes_pack_gives(shape: tuple[int, ...], dtype: type) -> None:
    array = np.zeros(shape, dtype=dtype)
    assert pack_tensor(array) == pack(array)
    big_endian = np.arange(4, dtype=">f4")
    assert pack_tensor(big_endian) == pack(big_endian)


def test_spin_window_opens_on_quick_answers_and_closes_on_slow_ones() -> None:
    o = SpinOptions(max_s=200e-6, start_s=25e-6, probe_every=4, trial_every=1000, trial_length=4, backoff=8)
    spin = AdaptiveSpin(o)
    windows = [spin.next() for _ in range(4)]
    assert windows == [0, 0, 0, o.start_s]  # closed; every 4th request probes
    spin.learn(50e-6, o.start_s)  # within max_s: the window opens
    assert spin.size == o.start_s
    spin.learn(80e-6, spin.size)  # a longer window would have caught it: doubled
    assert spin.size == 2 * o.start_s
    for _ in range(5):
        spin.learn(1e-3, spin.size)  # answers too slow to wait for
    assert spin.size == 0 and spin.next() == 0


def test_spin_rests_when_polling_does_not_shorten_the_gaps() -> None:
    o = SpinOptions(max_s=200e-6, start_s=25e-6, probe_every=1, trial_every=4, trial_length=4, backoff=8)
    spin = AdaptiveSpin(o)
    spin.learn(100e-6, spin.next())
    for _ in range(4):  # polled gaps, then a trial of unpolled ones just as short
        spin.learn(100e-6, spin.next())
    for _ in range(4):
        assert spin.next() == 0
        spin.learn(100e-6, 0)
    assert spin.resting and spin.next() == 0
    with pytest.raises(ValueError):
        SpinOptions(start_s=0)


def test_spin_defaults_are_the_servers() -> None:
    # The same adaptive rule on both ends: the defaults come from runtime/busy-poll.ts through the codegen.
    from gymwire._protocol import BUSY_POLL_ADAPTIVE

    o = SpinOptions()
    assert (o.max_s, o.start_s) == (BUSY_POLL_ADAPTIVE["max_us"] * 1e-6, BUSY_POLL_ADAPTIVE["start_us"] * 1e-6)
    assert (o.probe_every, o.trial_every, o.trial_length, o.keep_below, o.backoff) == tuple(
        BUSY_POLL_ADAPTIVE[k] for k in ("probe_every", "trial_every", "trial_length", "keep_below", "backoff")
    )
