"""siiRL: gymwire sessions in place of siiRL's LIBERO adapter, a multi-agent ``env_path`` class and a ``BaseTool``.

siiRL's ``EmbodiedHFRollout`` constructs ``LIBEROAdapter(env_name, num_envs, max_steps,
num_steps_wait, model_family, gpu_ids)`` by name and calls its private ``_blocking_reset`` and
``_blocking_step``; :func:`register` puts :class:`GymwireLIBEROAdapter` in its place (in every Ray
worker, through Ray's ``worker_process_setup_hook``), which returns the same record dicts with
raw-LIBERO observation keys. The server URL and env id come from ``GYMWIRE_URL`` /
``GYMWIRE_ENV_ID`` (siiRL passes no extra arguments), or from ``configure``.

:class:`GymwireTextEnv` is the multi-agent hook (``AgentArguments.env_path:
[gymwire.integrations.siirl_env.ENV_PATH]``): built with no arguments,
``await step(actions, ground_truth) -> (next_obs, reward, should_stop)``. :class:`GymwireSiirlTool`
is an env tool in siiRL's ``BaseTool`` shape.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import os
import re
import sys
import types
import uuid
from typing import Any

import numpy as np

from .. import errors as E
from ._common import ChunkedSessions, ObsMapper, env_setting, optional_attr
from ._lifecycle import EpisodeTable, start_episode
from ._text import default_parse_action, default_render, reply_after

_SETTINGS: dict[str, Any] = {}
# Seconds a text-env episode may sit unused before its session is closed (siiRL never says it gave up a trajectory).
DEFAULT_IDLE_TIMEOUT = 600.0
_LOG = logging.getLogger(__name__)


def configure(
    url: str, env_id: str, env_kwargs: dict[str, Any] | None = None, *, max_turns: int | None = None, idle_timeout: float | None = None, **mapping: Any
) -> None:
    """Sets the server and env for what siiRL constructs (instead of the environment variables).

    ``max_turns`` and ``idle_timeout`` are :class:`GymwireTextEnv`'s; ``mapping`` (``image_key``, ...) is the embodied adapter's.
    """
    _SETTINGS.update(url=url, env_id=env_id, env_kwargs=env_kwargs or {}, max_turns=max_turns, idle_timeout=idle_timeout, mapping=mapping)


# robosuite's proprioception as LIBERO hands it to siiRL, with its sizes.
_RAW_PROPRIO = {"robot0_eef_pos": 3, "robot0_eef_quat": 4, "robot0_gripper_qpos": 2}


def _libero_obs(mapper: ObsMapper, obs: Any) -> dict[str, Any]:
    """Raw LIBERO keys: images, and the end-effector position, quaternion and gripper joints: the
    observation's own where it has them (the robosuite family: its ``state`` is LIBERO's 8 numbers
    with an axis-angle, not a quaternion), else the 3+4+2 split of the state (zeros where it is shorter)."""
    image = mapper.image(obs)
    wrist = mapper.wrist(obs)
    out = {
        "agentview_image": image,
        "robot0_eye_in_hand_image": wrist if wrist is not None else (None if image is None else np.zeros_like(image)),
    }
    if isinstance(obs, dict) and all(np.shape(obs.get(key)) == (size,) for key, size in _RAW_PROPRIO.items()):
        return {**out, **{key: np.asarray(obs[key]) for key in _RAW_PROPRIO}}
    state = mapper.state(obs)
    state = np.zeros(9, dtype=np.float32) if state is None else np.pad(state, (0, max(0, 9 - state.size)))
    return {
        **out,
        "robot0_eef_pos": state[0:3].astype(np.float32),
        "robot0_eef_quat": state[3:7].astype(np.float32),
        "robot0_gripper_qpos": state[7:9].astype(np.float32),
    }


class GymwireLIBEROAdapter:
    """The ``LIBEROAdapter`` surface over ``num_envs`` gymwire sessions (task id and trial id seed each reset)."""

    def __init__(
        self,
        env_name: str,
        num_envs: int,
        max_steps: int,
        num_steps_wait: int = 0,
        model_family: str = "openvla",
        gpu_ids: Any = None,
        *,
        url: str | None = None,
        env_id: str | None = None,
        env_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.env_name = env_name
        self.num_envs = int(num_envs)
        self.max_steps = int(max_steps)
        self.num_steps_wait = int(num_steps_wait)
        self.model_family = model_family
        self.gpu_ids = gpu_ids
        url = env_setting(url or _SETTINGS.get("url"), "GYMWIRE_URL", "gymwire server URL")
        env_id = env_setting(env_id or _SETTINGS.get("env_id"), "GYMWIRE_ENV_ID", "gymwire env id")
        kwargs = env_kwargs if env_kwargs is not None else _SETTINGS.get("env_kwargs") or json.loads(os.environ.get("GYMWIRE_ENV_KWARGS", "{}"))
        self.sessions = ChunkedSessions(url, env_id, self.num_envs, kwargs)
        self.mapper = ObsMapper(self.sessions.observation_space, **(_SETTINGS.get("mapping") or {}))
        # EmbodiedHFRollout builds this adapter, so its module is loaded by now even when register() ran first.
        if _ROLLOUT_MODULE in sys.modules:
            _patch_rollout(sys.modules[_ROLLOUT_MODULE])
        self.task_ids = [0] * self.num_envs
        self.steps = np.zeros(self.num_envs, dtype=np.int64)
        self.active = np.zeros(self.num_envs, dtype=np.bool_)
        self.complete = np.zeros(self.num_envs, dtype=np.bool_)
        self.finish_step = np.zeros(self.num_envs, dtype=np.int64)

    def _blocking_reset(self, task_ids: list[int], trial_ids: list[int]) -> list[dict[str, Any]]:
        n = len(task_ids)
        if n > self.num_envs:
            raise ValueError(f"{n} tasks for {self.num_envs} envs")
        # A (task, trial) pair is one seed, so the same pair replays the same initial state.
        seeds = [int(t) * 100_003 + int(r) for t, r in zip(task_ids, trial_ids, strict=True)]
        self.sessions.reset(list(range(n)), seeds)
        records = []
        for i in range(n):
            obs = self.sessions.last_obs[i]
            self.task_ids[i] = int(task_ids[i])
            self.steps[i] = 0
            self.active[i] = True
            self.complete[i] = False
            self.finish_step[i] = 0
            libero = _libero_obs(self.mapper, obs)
            records.append(
                {
                    "type": "init",
                    "obs": libero,
                    "task_description": self.mapper.task(obs, default=self.env_name),
                    "valid_images": [] if libero["agentview_image"] is None else [libero["agentview_image"]],
                    "task_file_name": f"{self.env_name}_task_{task_ids[i]}_trial_{trial_ids[i]}",
                    "active": True,
                    "complete": False,
                    "finish_step": 0,
                }
            )
        return records

    def _blocking_step(self, data: dict[str, Any]) -> list[dict[str, Any] | None]:
        """Steps the listed envs; like siiRL's ``LIBEROAdapter``, ``actions`` rows and the returned list are indexed by env id.

        ``EmbodiedHFRollout`` passes the model's actions for every env (``[B, C, A]``) with the ids
        of the still-active envs in ``indices``, and reads ``results[env_id]``; envs not listed get
        ``None`` and are not stepped.
        """
        indices = sorted({int(i) for i in data["indices"]})
        actions = np.asarray(data["actions"])
        if actions.ndim == 2:
            actions = actions[:, None, :]
        if indices and (indices[-1] >= self.num_envs or indices[-1] >= actions.shape[0]):
            raise ValueError(f"env index {indices[-1]} is out of range: {self.num_envs} envs, actions for {actions.shape[0]}")
        self._check_action_shape(actions)
        chunk = np.zeros((self.num_envs, *actions.shape[1:]), dtype=actions.dtype)
        chunk[indices] = actions[indices]
        # Envs not listed are treated as done for this call so they are not stepped.
        saved_done = self.sessions.done.copy()
        listed = np.zeros(self.num_envs, dtype=np.bool_)
        listed[indices] = True
        self.sessions.done |= ~listed
        obs_list, rewards, terms, truncs, info_list = self.sessions.chunk_step(chunk)
        self.sessions.done = np.where(listed, self.sessions.done, saved_done)
        results: list[dict[str, Any] | None] = [None] * actions.shape[0]
        for i in indices:
            taken = actions.shape[1]
            ended_at = np.flatnonzero(terms[i] | truncs[i])
            self.steps[i] += taken if not len(ended_at) else int(ended_at[0]) + 1
            # siiRL's `complete` means the task succeeded: only a success signal sets it, never a bare termination.
            if any(_succeeded(infos[i]) for infos in info_list):
                self.complete[i] = True
            if terms[i].any() or truncs[i].any() or self.steps[i] >= self.max_steps:
                self.active[i] = False
                self.finish_step[i] = self.steps[i]
            frames = [_libero_obs(self.mapper, step_obs[i])["agentview_image"] for step_obs in obs_list]
            libero = _libero_obs(self.mapper, self.sessions.last_obs[i])
            results[i] = {
                "type": "step",
                "obs": libero,
                "active": bool(self.active[i]),
                "complete": bool(self.complete[i]),
                "finish_step": int(self.finish_step[i]),
                "valid_images": [f for f in frames if f is not None],
            }
        return results

    def _check_action_shape(self, actions: np.ndarray) -> None:
        """A clear error in siiRL's log when the policy's actions do not fit the env's action space."""
        space = self.sessions.action_space
        want = tuple(space.shape[1:]) if self.sessions.native_chunk else tuple(space.shape or ()) or (1,)
        if tuple(actions.shape[2:]) != want:
            raise ValueError(
                f"gymwire: the policy's actions have shape {tuple(actions.shape)}, which is not [num_envs, chunk, {', '.join(map(str, want))}] "
                f"for {self.sessions.env_id} (action space {space})"
            )

    def close(self) -> None:
        self.sessions.close()


