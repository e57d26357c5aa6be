"""robosuite manipulation tasks as Gymnasium envs with LIBERO's conventions.

What LIBERO (and the VLA frameworks that train on it: RLinf, siiRL, OpenVLA-OFT) expect of a
robosuite env, kept here so a policy trained on one runs on the other:

- the action is 7 numbers in [-1, 1]: an end-effector delta (x, y, z, roll, pitch, yaw) for
  robosuite's OSC_POSE controller, then the gripper (-1 opens, +1 closes);
- the observation holds the agent-view and wrist camera images (uint8, square, 128 or 224 pixels,
  in robosuite's OpenGL row order: row 0 is the bottom of the picture, as LIBERO returns them) and
  the proprioception LIBERO's policies read (end-effector position and quaternion, gripper and
  joint positions, float64 as robosuite computes them), ``state`` (LIBERO's 8 numbers as RLinf and
  OpenVLA-OFT build them: end-effector position, axis-angle, gripper) and ``task_description``
  (the instruction; ``flip_images=True`` turns the images 180 degrees as those pipelines do);
- ``info["task"]`` is the task's instruction in words, ``info["success"]`` the task's own
  ``_check_success()``; the episode terminates on success (LIBERO's ``done``), the reward is
  robosuite's sparse one (1.0 on success).

Seeds: ``reset(seed=s)`` re-seeds the generator robosuite draws object placements and robot
initialisation noise from, so a seed gives the same scene in any process. ``reset(options=
{"init_state": flat})`` then restores a MuJoCo state flattened by ``sim.get_state().flatten()``
(LIBERO's init states are such arrays).

``get_state``/``set_state`` carry what the next steps depend on: MuJoCo's whole integration state
(``mj_getState`` with ``mjSTATE_INTEGRATION``: positions, velocities, actuator activations,
controls, the solver's warm start, mocap bodies), the bodies' placement in the model (where a task
puts a fixture without a joint, as Door does), the controllers' goals and the grippers' ramped
commands (robosuite keeps these outside MuJoCo), each sensor's sampling clock and last sample
and the sensors' shared cache (robosuite samples observations on their own clock), the env's step count and clock, and the
generator later unseeded resets draw from. The same actions after ``set_state`` give the same observations,
byte for byte. ``sim.get_state()`` (time, positions, velocities) alone would not: the warm start and
the gripper's ramp differ.

>>> from gymwire.sim.robosuite_tasks import RobosuiteTask
>>> env = RobosuiteTask(task="Lift", image_size=128)
>>> obs, info = env.reset(seed=0)
>>> obs["agentview_image"].shape, info["task"]
((128, 128, 3), 'pick up the red cube')
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np

from ..codec import pack, unpack
from .rendering import configure_gl, drop_effects, effects_on

IMAGE_SIZES = (128, 224)
# LIBERO's camera names: the scene camera and the one on the gripper.
CAMERAS = ("agentview", "robot0_eye_in_hand")
PROPRIO = {"robot0_eef_pos": 3, "robot0_eef_quat": 4, "robot0_gripper_qpos": 2, "robot0_joint_pos": 7}
# The tasks served, with the instruction a language-conditioned policy gets.
TASKS = {
    "Lift": "pick up the red cube",
    "Stack": "stack the red cube on top of the green cube",
    "PickPlaceCan": "pick up the can and place it in its bin",
    "NutAssemblySquare": "fit the square nut onto the square peg",
    "Door": "open the door",
}
# robosuite's default rates: 20 Hz control over a 500 Hz simulation.
CONTROL_FREQ = 20
MAX_EPISODE_STEPS = 300
MODEL_SEED = 0


def image_space(size: int) -> gym.spaces.Box:
    return gym.spaces.Box(0, 255, (size, size, 3), np.uint8)


# Task instructions are words, spaces and a little punctuation.
TASK_CHARSET = string.ascii_letters + string.digits + " .,'-_/()"


def libero_observation_space(size: int, cameras: Iterable[str] = CAMERAS) -> gym.spaces.Dict:
    spaces: dict[str, gym.spaces.Space[Any]] = {f"{camera}_image": image_space(size) for camera in cameras}
    for key, dim in PROPRIO.items():
        spaces[key] = gym.spaces.Box(-np.inf, np.inf, (dim,), np.float64)
    # What RLinf's and OpenVLA-OFT's LIBERO pipelines feed a policy: the 8-dim state and the instruction.
    spaces["state"] = gym.spaces.Box(-np.inf, np.inf, (8,), np.float32)
    spaces["task_description"] = gym.spaces.Text(max_length=256, charset=TASK_CHARSET)
    return gym.spaces.Dict(spaces)


def quat_to_axis_angle(quat: np.ndarray) -> np.ndarray:
    """robosuite's (x, y, z, w) quaternion as an axis-angle vector (robosuite's quat2axisangle, which LIBERO's state uses)."""
    w = float(np.clip(quat[3], -1.0, 1.0))
    den = np.sqrt(1.0 - w * w)
    if np.isclose(den, 0.0):
        return np.zeros(3)
    return (quat[:3] * 2.0 * np.arccos(w)) / den


