"""The VLA interface end to end: YAML config -> registry -> env adapter -> real NAVSIM, Bench2Drive and EVAC sessions."""

from __future__ import annotations

import numpy as np
import pytest

import gymwire
from gymwire.control import WaypointController
from gymwire.vla import (
    CallableModel,
    VLAPolicy,
    VLAPrediction,
    adapt_waypoints,
    adapter_for,
    load_config,
    make_model,
    policy_from_config,
    register_model,
)

BENCH2DRIVE_YAML = """
model:
  name: route-follower
  args: {speed: 6.0, horizon: 8}
env:
  id: gymwire/Bench2Drive-v0
  num_envs: 2
  action_type: control
  controller: bench2drive
"""


def test_adapt_waypoints_resamples_to_each_envs_trajectory_shape() -> None:
    straight = np.stack([np.stack([np.arange(1, 7) * 3.0, np.zeros(6)], axis=1)])  # [1, 6, 2] at 6 m/s, 0.5 s apart
    navsim = adapt_waypoints(straight, 8, 3)
    assert navsim.shape == (1, 8, 3) and navsim.dtype == np.float32
    np.testing.assert_allclose(navsim[0, :, 0], np.arange(1, 9) * 3.0, atol=1e-5)  # extrapolated along the last segment
    np.testing.assert_allclose(navsim[0, :, 1:], 0.0, atol=1e-6)  # heading 0 along +x
    np.testing.assert_allclose(adapt_waypoints(straight, 6, 2), straight, atol=1e-6)
    # A 1 s model on a 0.5 s env: the in-between points are interpolated from the ego's origin.
    coarse = np.array([[[2.0, 2.0], [4.0, 4.0]]])
    np.testing.assert_allclose(
        adapt_waypoints(coarse, 4, 3, interval=1.0)[0], [[1, 1, np.pi / 4], [2, 2, np.pi / 4], [3, 3, np.pi / 4], [4, 4, np.pi / 4]], atol=1e-5
    )
    with pytest.raises(ValueError, match=r"\[N, K, 2 or 3\]"):
        adapt_waypoints(np.zeros((6, 2)), 6, 2)


def test_yaml_config_builds_a_policy_that_drives_bench2drive_through_the_reference_controller(url: str) -> None:
    policy = policy_from_config(BENCH2DRIVE_YAML)
    envs = gymwire.make_vec(url, "gymwire/Bench2Drive-v0", num_envs=2, background_vehicles=0)
    try:
        obs, _ = envs.reset(seed=0)
        reference = [WaypointController("bench2drive") for _ in range(2)]
        speeds = []
        for _ in range(60):
            out = policy.act(obs)
            assert out.actions.shape == (2, 3) and envs.action_space.contains(out.actions)
            wps = out.extras["waypoints"]
            assert wps.shape == (2, 6, 2)  # the 8 predicted points resampled to Bench2Drive's 6, stored with the controls
            assert out.extras["speed_target"].shape == (2,)
            for i in range(2):
                expected = reference[i].control(wps[i], float(obs["speed"][i][0]), obs["target_point"][i])
                np.testing.assert_allclose(out.actions[i], np.float32(expected), atol=1e-6)
            obs, _, terminated, truncated, _ = envs.step(out.actions)
            assert not (terminated.any() or truncated.any())
            speeds.append(obs["speed"].reshape(-1))
        assert np.max(speeds) > 3.0
        # A new episode in env 0 starts its controller afresh.
        policy.episode_start(0, "s0", {})
        assert list(policy.adapter.pid.controllers[0].turn.window) == [0.0] * 40
    finally:
        envs.close()


def test_navsim_takes_the_trajectory_as_eight_poses_and_scores_it(url: str) -> None:
    policy = VLAPolicy(make_model("route-follower", speed=5.0, horizon=6), adapter_for("gymwire/NavsimEnv-v1", num_envs=2))
    envs = gymwire.make_vec(url, "gymwire/NavsimEnv-v1", num_envs=2)
    try:
        obs, _ = envs.reset(seed=0)
        inputs = policy.inputs(obs)
        assert inputs.state.shape == (2, 28) and inputs.command.shape == (2,) and len(inputs.instruction) == 2
        assert (inputs.num_waypoints, inputs.waypoint_dims) == (8, 3)
        out = policy.act(obs)
        assert out.actions.shape == (2, 8, 3) and envs.action_space.contains(out.actions)
        np.testing.assert_allclose(policy.predict_waypoints(obs), out.actions, atol=1e-6)
        assert policy.predict_waypoints(obs, num_waypoints=6, dims=2).shape == (2, 6, 2)
        _, rewards, terminated, _, infos = envs.step(out.actions)
        assert terminated.all() and np.isfinite(rewards).all() and "pdms" in infos
    finally:
        envs.close()