_LIBERO_MODULE = "siirl.environment.embodied.adapters.libero"
_ROLLOUT_MODULE = "siirl.engine.rollout.embodied_rollout"
# Every module that holds siiRL's LIBEROAdapter by name (each re-exports the one above it).
_ADAPTER_HOLDERS = (_LIBERO_MODULE, "siirl.environment.embodied.adapters", "siirl.environment.embodied", _ROLLOUT_MODULE)


def _succeeded(info: dict[str, Any]) -> bool:
    """The env's success signal (``success`` or ``is_success`` in the step's info)."""
    for key in ("success", "is_success"):
        if key in info and bool(np.asarray(info[key]).any()):
            return True
    return False


def _siirl_has(module: str) -> bool:
    """Whether siiRL ships ``module``, looked up on disk: importing its parent packages would run the LIBERO module."""
    try:
        spec = importlib.util.find_spec("siirl")
    except (ImportError, ValueError):  # a stand-in module without a spec
        return False
    if spec is None or not spec.submodule_search_locations:
        return False
    rel = module.split(".")[1:]
    return any(os.path.exists(os.path.join(root, *rel) + ".py") for root in spec.submodule_search_locations)


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent that is not a package, or a half-built module
        return False


def obs_to_input(rollout: Any, obs: dict[str, Any]) -> dict[str, Any]:
    """``EmbodiedHFRollout._obs_to_input`` for gymwire observations.

    siiRL's own version imports LIBERO (``siirl.utils.embodied.libero_utils``) and turns every image
    by 180 degrees, because LIBERO renders upside down; gymwire images are upright. Images are
    resized to 224x224 as siiRL does; an env without an image gives ``full_image`` None.
    """
    from PIL import Image

    def resized(image: Any) -> np.ndarray | None:
        if image is None:
            return None
        return np.asarray(Image.fromarray(np.asarray(image, dtype=np.uint8)).resize((224, 224), Image.Resampling.LANCZOS))

    quat = np.asarray(obs["robot0_eef_quat"], dtype=np.float64)
    out = {
        "full_image": resized(obs.get("agentview_image")),
        "state": np.concatenate([obs["robot0_eef_pos"], quat_to_axis_angle(quat), obs["robot0_gripper_qpos"]]),
    }
    if int(getattr(getattr(rollout.config, "embodied", None), "num_images_in_input", 1) or 1) > 1:
        out["wrist_image"] = resized(obs.get("robot0_eye_in_hand_image"))
    return out


