"""make_vec against Gymnasium's own SyncVectorEnv over the same remote envs: identical in every autoreset mode."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import gymwire

CARTPOLE = "gymwire/CartPole-v1"
MODES = ["next_step", "same_step", "disabled"]
MODE_ENUM = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP, "disabled": AutoresetMode.DISABLED}


def _equal(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) and a.dtype == object:
        return a.shape == b.shape and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is b
    return np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("mode", MODES)
def test_matches_gymnasium_sync_vector_env(url: str, mode: str) -> None:
    n = 3
    ours = gymwire.make_vec(url, CARTPOLE, num_envs=n, autoreset_mode=mode)
    ref = SyncVectorEnv([lambda: gymwire.make(url, CARTPOLE) for _ in range(n)], autoreset_mode=MODE_ENUM[mode])
    assert_matches_sync_vector_env(ours, ref, mode)


def _same_batch(a: Any, b: Any) -> bool:
    """Equal batches of observations: the same keys (a Dict's batch), per array the same dtype, shape
    and values, and equal tuples (a Text key's batch)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_batch(a[k], b[k]) for k in a)
    if isinstance(a, tuple):  # the batch of a Text (or another unstacked) space
        return isinstance(b, tuple) and a == b
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def assert_matches_sync_vector_env(ours: gymwire.GymwireVectorEnv, ref: SyncVectorEnv, mode: str, check_obs: Callable[[Any], None] | None = None) -> None:
    """Steps both with the same seeded random actions and checks every output; closes both.
    ``check_obs`` also runs on our observations after the full reset and after every step."""
    n = ours.num_envs
    try:
        assert ours.metadata["autoreset_mode"] == MODE_ENUM[mode]
        assert ours.single_observation_space == ref.single_observation_space
        assert ours.action_space == ref.action_space
        a, ai = ours.reset(seed=11)
        b, bi = ref.reset(seed=11)
        assert _same_batch(a, b) and _equal(ai, bi)
        if check_obs:
            check_obs(a)
        rng = np.random.default_rng(0)
        ends = 0
        for _ in range(120):
            action = rng.integers(0, 2, size=n)
            out_a = ours.step(action)
            out_b = ref.step(action)
            assert _same_batch(out_a[0], out_b[0]), (mode, out_a[0], out_b[0])
            for x, y in zip(out_a[1:4], out_b[1:4], strict=True):
                assert np.array_equal(x, y), (mode, x, y)
            assert _equal(out_a[4], out_b[4]), (out_a[4], out_b[4])
            if check_obs:
                check_obs(out_a[0])
            done = out_a[2] | out_a[3]
            ends += int(done.sum())
            if mode == "disabled" and done.any():
                a, ai = ours.reset(options={"reset_mask": done})
                b, bi = ref.reset(options={"reset_mask": done})
                assert _same_batch(a, b) and _equal(ai, bi)
        assert ends > 0, "no episode ended, so autoreset was not exercised"
    finally:
        ours.close()
        ref.close()


def test_next_step_reset_step_has_zero_reward_and_false_flags(url: str) -> None:
    envs = gymwire.make_vec(url, CARTPOLE, num_envs=2)
    try:
        envs.reset(seed=0)
        for _ in range(200):
            _, _, term, trunc, _ = envs.step(np.ones(2, dtype=np.int64))
            if term.any():
                break
        obs, rewards, term2, trunc2, _ = envs.step(np.ones(2, dtype=np.int64))
        i = int(np.argmax(term))
        assert rewards[i] == 0.0 and not term2[i] and not trunc2[i]
        assert envs.single_observation_space.contains(obs[i])
    finally:
        envs.close()


def test_same_step_infos_carry_final_obs_with_masks(url: str) -> None:
    envs = gymwire.make_vec(url, CARTPOLE, num_envs=2, autoreset_mode="same_step")
    try:
        envs.reset(seed=0)
        for _ in range(200):
            obs, _, term, trunc, infos = envs.step(np.ones(2, dtype=np.int64))
            if term.any():
                break
        assert infos["_final_obs"].tolist() == term.tolist()
        i = int(np.argmax(term))
        assert infos["final_obs"][i].dtype == np.float32 and not np.array_equal(infos["final_obs"][i], obs[i])
    finally:
        envs.close()


def test_dict_observations_are_batched(url: str) -> None:
    envs = gymwire.make_vec(url, "gymwire/Conformance-v0", num_envs=3)
    try:
        obs, infos = envs.reset(seed=1)
        assert envs.observation_space.contains(obs)
        assert infos["_goal"].all() and infos["goal"].shape == (3,)
        obs, *_ = envs.step(envs.action_space.sample())
        assert obs["position"].shape == (3, 2) and obs["position"].dtype == np.float32
    finally:
        envs.close()


def test_invalid_batch_action_raises_and_session_survives(url: str) -> None:
    envs = gymwire.make_vec(url, CARTPOLE, num_envs=2)
    try:
        envs.reset(seed=0)
        with pytest.raises(gymwire.InvalidActionError, match="action 1"):
            envs.step(np.array([0, 7]))
        envs.step(np.array([0, 1]))
    finally:
        envs.close()


def test_remote_last_obs_is_the_latest_batch(url: str) -> None:
    envs = gymwire.make_vec(url, CARTPOLE, num_envs=2)
    try:
        assert envs.remote.last_obs is None
        obs, _ = envs.reset(seed=3)
        assert np.array_equal(envs.remote.last_obs, obs)
        obs, *_ = envs.step(np.array([0, 1]))
        assert np.array_equal(envs.remote.last_obs, obs)
    finally:
        envs.close()


def test_vector_seeds_is_gymnasiums_seed_plus_index_rule() -> None:
    # One rule for every vector env of the SDK (one server's, a Ray pool's, the collection engine's).
    from gymwire.vector import vector_seeds

    assert vector_seeds(7, 3) == [7, 8, 9]
    assert vector_seeds(np.int64(7), 2) == [7, 8]
    assert vector_seeds(None, 3) is None
    assert vector_seeds([1, None, 3], 3) == [1, None, 3]
    with pytest.raises(ValueError, match="seed list has 2 entries for 3 envs"):
        vector_seeds([1, 2], 3)