def test_evac_takes_the_models_action_chunk_and_hooks_shape_the_inputs(url: str) -> None:
    seen: dict[str, object] = {}

    def model(inputs):
        seen["images"] = {k: v.shape for k, v in inputs.images.items()}
        seen["instruction"] = inputs.instruction
        return VLAPrediction(
            actions=np.zeros((inputs.batch_size, 8, 7), np.float32), values=np.ones(inputs.batch_size), extras={"h": np.zeros((inputs.batch_size, 2))}
        )

    policy = VLAPolicy(
        CallableModel(model),
        adapter_for("gymwire/EvacWorldModel-v0", num_envs=2),
        image_hook=lambda name, imgs: imgs[:, ::2, ::2],
        text_hook=lambda t: f"In: {t}",
    )
    envs = gymwire.make_vec(url, "gymwire/EvacWorldModel-v0", num_envs=2)
    try:
        obs, _ = envs.reset(seed=0)
        out = policy.act(obs)
        assert seen["images"] == {"full_image": (2, obs["full_image"].shape[1] // 2, obs["full_image"].shape[2] // 2, 3)}
        assert all(t.startswith("In: ") for t in seen["instruction"])
        assert out.actions.shape == (2, 8, 7) and out.values.tolist() == [1.0, 1.0] and out.extras["h"].shape == (2, 2)
        envs.step(out.actions)
    finally:
        envs.close()


def test_registry_and_config_errors_name_what_is_wrong() -> None:
    @register_model("test-zero-waypoints")
    def zero() -> CallableModel:
        return CallableModel(lambda inputs: np.zeros((inputs.batch_size, 6, 2), np.float32))

    assert isinstance(make_model("test-zero-waypoints"), CallableModel)
    with pytest.raises(KeyError, match="no VLA model named 'nope'; registered: .*route-follower"):
        make_model("nope")
    with pytest.raises(ValueError, match="needs a 'env' mapping"):
        policy_from_config({"model": {"name": "route-follower"}})
    with pytest.raises(ValueError, match="unknown model options weights"):
        policy_from_config({"model": {"name": "route-follower", "weights": "x"}, "env": {"id": "gymwire/NavsimEnv-v1"}})
    with pytest.raises(KeyError, match="no VLA adapter for 'gymwire/CartPole-v1'"):
        policy_from_config({"model": {"name": "route-follower"}, "env": {"id": "gymwire/CartPole-v1"}})
    assert load_config(BENCH2DRIVE_YAML)["env"]["controller"] == "bench2drive"
    with pytest.raises(ValueError, match="already registered"):
        register_model("route-follower")(lambda: None)


@pytest.mark.torch
def test_a_torch_module_plugs_in_directly_on_its_device() -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed in this venv: client/python/scripts/test-torch.sh runs the torch tests")
    from gymwire.vla import TorchModel

    class Planner(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.head = torch.nn.Linear(3, 12)

        def forward(self, batch):
            return {"waypoints": self.head(batch["state"][:, :3]).reshape(-1, 6, 2), "values": batch["state"][:, 0]}

    torch.manual_seed(0)
    module = Planner()
    model = TorchModel(module, device="cpu")
    assert model.device == "cpu"
    policy = VLAPolicy(model, adapter_for("gymwire/Bench2Drive-v0", num_envs=2, action_type="waypoints"))
    obs = {
        "speed": np.array([[1.0], [2.0]], np.float32),
        "target_point": np.array([[10.0, 0.0], [5.0, 5.0]], np.float32),
        "imu": np.zeros((2, 7), np.float32),
        "command": np.array([4, 1]),
    }
    out = policy.act(obs)
    with torch.no_grad():
        expected = module.head(torch.tensor([[1.0, 10.0, 0.0], [2.0, 5.0, 5.0]])).reshape(-1, 6, 2).numpy()
    np.testing.assert_allclose(out.actions, expected, atol=1e-6)
    np.testing.assert_allclose(out.values, [1.0, 2.0])
    if not torch.cuda.is_available():
        with pytest.warns(RuntimeWarning, match="CUDA unavailable; running the torch model on CPU"):
            assert TorchModel(Planner(), device="cuda").device == "cpu"
