"""RLinf: a remote gymwire env with RLinf's env-worker interface, and its registration.

RLinf's env worker builds ``env_cls(cfg=..., num_envs=..., seed_offset=..., total_num_processes=...,
worker_info=...)`` and calls ``reset()``, ``is_start = ...``, ``chunk_step(chunk_actions)`` and
``update_reset_state_ids()``; :class:`RemoteGymEnv` provides exactly that over ``num_envs`` sessions
on a gymwire server, with the semantics of RLinf's own envs (LIBERO is the reference): ``reset``
consumes ``is_start``, success comes only from a success signal, ``max_episode_steps`` truncates,
``reward_coef``/``use_rel_reward`` shape the reward, ``is_eval``/``specific_reset_id``/
``use_fixed_reset_state_ids`` choose the reset states.

RLinf's env types are a closed enum checked in the driver (``validate_cfg``) and in every env worker,
so :func:`register` has to run in both: ``RLINF_EXT_MODULE=gymwire.integrations.rlinf`` makes RLinf's
own ``Worker`` call it in each worker process, and :class:`RegisterOnHydraStart` (a Hydra callback
named in the config) calls it in the driver and exports that variable before RLinf starts Ray.

Config (``env.train`` / ``env.eval``): ``env_type: gymwire`` plus ``gymwire: {url, env_id, kwargs,
image_key, state_key, task_key, wrist_key, success_key, gripper_to_sign, client_options}`` and RLinf's
own keys.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import os
from typing import Any

import gymnasium as gym
import numpy as np

from ..vector import vector_seeds
from ._common import ChunkedSessions, ObsMapper, as_tensor, cfg_get

ENV_TYPE = "gymwire"
EXT_MODULE_VAR = "RLINF_EXT_MODULE"


class RemoteGymEnv(gym.Env[Any, Any]):
    """``num_envs`` gymwire sessions with RLinf's env interface (``chunk_step``, ``is_start``, offload).

    Example (what RLinf's env worker does)::

        env = RemoteGymEnv(cfg.env.train, num_envs=8, seed_offset=0, total_num_processes=1, worker_info=None)
        obs, _ = env.reset()
        obs_list, rewards, terminations, truncations, infos = env.chunk_step(actions)  # [8, C, A]
    """

    def __init__(self, cfg: Any, num_envs: int, seed_offset: int, total_num_processes: int, worker_info: Any = None, record_metrics: bool = True) -> None:
        self.cfg = cfg
        self.num_envs = int(num_envs)
        self.seed_offset = int(seed_offset)
        self.total_num_processes = max(1, int(total_num_processes))
        self.worker_info = worker_info
        self.record_metrics = record_metrics
        self.auto_reset = bool(cfg_get(cfg, "auto_reset", False))
        self.ignore_terminations = bool(cfg_get(cfg, "ignore_terminations", False))
        self.group_size = max(1, int(cfg_get(cfg, "group_size", 1)))
        if self.num_envs % self.group_size:
            raise ValueError(f"gymwire: num_envs ({self.num_envs}) is not a multiple of group_size ({self.group_size})")
        self.use_fixed_reset_state_ids = bool(cfg_get(cfg, "use_fixed_reset_state_ids", False))
        self.use_ordered_reset_state_ids = bool(cfg_get(cfg, "use_ordered_reset_state_ids", False))
        self.is_eval = bool(cfg_get(cfg, "is_eval", False))
        specific = cfg_get(cfg, "specific_reset_id", None)
        self.specific_reset_id = None if specific is None else int(specific)
        self.seed = int(cfg_get(cfg, "seed", 0)) + self.seed_offset
        limit = cfg_get(cfg, "max_episode_steps", None)
        self.max_episode_steps = None if limit is None else int(limit)
        self.reward_coef = float(cfg_get(cfg, "reward_coef", 1.0))
        self.use_rel_reward = bool(cfg_get(cfg, "use_rel_reward", False))
        self.success_key = str(cfg_get(cfg, "gymwire.success_key", "success"))
        self.gripper_to_sign = bool(cfg_get(cfg, "gymwire.gripper_to_sign", False))
        self.use_torch = cfg_get(cfg, "gymwire.use_torch", None)
        url = cfg_get(cfg, "gymwire.url", None) or os.environ.get("GYMWIRE_URL")
        env_id = cfg_get(cfg, "gymwire.env_id", None) or os.environ.get("GYMWIRE_ENV_ID")
        if not url or not env_id:
            raise ValueError("gymwire: env.*.gymwire.url and env.*.gymwire.env_id are required (or GYMWIRE_URL / GYMWIRE_ENV_ID)")
        self.sessions = ChunkedSessions(
            str(url),
            str(env_id),
            self.num_envs,
            _plain(cfg_get(cfg, "gymwire.kwargs", {})),
            _plain(cfg_get(cfg, "gymwire.client_options", {})),
        )
        self.observation_space = self.sessions.observation_space
        self.action_space = self.sessions.action_space
        self.mapper = ObsMapper(
            self.observation_space,
            image_key=cfg_get(cfg, "gymwire.image_key"),
            state_key=cfg_get(cfg, "gymwire.state_key"),
            task_key=cfg_get(cfg, "gymwire.task_key"),
            wrist_key=cfg_get(cfg, "gymwire.wrist_key"),
        )
        self._is_start = True
        self._generator = np.random.default_rng(self.seed)
        self._ordered_cursor = 0
        self._elapsed_steps = np.zeros(self.num_envs, dtype=np.int32)
        self.prev_step_reward = np.zeros(self.num_envs, dtype=np.float32)
        self.success_once = np.zeros(self.num_envs, dtype=np.bool_)
        self.returns = np.zeros(self.num_envs, dtype=np.float32)
        self.reset_state_ids = np.zeros(self.num_envs, dtype=np.int64)
        # How each env's episode ended (until its reset): without auto_reset, RLinf reads the end from every later column.
        self._ended_terminated = np.zeros(self.num_envs, dtype=np.bool_)
        self._ended_truncated = np.zeros(self.num_envs, dtype=np.bool_)
        self.update_reset_state_ids()

    # RLinf sets is_start = True before a rollout epoch; the next reset() consumes it (LIBERO's rule).
    @property
    def is_start(self) -> bool:
        return self._is_start

    @is_start.setter
    def is_start(self, value: bool) -> None:
        self._is_start = bool(value)

    @property
    def elapsed_steps(self) -> np.ndarray:
        return self._elapsed_steps

    # Reset state ids are reset seeds: the same id replays the same start on the server.
    def _random_ids(self, count: int) -> np.ndarray:
        if self.specific_reset_id is not None:
            return np.full(count, self.specific_reset_id, dtype=np.int64)
        return self._generator.integers(0, 2**31 - 1, size=count, dtype=np.int64)

    def _ordered_ids(self, count: int) -> np.ndarray:
        """Distinct ids across env processes, in order: id k of this process is ``k * processes + seed_offset``."""
        if self.specific_reset_id is not None:
            return np.full(count, self.specific_reset_id, dtype=np.int64)
        k = np.arange(self._ordered_cursor, self._ordered_cursor + count, dtype=np.int64)
        self._ordered_cursor += count
        return k * self.total_num_processes + self.seed_offset

    def update_reset_state_ids(self) -> None:
        """New ids for the next rollout: one per ``group_size`` group (GRPO groups share a start)."""
        groups = self.num_envs // self.group_size
        ids = self._ordered_ids(groups) if self.is_eval or self.use_ordered_reset_state_ids else self._random_ids(groups)
        self.reset_state_ids = np.repeat(ids, self.group_size)

    def reset(
        self, env_idx: Any = None, reset_state_ids: Any = None, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Resets all envs (or ``env_idx``) and returns ``(obs, {})``; consumes ``is_start``."""
        idx = np.arange(self.num_envs) if env_idx is None else np.atleast_1d(np.asarray(env_idx, dtype=np.int64))
        if self._is_start:
            if self.is_eval:
                self._ordered_cursor = 0
                self.update_reset_state_ids()
            if reset_state_ids is None and (self.use_fixed_reset_state_ids or self.is_eval):
                reset_state_ids = self.reset_state_ids[idx]
            self._is_start = False
        if seed is not None:
            reset_state_ids = vector_seeds(seed, len(idx))
        if reset_state_ids is None:
            reset_state_ids = self._random_ids(len(idx))
        ids = np.asarray(reset_state_ids, dtype=np.int64).reshape(-1)
        self.reset_state_ids[idx] = ids
        self.sessions.reset([int(i) for i in idx], [int(s) for s in ids], options)
        self._reset_metrics(idx)
        return self._obs(self.sessions.last_obs), {}

    def _reset_metrics(self, idx: np.ndarray) -> None:
        self._ended_terminated[idx] = False
        self._ended_truncated[idx] = False
        self._elapsed_steps[idx] = 0
        self.prev_step_reward[idx] = 0.0
        self.success_once[idx] = False
        self.returns[idx] = 0.0

    def chunk_step(self, chunk_actions: Any) -> tuple[list[dict[str, Any]], Any, Any, Any, list[dict[str, Any]]]:
        """``[N, C, A]`` actions -> (obs per sub-step, rewards, terminations, truncations ``[N, C]``, infos per sub-step)."""
        actions = self._check_actions(chunk_actions)
        if not self.sessions.reset_count.all():
            # RLinf resets before stepping (at init with auto_reset, else in bootstrap); this only covers a bare caller.
            self.reset()
        n, c = actions.shape[:2]
        rewards = np.zeros((n, c), dtype=np.float32)
        terms = np.zeros((n, c), dtype=np.bool_)
        truncs = np.zeros((n, c), dtype=np.bool_)
        obs_list: list[dict[str, Any]] = []
        infos_list: list[dict[str, Any]] = []
        # A native chunk env (action space [C, A]) takes the whole chunk in one step.
        steps = [(slice(0, c), actions)] if self.sessions.native_chunk else [(slice(k, k + 1), actions[:, k : k + 1]) for k in range(c)]
        for cols, part in steps:
            done_before = self.sessions.done.copy()
            o, r, te, tr, i = self.sessions.chunk_step(part)
            before = self._elapsed_steps.copy()
            # An ended episode's length stops with it (RLinf reads episode_len when it counts the episode, which can be a
            # chunk later); under ignore_terminations every env runs on to the limit.
            self._elapsed_steps += r.shape[1] * (np.ones(self.num_envs, dtype=np.int32) if self.ignore_terminations else ~done_before)
            if self.max_episode_steps is not None:
                # The limit fires once, when an open episode crosses it; under ignore_terminations every
                # episode stays open to the limit (RLinf asserts that all envs truncate together).
                hit = (before < self.max_episode_steps) & (self._elapsed_steps >= self.max_episode_steps)
                if not self.ignore_terminations:
                    hit &= ~done_before & ~te.any(axis=1)
                if hit.any():
                    tr = tr.copy()
                    tr[hit, -1] = True
                    self.sessions.done[hit] = True
            infos = self._merge_infos(i[-1])
            success = self._success(i[-1])
            step_reward = self._shape_reward(r)
            rewards[:, cols] = step_reward
            terms[:, cols] = te
            truncs[:, cols] = tr
            infos["episode"] = self._record_metrics(step_reward, success)
            if self.ignore_terminations:
                infos["episode"]["success_at_end"] = as_tensor(te.any(axis=1), self.use_torch)
            obs_list.append(self._obs(o[-1]))
            infos_list.append(infos)
        raw_terms, raw_truncs = terms.copy(), truncs.copy()
        if not (self.auto_reset or self.ignore_terminations):
            # RLinf counts an episode when a chunk's last column says done (its eval compares that column with the
            # previous chunk's). LIBERO's episodes go on reporting done once they end, so an episode that ends
            # mid-chunk says so on every later column, and on every chunk after, until it is reset.
            terms = np.logical_or.accumulate(terms, axis=1) | self._ended_terminated[:, None]
            truncs = np.logical_or.accumulate(truncs, axis=1) | self._ended_truncated[:, None]
        self._ended_terminated |= raw_terms.any(axis=1)
        self._ended_truncated |= raw_truncs.any(axis=1)
        if self.ignore_terminations:
            terms[:] = False
        past_dones = terms.any(axis=1) | truncs.any(axis=1)
        if self.auto_reset and past_dones.any():
            obs_list[-1], infos_list[-1] = self._auto_reset(past_dones, obs_list[-1], infos_list[-1])
        if self.auto_reset or self.ignore_terminations:
            # RLinf's envs collapse a chunk's done flags onto its last column.
            terms = np.zeros_like(terms)
            truncs = np.zeros_like(truncs)
            terms[:, -1] = raw_terms.any(axis=1) & ~self.ignore_terminations
            truncs[:, -1] = raw_truncs.any(axis=1)
        return obs_list, as_tensor(rewards, self.use_torch), as_tensor(terms, self.use_torch), as_tensor(truncs, self.use_torch), infos_list

    def _check_actions(self, chunk_actions: Any) -> np.ndarray:
        if hasattr(chunk_actions, "detach"):
            chunk_actions = chunk_actions.detach().float().cpu().numpy() if chunk_actions.is_floating_point() else chunk_actions.detach().cpu().numpy()
        actions = np.array(chunk_actions, copy=True)
        want = tuple(self.action_space.shape or ())
        per_step = want[1:] if self.sessions.native_chunk else (want or (1,))
        if actions.ndim != 2 + len(per_step):
            raise ValueError(f"gymwire: chunk_actions must be [num_envs, num_action_chunks, *{per_step}] for {self.sessions.env_id}, got shape {actions.shape}")
        if actions.shape[0] != self.num_envs:
            raise ValueError(f"gymwire: chunk_actions has {actions.shape[0]} rows for {self.num_envs} envs (shape {actions.shape})")
        if tuple(actions.shape[2:]) != per_step:
            raise ValueError(
                f"gymwire: each action must have shape {per_step} for {self.sessions.env_id} (action space {self.action_space}), "
                f"got chunk_actions of shape {actions.shape}; set actor.model.action_dim to match"
            )
        if self.sessions.native_chunk and actions.shape[1] != want[0]:
            raise ValueError(f"gymwire: {self.sessions.env_id} takes chunks of {want[0]} actions, got {actions.shape[1]} (actor.model.num_action_chunks)")
        if self.gripper_to_sign:
            # RLinf's LIBERO convention for OpenVLA-style policies: gripper in [0, 1] -> -sign(2g - 1).
            actions[..., -1] = -np.sign(2.0 * actions[..., -1] - 1.0)
        return actions

    def _success(self, infos: list[dict[str, Any]]) -> np.ndarray:
        out = np.zeros(self.num_envs, dtype=np.bool_)
        for i, info in enumerate(infos):
            value = info.get(self.success_key) if isinstance(info, dict) else None
            if value is not None:
                out[i] = bool(np.asarray(value).any())
        return out

    def _shape_reward(self, rewards: np.ndarray) -> np.ndarray:
        reward = self.reward_coef * rewards.astype(np.float32)
        if not self.use_rel_reward:
            return reward
        # Relative reward: each sub-step's change against the previous sub-step (LIBERO's rule).
        out = np.empty_like(reward)
        for k in range(reward.shape[1]):
            out[:, k] = reward[:, k] - self.prev_step_reward
            self.prev_step_reward = reward[:, k].copy()
        return out

    def _record_metrics(self, step_reward: np.ndarray, success: np.ndarray) -> dict[str, Any]:
        self.returns += step_reward.sum(axis=1)
        self.success_once |= success
        return {
            "success_once": as_tensor(self.success_once.copy(), self.use_torch),
            "return": as_tensor(self.returns.copy(), self.use_torch),
            "episode_len": as_tensor(self._elapsed_steps.copy(), self.use_torch),
            "reward": as_tensor((self.returns / np.maximum(self._elapsed_steps, 1)).astype(np.float32), self.use_torch),
        }

    def _auto_reset(self, dones: np.ndarray, final_obs: dict[str, Any], infos: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        env_idx = np.flatnonzero(dones)
        final_info = copy.deepcopy(infos)
        if self.is_eval or self.use_ordered_reset_state_ids:
            ids: Any = self._ordered_ids(len(env_idx))
        elif self.use_fixed_reset_state_ids:
            self.update_reset_state_ids()
            ids = self.reset_state_ids[env_idx]
        else:
            ids = None
        obs, new_infos = self.reset(env_idx=env_idx, reset_state_ids=ids)
        new_infos["final_observation"] = final_obs
        new_infos["final_info"] = final_info
        new_infos["_final_info"] = dones.copy()
        new_infos["_final_observation"] = dones.copy()
        new_infos["_elapsed_steps"] = dones.copy()
        return obs, new_infos

    def step(self, action: Any) -> Any:
        """One sub-step for every env: a chunk of length 1."""
        obs, r, te, tr, infos = self.chunk_step(np.asarray(action)[:, None, ...])
        return obs[-1], r[:, 0], te[:, 0], tr[:, 0], infos[-1]

    def _obs(self, per_env: list[Any]) -> dict[str, Any]:
        m = self.mapper
        images = [m.image(o) for o in per_env]
        states = [m.state(o) for o in per_env]
        wrist = [m.wrist(o) for o in per_env]
        return {
            "main_images": None if images[0] is None else as_tensor(np.stack(images).astype(np.uint8, copy=False), self.use_torch),
            "wrist_images": None if wrist[0] is None else as_tensor(np.stack(wrist), self.use_torch),
            "states": None if states[0] is None else as_tensor(np.stack(states), self.use_torch),
            "task_descriptions": [m.task(o) for o in per_env],
        }

    @staticmethod
    def _merge_infos(infos: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i, info in enumerate(infos):
            for k, v in (info or {}).items():
                out.setdefault(k, [None] * len(infos))[i] = v
        return out

    # Offload: the simulator lives on the server, so offloading only keeps the session states.
    def get_state(self) -> bytes:
        return self.sessions.get_state()

    def load_state(self, state: bytes) -> None:
        self.sessions.load_state(state)

    def offload(self) -> None:
        return None

    def onload(self) -> None:
        return None

    def flush_video(self, video_sub_dir: str | None = None) -> None:
        return None

    def close(self) -> None:
        self.sessions.close()


def _plain(value: Any) -> dict[str, Any]:
    """A plain dict from a dict or an OmegaConf node (kwargs cross the wire as msgpack)."""
    if value is None:
        return {}
    try:
        from omegaconf import OmegaConf

        if OmegaConf.is_config(value):
            return dict(OmegaConf.to_container(value, resolve=True))  # type: ignore[arg-type]
    except ImportError:
        pass
    return dict(value)


def prepare_actions_passthrough(raw_chunk_actions: Any, num_action_chunks: int, action_dim: int) -> np.ndarray:
    """RLinf's prepare_actions for gymwire envs: reshape to ``[N, C, A]``, no per-simulator remapping."""
    if hasattr(raw_chunk_actions, "detach"):
        t = raw_chunk_actions.detach().cpu()
        arr = (t.float() if t.is_floating_point() else t).numpy()
    else:
        arr = np.asarray(raw_chunk_actions)
    if arr.size != arr.shape[0] * num_action_chunks * action_dim:
        raise ValueError(
            f"gymwire: the policy's actions have shape {arr.shape}, which is not [num_envs, {num_action_chunks} (num_action_chunks), {action_dim} (action_dim)]"
        )
    return arr.reshape(arr.shape[0], num_action_chunks, action_dim)


def _extend_env_type_enum(env_type: str) -> bool:
    """Adds ``env_type`` to RLinf's closed ``SupportedEnvType`` so ``validate_cfg`` and RLinf's lookups accept it."""
    enum_cls = importlib.import_module("rlinf.envs").SupportedEnvType
    if env_type in enum_cls._value2member_map_:
        return False
    member = object.__new__(enum_cls)
    member._name_ = env_type.upper()
    member._value_ = env_type
    enum_cls._member_map_[member._name_] = member
    enum_cls._value2member_map_[env_type] = member
    enum_cls._member_names_.append(member._name_)
    type.__setattr__(enum_cls, member._name_, member)
    return True


def register(env_type: str = ENV_TYPE, env_cls: type = RemoteGymEnv) -> list[str]:
    """Makes ``env_type`` an RLinf env type in this process; returns what it changed. Idempotent.

    Adds it to ``rlinf.envs.SupportedEnvType`` (checked by ``validate_cfg`` in the driver) and wraps
    ``get_env_cls``/``prepare_actions`` where RLinf's env workers imported them by name
    (``rlinf.workers.env.env_worker``, plus ``rtc_env_worker`` when present) and in their home
    modules. RLinf calls this in every worker process when ``RLINF_EXT_MODULE`` names this module.
    """
    patched: list[str] = []
    if _extend_env_type_enum(env_type):
        patched.append("rlinf.envs.SupportedEnvType")
    targets = (
        ("rlinf.envs", ("get_env_cls",)),
        ("rlinf.envs.action_utils", ("prepare_actions",)),
        ("rlinf.workers.env.env_worker", ("get_env_cls", "prepare_actions")),
        ("rlinf.workers.env.rtc_env_worker", ("prepare_actions",)),
    )
    for mod_name, names in targets:
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as e:
            if e.name == mod_name:  # an optional module this RLinf version lacks
                continue
            raise
        for name in names:
            original = getattr(mod, name, None)
            if original is None or getattr(original, "__gymwire_env_type__", None) == env_type:
                continue
            wrapper = _wrap_get_env_cls(original, env_type, env_cls) if name == "get_env_cls" else _wrap_prepare_actions(original, env_type)
            setattr(mod, name, wrapper)
            patched.append(f"{mod_name}.{name}")
    os.environ.setdefault(EXT_MODULE_VAR, __name__)
    return patched


def _wrap_get_env_cls(original: Any, env_type: str, env_cls: type) -> Any:
    def get_env_cls(env_type_: Any, env_cfg: Any = None, *args: Any, **kwargs: Any) -> Any:
        if str(getattr(env_type_, "value", env_type_)) == env_type:
            return env_cls
        return original(env_type_, env_cfg, *args, **kwargs)

    get_env_cls.__gymwire_env_type__ = env_type  # type: ignore[attr-defined]
    get_env_cls.__wrapped__ = original  # type: ignore[attr-defined]
    return get_env_cls


def _wrap_prepare_actions(original: Any, env_type: str) -> Any:
    signature = inspect.signature(original)

    # RLinf calls prepare_actions with keyword arguments (raw_chunk_actions=..., env_type=..., ...).
    def prepare_actions(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind_partial(*args, **kwargs).arguments
        requested = bound.get("env_type")
        if str(getattr(requested, "value", requested)) == env_type:
            return prepare_actions_passthrough(bound["raw_chunk_actions"], int(bound["num_action_chunks"]), int(bound["action_dim"]))
        return original(*args, **kwargs)

    prepare_actions.__gymwire_env_type__ = env_type  # type: ignore[attr-defined]
    prepare_actions.__wrapped__ = original  # type: ignore[attr-defined]
    return prepare_actions


class RegisterOnHydraStart:
    """A Hydra callback that registers gymwire in RLinf's driver before ``validate_cfg`` runs.

    Name it in the RLinf config (no change to RLinf's launcher)::

        hydra:
          callbacks:
            gymwire:
              _target_: gymwire.integrations.rlinf.RegisterOnHydraStart

    It also exports ``RLINF_EXT_MODULE`` (unless already set) before RLinf's ``Cluster`` starts Ray,
    so every RLinf worker process registers too.
    """

    def __init__(self, **_: Any) -> None:
        register()

    def on_run_start(self, config: Any, **kwargs: Any) -> None:
        register()

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        register()

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        register()

    def on_run_end(self, config: Any, **kwargs: Any) -> None:
        return None

    def on_job_end(self, config: Any, job_return: Any, **kwargs: Any) -> None:
        return None

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        return None

    def on_compile_config(self, config: Any, **kwargs: Any) -> None:
        return None


def dataset_to_rlinf(ds: Any, num_action_chunks: int = 1) -> dict[str, np.ndarray]:
    """A recorded dataset as RLinf-shaped rollout arrays: per-episode ``[E, T/C, C]`` rewards and done flags.

    Keys: ``rewards``, ``terminations``, ``truncations``, ``dones`` ``[E, S, C]``; ``prev_logprobs``,
    ``prev_values`` ``[E, S, C]``; ``states``/``main_images`` ``[E, S, ...]`` (the obs at each chunk's
    first sub-step) when the observation has them; ``mask`` ``[E, S, C]``.
    """
    from ..dataset import episodes_to_arrays

    a = episodes_to_arrays(ds)
    E_, T = a["rewards"].shape
    C = int(num_action_chunks)
    S = -(-T // C)

    def chunked(x: np.ndarray) -> np.ndarray:
        pad = np.zeros((E_, S * C, *x.shape[2:]), dtype=x.dtype)
        pad[:, :T] = x
        return pad.reshape(E_, S, C, *x.shape[2:])

    out = {
        "rewards": chunked(a["rewards"]),
        "terminations": chunked(a["terminated"]),
        "truncations": chunked(a["truncated"]),
        "dones": chunked(a["dones"]),
        "prev_logprobs": chunked(a["log_probs"]),
        "prev_values": chunked(a["values"]),
        "mask": chunked(a["mask"]),
    }
    mapper = ObsMapper(ds.observation_space)
    for target, key in (("states", mapper.state_key), ("main_images", mapper.image_key)):
        if key is not None:
            col = a.get("obs" if key == "" else f"obs.{key}")
            if col is not None:
                out[target] = chunked(col)[:, :, 0]
    return out