def libero_action_space() -> gym.spaces.Box:
    return gym.spaces.Box(-1.0, 1.0, (7,), np.float32)


def check_image_size(size: int) -> int:
    if size not in IMAGE_SIZES:
        raise ValueError(f"image_size must be one of {IMAGE_SIZES} (LIBERO's sizes), got {size!r}")
    return int(size)


def pick_observation(raw: dict[str, Any], space: gym.spaces.Dict, language: str, flip: bool) -> dict[str, Any]:
    """The keys of ``space`` from robosuite's observation dict (which holds many more), the LIBERO
    state and the instruction; images turned 180 degrees with ``flip``."""
    obs: dict[str, Any] = {}
    for key in space.spaces:
        if key.endswith("_image"):
            obs[key] = np.ascontiguousarray(raw[key][::-1, ::-1] if flip else raw[key])
        elif key in PROPRIO:
            obs[key] = np.ascontiguousarray(raw[key])
    obs["state"] = np.concatenate([raw["robot0_eef_pos"], quat_to_axis_angle(raw["robot0_eef_quat"]), raw["robot0_gripper_qpos"]]).astype(np.float32)
    obs["task_description"] = language
    return obs


def reseed(sim_env: Any, seed: int) -> None:
    """Points robosuite's generator and every placement sampler (which keep a reference to the
    generator they were built with) at a fresh generator from ``seed``."""
    rng = np.random.default_rng(seed)
    sim_env.rng = rng
    pending = [getattr(sim_env, "placement_initializer", None)]
    while pending:
        sampler = pending.pop()
        if sampler is None:
            continue
        if hasattr(sampler, "rng"):
            sampler.rng = rng
        pending.extend(getattr(sampler, "samplers", {}).values())


def restore_flat_state(sim_env: Any, flat: Any) -> None:
    state = np.asarray(flat, dtype=np.float64).ravel()
    expected = sim_env.sim.get_state().flatten().size
    if state.size != expected:
        raise ValueError(f"init_state has {state.size} numbers; this task's MuJoCo state has {expected}")
    sim_env.sim.set_state_from_flattened(state)
    sim_env.sim.forward()


T = TypeVar("T")
STATE_FORMAT = "gymwire.robosuite-state/v1"


def _controller_values(controller: Any) -> dict[str, Any]:
    """A controller's numeric attributes: its goals and the kinematics it cached at its last update
    (it reuses them until it updates again), with its constants (gains, limits) alongside."""
    out: dict[str, Any] = {}
    for name, value in vars(controller).items():
        if isinstance(value, np.ndarray) and value.dtype.kind in "fiub":
            out[name] = np.array(value)
        elif isinstance(value, (bool, int, float, np.number)):
            out[name] = value.item() if isinstance(value, np.number) else value
    return out


def _integration_state(sim_env: Any) -> tuple[Any, Any, Any]:
    import mujoco

    model, data = sim_env.sim.model._model, sim_env.sim.data._data
    return model, data, mujoco.mjtState.mjSTATE_INTEGRATION


def capture_state(sim_env: Any, task: str) -> bytes:
    """Everything the next steps of a robosuite env depend on (module doc), as gymwire codec bytes."""
    import mujoco

    model, data, spec = _integration_state(sim_env)
    physics = np.empty(mujoco.mj_stateSize(model, spec), np.float64)
    mujoco.mj_getState(model, data, physics, spec)
    goals = []
    grippers = []
    for r, robot in enumerate(sim_env.robots):
        for part, controller in robot.composite_controller.part_controllers.items():
            goals.extend([r, part, name, value] for name, value in _controller_values(controller).items())
        for arm, gripper in robot.gripper.items():
            grippers.append([r, arm, np.array(gripper.current_action, np.float64)])
    sensors = [
        [name, float(o._time_since_last_sample), float(o._current_delay), bool(o._sampled), np.array(o._current_observed_value)]
        for name, o in sim_env._observables.items()
    ]
    return pack(
        {
            "format": STATE_FORMAT,
            "sensors": sensors,
            # The sensors' shared cache: a sensor reads the values others sampled last.
            "cache": [[name, np.array(value)] for name, value in sim_env._obs_cache.items()],
            "task": task,
            "physics": physics,
            # Fixtures a task places at reset without a joint (Door's frame) are placed in the model.
            "body_pos": np.array(sim_env.sim.model._model.body_pos),
            "body_quat": np.array(sim_env.sim.model._model.body_quat),
            "goals": goals,
            "grippers": grippers,
            "timestep": int(sim_env.timestep),
            "cur_time": float(sim_env.cur_time),
            "rng": json.dumps(sim_env.rng.bit_generator.state),
        }
    )