def quat_to_axis_angle(quat: np.ndarray) -> np.ndarray:
    """An ``(x, y, z, w)`` quaternion as axis * angle (robosuite's ``quat2axisangle``, which siiRL uses)."""
    w = float(np.clip(quat[3], -1.0, 1.0))
    den = np.sqrt(1.0 - w * w)
    if np.isclose(den, 0.0):
        return np.zeros(3)
    return np.asarray(quat[:3], dtype=np.float64) * 2.0 * np.arccos(w) / den


def _patch_rollout(rollout_module: Any) -> bool:
    rollout_cls = getattr(rollout_module, "EmbodiedHFRollout", None)
    if rollout_cls is None:
        return False
    rollout_cls._obs_to_input = obs_to_input
    return True


def register(adapter_cls: type = GymwireLIBEROAdapter) -> bool:
    """Makes siiRL's embodied rollout step gymwire sessions in this process; False when siiRL is absent.

    siiRL's ``EmbodiedHFRollout`` builds ``LIBEROAdapter`` by name, and siiRL's LIBERO module calls
    ``exit()`` at import when LIBERO is not installed. So when LIBERO is missing, gymwire's adapter
    takes that module's place before anything imports it; every module that re-exports
    ``LIBEROAdapter`` then gets gymwire's adapter, and ``EmbodiedHFRollout._obs_to_input`` reads
    gymwire observations. siiRL runs rollouts inside Ray actors: call this in every worker with
    Ray's ``runtime_env={"worker_process_setup_hook": "gymwire.integrations.siirl.register"}``
    (docs/integrations.md).
    """
    if _LIBERO_MODULE not in sys.modules and _siirl_has(_LIBERO_MODULE) and not _module_exists("libero"):
        stand_in = types.ModuleType(_LIBERO_MODULE, "gymwire's LIBEROAdapter in place of siiRL's LIBERO adapter (LIBERO is not installed)")
        stand_in.LIBEROAdapter = adapter_cls  # type: ignore[attr-defined]
        sys.modules[_LIBERO_MODULE] = stand_in
    patched = False
    for mod_name in _ADAPTER_HOLDERS:
        if mod_name not in sys.modules and not _siirl_has(mod_name) and not _siirl_has(mod_name + ".__init__"):
            continue
        try:
            mod = importlib.import_module(mod_name)
        except SystemExit as e:
            # siiRL's LIBERO adapter calls exit() at import when LIBERO is missing; that must not end the caller.
            raise ImportError(f"{mod_name} exited while importing (siiRL's LIBERO adapter exits when LIBERO is not installed): exit code {e.code}") from None
        except ImportError as err:
            if mod_name == _ROLLOUT_MODULE:
                # The rollout needs siiRL's GPU-side stack (tensorflow, the V-JEPA package); the adapter patches it when it is built.
                _LOG.warning("gymwire: %s is not importable yet (%s); EmbodiedHFRollout is patched when it builds the adapter", mod_name, err)
                continue
            raise
        if hasattr(mod, "LIBEROAdapter"):
            mod.LIBEROAdapter = adapter_cls
            patched = True
        patched = _patch_rollout(mod) or patched
    return patched


