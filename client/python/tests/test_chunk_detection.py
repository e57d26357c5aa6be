"""Which envs take a whole action chunk per step: only those that declare one (EVAC), not every 2-D Box action."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces as gs

from gymwire.integrations._common import ChunkedSessions, is_native_chunk


def test_a_2d_box_is_a_chunk_only_when_the_env_declares_it() -> None:
    poses = gs.Box(-200, 200, (8, 3), np.float32)
    assert not is_native_chunk(poses, {})
    assert not is_native_chunk(gs.Box(-100, 100, (6, 2), np.float32), {"chunk": None})
    assert is_native_chunk(gs.Box(-1, 1, (8, 7), np.float32), {"chunk": 8})
    assert not is_native_chunk(gs.Box(-1, 1, (8, 7), np.float32), {"chunk": 4})
    assert not is_native_chunk(gs.Discrete(2), {"chunk": 8})


def test_navsim_poses_and_bench2drive_waypoints_are_one_action_each(url: str) -> None:
    for env_id, kwargs, shape in (
        ("gymwire/NavsimEnv-v1", {}, (8, 3)),
        ("gymwire/Bench2Drive-v0", {"action_type": "waypoints", "background_vehicles": 0}, (6, 2)),
    ):
        sessions = ChunkedSessions(url, env_id, 2, kwargs)
        try:
            assert sessions.action_space.shape == shape and not sessions.native_chunk, env_id
            sessions.reset(seeds=[0, 1])
            action = np.zeros((2, *shape), np.float32)
            action[..., 0] = np.arange(1, shape[0] + 1) * 2.0  # straight ahead, 2 m apart
            _, rewards, _, _, _ = sessions.chunk_step(action)
            assert rewards.shape == (2, 1), env_id  # one step, not a chunk of shape[0] sub-steps
            assert list(sessions.elapsed) == [1, 1]
            if env_id.startswith("gymwire/Bench2Drive"):
                _, rewards, _, _, _ = sessions.chunk_step(np.stack([action] * 3, axis=1))
                assert rewards.shape == (2, 3) and list(sessions.elapsed) == [4, 4]
        finally:
            sessions.client.close()