def restore_state(sim_env: Any, task: str, state: bytes, observe: Callable[[], T]) -> T:
    """Restores :func:`capture_state`'s bytes and returns ``observe()`` of the restored scene;
    ValueError (nothing changed) for bytes of another task or shape.

    MuJoCo's derived quantities (body poses, contacts) are computed for ``observe`` with
    ``mj_forward``, which also rewrites the solver's warm start; the integration state is then set
    once more, so the next step starts from exactly the captured one."""
    import mujoco

    try:
        s = unpack(state)
    except Exception as err:  # noqa: BLE001 - any decode failure is the client's bytes
        raise ValueError(f"not a robosuite state ({err})") from err
    if not isinstance(s, dict) or s.get("format") != STATE_FORMAT:
        raise ValueError(f"not a robosuite state: expected format {STATE_FORMAT!r}")
    if s.get("task") != task:
        raise ValueError(f"the state was taken from task {s.get('task')!r}; this env runs {task!r}")
    model, data, spec = _integration_state(sim_env)
    physics = np.array(s.get("physics"))  # a writable copy: mj_setState takes no read-only buffer
    size = mujoco.mj_stateSize(model, spec)
    if physics.dtype != np.float64 or physics.shape != (size,) or not np.isfinite(physics).all():
        raise ValueError(f"the state's physics must be {size} finite float64 values; got {physics.dtype} {list(physics.shape)}")
    bodies = {}
    for name in ("body_pos", "body_quat"):
        value = np.array(s.get(name))
        held = getattr(model, name)
        if value.dtype != held.dtype or value.shape != held.shape or not np.isfinite(value).all():
            raise ValueError(f"the state's {name} must be {held.dtype} {list(held.shape)}; got {value.dtype} {list(value.shape)}")
        bodies[name] = value
    # Every target is checked before anything is written, so refused bytes leave the env as it was.
    writes = []
    for r, part, name, value in s.get("goals", []):
        controller = sim_env.robots[int(r)].composite_controller.part_controllers.get(part)
        # Only numbers, and only over numbers (or attributes a controller sets once it has run): never over its references.
        held = vars(controller).get(name) if controller is not None else None
        numeric = held is None or isinstance(held, (np.ndarray, bool, int, float, np.number))
        if controller is None or not str(name).isidentifier() or name.startswith("_") or not numeric or not isinstance(value, (np.ndarray, bool, int, float)):
            raise ValueError(f"the state's {part}.{name} does not fit this env's controllers")
        writes.append((controller, name, np.array(value) if isinstance(value, np.ndarray) else value))
    for r, arm, value in s.get("grippers", []):
        gripper = sim_env.robots[int(r)].gripper.get(arm)
        value = np.asarray(value, np.float64)
        if gripper is None or value.shape != (int(gripper.dof) * 2,) and value.shape != (int(gripper.dof),):
            raise ValueError(f"the state's gripper {arm!r} does not fit this env's robots")
        writes.append((gripper, "current_action", value.copy()))
    observables = sim_env._observables
    sensors = s.get("sensors", [])
    if sorted(str(entry[0]) for entry in sensors) != sorted(observables):
        raise ValueError("the state's observables do not fit this env's")
    cache = s.get("cache", [])
    rng_state = json.loads(s["rng"])
    mujoco.mj_setState(model, data, physics, spec)
    model.body_pos[:] = bodies["body_pos"]
    model.body_quat[:] = bodies["body_quat"]
    for target, name, value in writes:
        setattr(target, name, value)
    sim_env.timestep = int(s["timestep"])
    sim_env.cur_time = float(s["cur_time"])
    # In place: the placement samplers hold this generator object.
    sim_env.rng.bit_generator.state = rng_state
    sim_env.sim.forward()
    seen = observe()
    # Observing forces every sensor to sample; they resume their sampling clocks as captured.
    for name, since, delay, sampled, value in sensors:
        o = observables[name]
        o._time_since_last_sample, o._current_delay, o._sampled = float(since), float(delay), bool(sampled)
        o._current_observed_value = value if np.ndim(value) == 0 else np.array(value)
    sim_env._obs_cache.clear()
    sim_env._obs_cache.update((str(name), np.array(value)) for name, value in cache)
    mujoco.mj_setState(model, data, physics, spec)
    return seen