class GymwireTextEnv:
    """A gymwire env as siiRL's multi-agent env (``AgentArguments.env_path``): one session per trajectory.

    siiRL's ``MultiAgentLoop.colocate_task`` builds ``Class()`` afresh for every step and calls
    ``await step(actions, ground_truth) -> (next_obs, reward, should_stop)``, where ``actions`` holds
    every agent's whole text (its prompt plus its reply; the last agent's comes last), and the last
    agent's ``next_obs`` entry becomes its next prompt. So, as siiRL's own example envs do:

    - The action is read out of the last agent's reply: the text after the last observation this env
      showed, and in it the JSON inside the last ``<action>...</action>`` (else the last
      ``\\boxed{...}``). A reply without one is answered with the reason, reward 0, and the episode goes on.
    - Each agent's next text is its own text plus the new observation. The observation carries the
      episode's tag (``[gymwire episode <hex>]``), so the next step finds the trajectory's session in
      the agents' texts: the session is made and reset (``ground_truth`` may carry ``{"seed": ...}``)
      on a trajectory's first step and used until it ends.
    - The session closes when the episode ends (``should_stop``), after ``max_turns`` steps (set it to
      siiRL's ``multi_turn.max_assistant_turns``: siiRL's last turn then ends the episode too), when it
      sits unused for ``idle_timeout`` seconds (trajectories siiRL cut short for length), and at
      :meth:`close_all` or interpreter exit.

    Settings come from :func:`configure` or ``GYMWIRE_URL`` / ``GYMWIRE_ENV_ID`` /
    ``GYMWIRE_ENV_KWARGS`` / ``GYMWIRE_MAX_TURNS`` / ``GYMWIRE_IDLE_TIMEOUT``.
    """

    episodes = EpisodeTable("siiRL text env", idle_timeout=DEFAULT_IDLE_TIMEOUT)
    EPISODE_RE = re.compile(r"\[gymwire episode ([0-9a-f]{32})\]")

    def __init__(self) -> None:
        self.url = env_setting(_SETTINGS.get("url"), "GYMWIRE_URL", "gymwire server URL")
        self.env_id = env_setting(_SETTINGS.get("env_id"), "GYMWIRE_ENV_ID", "gymwire env id")
        self.env_kwargs = _SETTINGS.get("env_kwargs") or json.loads(os.environ.get("GYMWIRE_ENV_KWARGS", "{}"))
        max_turns = _SETTINGS.get("max_turns") or os.environ.get("GYMWIRE_MAX_TURNS")
        self.max_turns = int(max_turns) if max_turns else None
        idle = _SETTINGS.get("idle_timeout") or os.environ.get("GYMWIRE_IDLE_TIMEOUT")
        self.episodes.idle_timeout = float(idle) if idle else DEFAULT_IDLE_TIMEOUT
        self.key: str | None = None

    def _find_episode(self, texts: list[str]) -> str | None:
        for text in reversed(texts):
            for key in reversed(self.EPISODE_RE.findall(text)):
                if self.episodes.get(key) is not None:
                    return key
        return None

    @property
    def total(self) -> float:
        """This episode's return so far."""
        episode = self.episodes.get(self.key or "")
        return 0.0 if episode is None else float(episode.episode_return)

    async def step(self, actions: list[str], ground_truth: Any = None) -> tuple[list[str], float, bool]:
        texts = [a if isinstance(a, str) else "" for a in actions] or [""]
        self.key = self._find_episode(texts) or uuid.uuid4().hex
        seed = ground_truth.get("seed") if isinstance(ground_truth, dict) else None
        episode = await self.episodes.open(self.key, lambda: start_episode(self.url, self.env_id, self.env_kwargs, seed=seed))
        remote = episode.remote
        episode.notes["turns"] = turns = episode.notes.get("turns", 0) + 1
        reply = reply_after(texts[-1], episode.notes.get("shown"))
        reward, note = 0.0, ""
        try:
            action = default_parse_action(reply, remote.action_space)
            obs, reward, terminated, truncated, info = await remote.step(action)
            episode.record(float(reward), bool(terminated or truncated))
        except (ValueError, E.InvalidActionError) as err:
            # The agents read why; the trainer's log says it too, so a policy that never acts is not a silent zero.
            _LOG.warning("gymwire siiRL env: turn %d's action was refused: %s", turns, err)
            obs, info = episode.notes.get("obs", episode.first)
            note = f"\nThat action was refused: {getattr(err, 'message', str(err))}"
        episode.notes["obs"] = (obs, info)
        stop = episode.done or (self.max_turns is not None and turns >= self.max_turns)
        shown = f"{note}\n[gymwire episode {self.key}] " + default_render(obs, info, turns, remote.action_space)
        episode.notes["shown"] = shown
        if stop:
            await self.episodes.close(self.key)
        return [text + shown for text in texts], float(reward), stop

    @classmethod
    async def close_all(cls) -> None:
        """Closes every open episode's session (a worker shutting down)."""
        await cls.episodes.close_all()


