"""Box bounds sent in broadcast form (a suffix of the box's shape) rebuild into full Gymnasium bounds."""

from __future__ import annotations

import numpy as np
import pytest

from gymwire.spaces import space_from_wire


def test_scalar_bounds_broadcast_to_the_box_shape() -> None:
    box = space_from_wire({"type": "box", "dtype": "uint8", "shape": [90, 160, 3], "low": np.array(0, dtype=np.uint8), "high": np.array(255, dtype=np.uint8)})
    assert box.shape == (90, 160, 3)
    assert box.low.shape == (90, 160, 3) and box.high.shape == (90, 160, 3)
    assert int(box.low.min()) == 0 and int(box.high.max()) == 255
    assert box.contains(np.full((90, 160, 3), 7, dtype=np.uint8))


def test_per_channel_bounds_broadcast_along_the_last_axis() -> None:
    low = np.array([-1.0, 0.0, 2.0], dtype=np.float32)
    high = np.array([1.0, 0.5, 3.0], dtype=np.float32)
    box = space_from_wire({"type": "box", "dtype": "float32", "shape": [4, 3], "low": low, "high": high})
    np.testing.assert_array_equal(box.low, np.tile(low, (4, 1)))
    assert box.contains(np.tile(np.array([0.0, 0.25, 2.5], dtype=np.float32), (4, 1)))
    assert not box.contains(np.tile(np.array([0.0, 0.75, 2.5], dtype=np.float32), (4, 1)))


def test_full_shape_bounds_still_read_and_bad_shapes_refused() -> None:
    box = space_from_wire({"type": "box", "dtype": "float64", "shape": [2], "low": np.array([-np.inf, 0.0]), "high": np.array([np.inf, 1.0])})
    assert box.low[0] == -np.inf and box.high[1] == 1.0
    with pytest.raises(ValueError, match="does not broadcast"):
        space_from_wire({"type": "box", "dtype": "float32", "shape": [3, 3], "low": np.zeros(2, dtype=np.float32), "high": np.ones(2, dtype=np.float32)})


def test_a_camera_session_from_the_server_has_full_image_bounds(url: str) -> None:
    import gymwire

    with gymwire.Client(url) as client:
        kwargs = {"cameras": ["CAM_FRONT"], "camera_width": 64, "camera_height": 48}
        made = client.request("make", {"env_id": "gymwire/Bench2Drive-v0", "kwargs": kwargs})
        # 48 x 64 x 3 elements (over 4,096) with one bound everywhere: the wire carries each bound as one value.
        wire_rgb = made["observation_space"]["spaces"]["rgb"]["spaces"]["CAM_FRONT"]
        assert np.asarray(wire_rgb["low"]).shape == () and np.asarray(wire_rgb["high"]).shape == ()
        env = gymwire.GymwireEnv(client, client.adopt(made))
        try:
            rgb = env.observation_space["rgb"]["CAM_FRONT"]  # type: ignore[index]
            assert rgb.shape == (48, 64, 3) and rgb.low.shape == (48, 64, 3) and rgb.high.shape == (48, 64, 3)
            assert int(rgb.low.max()) == 0 and int(rgb.high.min()) == 255
            obs, _ = env.reset(seed=3)
            assert env.observation_space.contains(obs)
        finally:
            env.close()


def test_every_wire_space_tag_has_a_builder() -> None:
    # SPACE_TYPES is generated from protocol/spaces.ts: a tag the server gains fails here until the SDK builds it.
    from gymwire._protocol import SPACE_TYPES
    from gymwire.spaces import SPACE_BUILDERS

    assert set(SPACE_BUILDERS) == set(SPACE_TYPES)
    with pytest.raises(ValueError, match="unknown space type"):
        space_from_wire({"type": "hyperbox"})
