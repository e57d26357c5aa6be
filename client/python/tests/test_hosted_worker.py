"""The worker's side of hosted envs without a server: the operations, their error answers, and the
value checks that keep anything msgpack cannot carry (or must not unpickle) off the wire."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hosted_envs import FaultyCounter

from gymwire.codec import pack, unpack
from gymwire.worker.host import Host, HostedEnv
from gymwire.worker.tools import tool
from gymwire.worker.values import UnencodableValueError, wire_metadata, wire_value


class OddInfo(FaultyCounter):
    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, {"nested": {"thing": object()}}


def _host_with(env_factory: str) -> Host:
    host = Host()
    made = host.run({"op": "make", "handle": 1, "target": {"kind": "callable", "path": env_factory}, "kwargs": {}})
    assert "ok" in made, made
    return host


def test_make_describes_spaces_tools_and_state_support() -> None:
    host = _host_with("hosted_envs:make_counter")
    made = host.run({"op": "make", "handle": 2, "target": {"kind": "callable", "path": "hosted_envs:make_counter"}, "kwargs": {"render_mode": "rgb_array"}})[
        "ok"
    ]
    assert made["action_space"] == {"type": "discrete", "n": 2, "start": 0, "dtype": "int64"}
    assert made["render_mode"] == "rgb_array" and made["state"] is True
    assert [t["name"] for t in made["tools"]] == ["add"]
    # What travels is msgpack with tensors, and it decodes to the same description.
    box = unpack(pack(made))["observation_space"]
    assert box["type"] == "box" and np.isinf(box["low"]).all()


def test_steps_answer_arrays_and_exceptions_answer_the_last_traceback_line() -> None:
    host = _host_with("hosted_envs:make_counter")
    assert host.run({"op": "reset", "handle": 1, "seed": 0, "options": {"fault": "raise"}})["ok"][1]["start"] == 0
    err = host.run({"op": "step", "handle": 1, "action": 0})["error"]
    assert err["kind"] == "env" and err["message"] == "ValueError: boom at count 0" and "Traceback" in err["traceback"]
    obs, reward, terminated, truncated, info = host.run({"op": "step", "handle": 1, "action": 1})["ok"]
    assert obs[0] == 2 and reward == 1.0 and isinstance(terminated, bool) and info["pair"] == [1, 2.5]


def test_check_sees_the_observation_before_the_cast() -> None:
    host = Host()
    made = host.run({"op": "make", "handle": 1, "target": {"kind": "callable", "path": "hosted_envs:Float64ForFloat32"}, "kwargs": {}, "check": True})
    assert "ok" in made, made
    err = host.run({"op": "step", "handle": 1, "action": 0})["error"]
    assert err["type"] == "ObservationContractError"
    assert "step returned an observation outside the observation space: an array of dtype float64 where the Box has dtype float32" in err["message"]
    # Without check the worker casts it for the wire, as before.
    host.run({"op": "make", "handle": 2, "target": {"kind": "callable", "path": "hosted_envs:Float64ForFloat32"}, "kwargs": {}})
    assert host.run({"op": "step", "handle": 2, "action": 0})["ok"][0].dtype == np.float32


def test_unencodable_info_names_where_it_sits() -> None:
    host = Host()
    host.envs[1] = HostedEnv(OddInfo())
    host.run({"op": "reset", "handle": 1, "seed": 0})
    err = host.run({"op": "step", "handle": 1, "action": 0})["error"]
    assert err["kind"] == "env" and "info.nested.thing is a object" in err["message"]
    with pytest.raises(UnencodableValueError, match=r"obs\[1\] is a numpy array of dtype complex128"):
        wire_value([1, np.zeros(2, dtype=np.complex128)], "obs")


def test_bad_kwargs_state_bytes_and_unknown_handles_get_their_own_kinds() -> None:
    host = Host()
    bad = host.run({"op": "make", "handle": 1, "target": {"kind": "callable", "path": "hosted_envs:make_counter"}, "kwargs": {"nope": 1}})
    assert bad["error"]["kind"] == "invalid_kwargs" and "nope" in bad["error"]["message"]
    host = _host_with("hosted_envs:make_counter")
    host.run({"op": "reset", "handle": 1, "seed": 0})
    assert host.run({"op": "set_state", "handle": 1, "state": b"\x80\x04not json"})["error"]["kind"] == "invalid_state"
    assert host.run({"op": "step", "handle": 99, "action": 0})["error"]["kind"] == "unknown_handle"
    assert host.run({"op": "describe", "target": {"kind": "gym", "id": "NoSuchEnv-v0"}})["error"]["type"] == "NameNotFound"


def test_gym_ids_are_built_without_gymnasiums_own_limit_and_checks() -> None:
    host = Host()
    assert host.run({"op": "describe", "target": {"kind": "gym", "id": "CartPole-v1"}})["ok"]["max_episode_steps"] == 500
    made = host.run({"op": "make", "handle": 1, "target": {"kind": "gym", "id": "CartPole-v1"}, "kwargs": {}})
    assert "ok" in made, made
    env = host.envs[1].env
    assert not isinstance(env, (gym.wrappers.TimeLimit, gym.wrappers.PassiveEnvChecker, gym.wrappers.OrderEnforcing))


def test_metadata_values_the_wire_cannot_carry_are_sent_as_text() -> None:
    class Tagged(FaultyCounter):
        metadata = {"render_modes": ["rgb_array"], "mode": gym.vector.AutoresetMode.SAME_STEP, "kind": object}

    meta = wire_metadata(Tagged.metadata)
    assert meta["mode"] == "SameStep" and meta["kind"] == "<class 'object'>" and meta["render_modes"] == ["rgb_array"]


def test_tool_parameters_must_be_an_object_schema() -> None:
    with pytest.raises(ValueError, match="type 'object'"):
        tool("bad", {"type": "string"})
