"""Gymnasium registration and pickling against the live server: ``gymnasium.make`` with ``url=``,
``env.spec``, ``check_env`` without the spec warning, pickled envs and ``AsyncVectorEnv`` factories."""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from conftest import server_envs
from gymnasium.utils.env_checker import check_env

import gymwire


def test_bundled_ids_are_what_the_server_lists() -> None:
    assert set(gymwire.BUNDLED_ENV_IDS) == {e["id"] for e in server_envs()}
    for env_id in gymwire.BUNDLED_ENV_IDS:
        assert env_id in gym.registry


def test_gymnasium_make_with_url_sets_the_spec(url: str) -> None:
    env = gym.make("gymwire/CartPole-v1", url=url)
    try:
        assert env.spec is not None
        assert env.spec.id == "gymwire/CartPole-v1"
        assert env.unwrapped.spec is not None
        assert isinstance(env.unwrapped, gymwire.GymwireEnv)
        obs, _ = env.reset(seed=3)
        assert env.observation_space.contains(obs)
        _, reward, *_ = env.step(env.action_space.sample())
        assert reward == 1.0
    finally:
        env.close()


def test_module_prefixed_id_imports_gymwire(url: str) -> None:
    env = gym.make("gymwire:gymwire/CartPole-v1", url=url)
    try:
        assert env.spec is not None and env.spec.id == "gymwire/CartPole-v1"
    finally:
        env.close()


def test_env_kwargs_reach_the_server(url: str) -> None:
    env = gym.make("gymwire/CartPole-v1", url=url, render_mode="rgb_array")
    try:
        env.reset(seed=0)
        frame = env.render()
        assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.ndim == 3
    finally:
        env.close()


def test_check_env_passes_without_the_spec_warning(url: str) -> None:
    env = gym.make("gymwire/CartPole-v1", url=url)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped)
        messages = [str(w.message) for w in caught]
        assert not [m for m in messages if "spec" in m.lower()], messages
    finally:
        env.close()


def test_make_without_url_says_what_is_missing() -> None:
    with pytest.raises(TypeError, match=r'url="ws://'):
        gym.make("gymwire/CartPole-v1")


def test_register_server_envs_makes_url_the_default(url: str) -> None:
    ids = gymwire.register_server_envs(url)
    try:
        assert "gymwire/Conformance-v0" in ids
        env = gym.make("gymwire/CartPole-v1")  # the url is the spec's default now
        try:
            assert env.spec is not None and env.spec.kwargs["url"] == url
            env.reset(seed=0)
        finally:
            env.close()
    finally:
        for env_id in ids:
            gymwire.register_env(env_id)  # back to url-less specs for the other tests


def test_a_pickled_env_reconnects_with_a_new_session(url: str) -> None:
    env = gym.make("gymwire/CartPole-v1", url=url)
    try:
        first, _ = env.reset(seed=5)
        copy = pickle.loads(pickle.dumps(env))
        try:
            assert copy.unwrapped.session_id != env.unwrapped.session_id
            assert copy.spec is not None and copy.spec.id == "gymwire/CartPole-v1"
            again, _ = copy.reset(seed=5)
            np.testing.assert_array_equal(first, again)  # same env, same seed, same episode
        finally:
            copy.close()
    finally:
        env.close()


def test_an_env_on_a_shared_client_refuses_to_pickle_with_a_reason(client: gymwire.Client) -> None:
    env = client.make("gymwire/CartPole-v1")
    try:
        with pytest.raises(TypeError, match="gymwire.make"):
            pickle.dumps(env)
    finally:
        env.close()


def test_gymnasium_make_vec_steps_every_session_in_one_frame(url: str) -> None:
    vec = gym.make_vec("gymwire/CartPole-v1", num_envs=4, url=url)
    try:
        assert isinstance(vec, gymwire.GymwireVectorEnv)
        obs, _ = vec.reset(seed=0)
        assert obs.shape == (4, 4)
        _, rewards, *_ = vec.step(vec.action_space.sample())
        assert rewards.tolist() == [1.0] * 4
    finally:
        vec.close()
    sync = gym.make_vec("gymwire/CartPole-v1", num_envs=2, vectorization_mode="sync", url=url)
    try:
        assert isinstance(sync, gym.vector.SyncVectorEnv)
        assert sync.reset(seed=0)[0].shape == (2, 4)
    finally:
        sync.close()


def test_async_vector_env_factories(url: str) -> None:
    vec = gym.vector.AsyncVectorEnv([lambda: gym.make("gymwire/CartPole-v1", url=url) for _ in range(2)])
    try:
        obs, _ = vec.reset(seed=[1, 2])
        assert obs.shape == (2, 4)
        obs, rewards, terminated, truncated, _ = vec.step(np.array([0, 1]))
        assert rewards.tolist() == [1.0, 1.0]
        assert obs.shape == (2, 4)
    finally:
        vec.close()


def test_navsim_v1_is_not_called_out_of_date() -> None:
    """NavsimEnv-v1 and -v2 are two benchmarks (PDMS, EPDMS): Gymnasium's "out of date" warning for
    v1 is silenced, and with every other warning an error, looking v1 up still works."""
    import subprocess
    import sys

    code = (
        "import gymwire, gymnasium\n"
        "from gymnasium.envs.registration import _find_spec\n"
        "assert _find_spec('gymwire/NavsimEnv-v1').id == 'gymwire/NavsimEnv-v1'\n"
        "assert _find_spec('gymwire/NavsimEnv-v2').id == 'gymwire/NavsimEnv-v2'\n"
    )
    run = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