# ---------------------------------------------------------------------------------------------
# siiRL's BaseTool (an older verl fork: create() -> str, execute() -> (str, float, dict))

_SiirlBaseTool = optional_attr("siirl.execution.rollout_flow.multiturn.tools.base_tool", "BaseTool") or object
_SiirlToolSchema = optional_attr("siirl.execution.rollout_flow.multiturn.tools.schemas", "OpenAIFunctionToolSchema")


class GymwireSiirlTool(_SiirlBaseTool):  # type: ignore[misc,valid-type]
    """One gymwire env tool (or ``reset``/``step``) in siiRL's ``BaseTool`` shape: one session per request.

    siiRL's SGLang rollout calls ``create(request_id, **create_kwargs)`` for each tool, ``execute(request_id, ...)``
    for each call, and at the request's end ``calc_reward(request_id)`` then ``release(request_id)`` for each
    tool. The request id owns the session (:mod:`._lifecycle`): made and reset at its first call
    (seed from ``create_kwargs`` or ``config.seed``), shared by every tool, closed when the episode
    ends or at ``release``. ``calc_reward`` gives the episode's return to the first tool that asks
    and 0.0 to the others, so the sum over tools counts it once. siiRL's tool agent loop instead
    creates and releases an instance per call: there each call is an episode of its own.
    ``config`` is ``{url, env_id, env_kwargs, seed}``; :meth:`tool_config` writes the ``tools:``
    entries for siiRL's tool config file.
    """

    episodes = EpisodeTable("siiRL tool")
    _seeds: dict[str, Any] = {}

    def __init__(self, config: dict[str, Any], tool_schema: Any) -> None:
        schema = tool_schema.model_dump(exclude_none=True) if hasattr(tool_schema, "model_dump") else dict(tool_schema)
        if _SiirlBaseTool is not object:
            super().__init__(config, tool_schema if _SiirlToolSchema is None or hasattr(tool_schema, "model_dump") else _SiirlToolSchema(**schema))
        self.config = config
        self.name = schema["function"]["name"]

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> str:
        instance_id = instance_id or uuid.uuid4().hex
        if kwargs.get("seed") is not None:
            self._seeds[instance_id] = kwargs["seed"]
        return instance_id

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[str, float, dict[str, Any]]:
        seed = self._seeds.get(instance_id, self.config.get("seed"))
        try:
            episode = await self.episodes.open(
                instance_id, lambda: start_episode(self.config["url"], self.config["env_id"], self.config.get("env_kwargs"), seed=seed)
            )
            result = await episode.execute(self.name, parameters)
        except Exception as err:  # noqa: BLE001 - errors go back to the model as text
            # The client keeps the error object a while; without its traceback it no longer holds this frame,
            # whose kwargs hold the trajectory that owns the session (it must be free to be collected).
            err.__traceback__ = None
            _LOG.warning("gymwire siiRL tool %s(%s) failed: %s", self.name, json.dumps(parameters, default=str)[:200], str(err))
            return json.dumps({"error": str(err)}), 0.0, {"error": True}
        metrics: dict[str, Any] = {"episode_return": episode.episode_return}
        if episode.done:
            await self.episodes.close(instance_id)
            metrics["episode_done"] = True
        reward = float(result.get("reward", 0.0)) if isinstance(result, dict) else 0.0
        return json.dumps(result), reward, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        return self.episodes.claim_return(instance_id)

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._seeds.pop(instance_id, None)
        await self.episodes.close(instance_id)

    @classmethod
    async def close_all(cls) -> None:
        """Closes every open session (a worker shutting down)."""
        await cls.episodes.close_all()

    @staticmethod
    def tool_config(url: str, env_id: str, schemas: list[dict[str, Any]], **config: Any) -> dict[str, Any]:
        """The ``tools:`` entries (as data) for every schema, in siiRL's accepted schema shape."""
        from .verl import verl_tool_schema

        return {
            "tools": [
                {"class_name": f"{__name__}.GymwireSiirlTool", "config": {"url": url, "env_id": env_id, **config}, "tool_schema": verl_tool_schema(s)}
                for s in schemas
            ]
        }