def remake_render_context(sim_env: Any, effects: bool | None) -> bool:
    """robosuite makes its offscreen context inside make, with the model's 4 anti-aliasing
    samples, shadows and reflections; without effects (rendering.effects_default) the context is
    rebuilt with no samples and the scene drops shadows and reflections."""
    sim = sim_env.sim
    context = sim._render_context_offscreen
    on = effects_on(effects)
    if not on:
        drop_effects(sim.model._model, context.scn)
        context.gl_ctx.make_current()
        context.con.free()
        context._set_mujoco_context_and_buffers()
    return on


class RobosuiteTask(gym.Env[dict[str, Any], np.ndarray]):
    """A robosuite task on a Panda arm with LIBERO's action, cameras and proprioception (module doc)."""

    #: Its renderer's GL context is current on the thread that made it (gymwire.worker.host).
    gymwire_thread_bound = True
    metadata = {"render_modes": ["rgb_array"], "render_fps": CONTROL_FREQ}

    def __init__(
        self,
        task: str = "Lift",
        image_size: int = 128,
        robot: str = "Panda",
        render_effects: bool | None = None,
        flip_images: bool = False,
        render_mode: str | None = None,
    ) -> None:
        if task not in TASKS:
            raise ValueError(f"unknown robosuite task {task!r}; served tasks: {', '.join(TASKS)}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be 'rgb_array' or None, got {render_mode!r}")
        self.image_size = check_image_size(image_size)
        self.render_mode = render_mode
        self.task = task
        self.language = TASKS[task]
        self.flip_images = bool(flip_images)
        configure_gl()
        import robosuite

        # hard_reset=False: a reset restores the loaded model instead of rebuilding it from XML
        # (seconds per reset); reseed() keeps resets seeded all the same. ignore_done: episodes end
        # on success or at the server's TimeLimit, not at robosuite's horizon.
        self.sim_env = robosuite.make(
            task,
            robots=robot,
            controller_configs=robosuite.load_composite_controller_config(controller="BASIC"),
            has_renderer=False,
            has_offscreen_renderer=True,
            use_camera_obs=True,
            camera_names=list(CAMERAS),
            camera_heights=self.image_size,
            camera_widths=self.image_size,
            control_freq=CONTROL_FREQ,
            reward_shaping=False,
            ignore_done=True,
            hard_reset=False,
            # The model draws object sizes from this generator at make: a fixed seed builds the
            # same scene in every process (resets re-seed it for placements, see reseed).
            seed=MODEL_SEED,
        )
        self.render_effects = remake_render_context(self.sim_env, render_effects)
        low, _high = self.sim_env.action_spec
        if low.shape != (7,):
            raise ValueError(f"robot {robot} has a {low.shape[0]}-dim action; LIBERO's convention needs a 7-dim arm and gripper")
        self.observation_space = libero_observation_space(self.image_size)
        self.action_space = libero_action_space()
        self._last: dict[str, Any] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            reseed(self.sim_env, seed)
        raw = self.sim_env.reset()
        init_state = (options or {}).get("init_state")
        if init_state is not None:
            restore_flat_state(self.sim_env, init_state)
            raw = self.sim_env._get_observations(force_update=True)
        self._last = pick_observation(raw, self.observation_space, self.language, self.flip_images)
        return self._last, {"task": self.language, "success": bool(self.sim_env._check_success())}

    def step(self, action: np.ndarray) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        raw, reward, _done, _info = self.sim_env.step(np.asarray(action, dtype=np.float64))
        success = bool(self.sim_env._check_success())
        self._last = pick_observation(raw, self.observation_space, self.language, self.flip_images)
        return self._last, float(reward), success, False, {"task": self.language, "success": success}

    def gymwire_get_state(self) -> bytes:
        return capture_state(self.sim_env, self.task)

    def gymwire_set_state(self, state: bytes) -> None:
        raw = restore_state(self.sim_env, self.task, state, lambda: self.sim_env._get_observations(force_update=True))
        self._last = pick_observation(raw, self.observation_space, self.language, self.flip_images)

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array" or self._last is None:
            return None
        return self._last["agentview_image"]

    def close(self) -> None:
        self.sim_env.close()
