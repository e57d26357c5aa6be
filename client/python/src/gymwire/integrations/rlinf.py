"""RLinf: a remote gymwire env with RLinf's env-worker interface, and the registration patch.

RLinf's env worker builds ``env_cls(cfg=..., num_envs=..., seed_offset=..., total_num_processes=...,
worker_info=...)`` and calls ``reset()``, ``is_start = ...``, ``chunk_step(chunk_actions)`` and
``update_reset_state_ids()``; :class:`RemoteGymEnv` provides exactly that over ``num_envs`` sessions
on a gymwire server. Its env types are a closed enum, so :func:`register` patches the two places
the worker looks them up (``rlinf.workers.env.env_worker.get_env_cls`` and ``prepare_actions``,
plus ``rlinf.workers.env.rtc_env_worker.prepare_actions`` when present).

Config (``env.train`` / ``env.eval``): ``env_type: gymwire`` plus ``gymwire: {url, env_id, kwargs,
image_key, state_key, task_key}`` and RLinf's own ``auto_reset``, ``ignore_terminations``, ``seed``,
``group_size``, ``use_fixed_reset_state_ids``, ``max_episode_steps``.
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym
import numpy as np

from ._common import ChunkedSessions, ObsMapper, as_tensor, cfg_get

ENV_TYPE = "gymwire"


class RemoteGymEnv(gym.Env[Any, Any]):
    """``num_envs`` gymwire sessions with RLinf's env interface (``chunk_step``, ``is_start``, offload)."""

    def __init__(self, cfg: Any, num_envs: int, seed_offset: int, total_num_processes: int, worker_info: Any = None, record_metrics: bool = True) -> None:
        self.cfg = cfg
        self.num_envs = int(num_envs)
        self.seed_offset = int(seed_offset)
        self.total_num_processes = int(total_num_processes)
        self.worker_info = worker_info
        self.record_metrics = record_metrics
        self.auto_reset = bool(cfg_get(cfg, "auto_reset", False))
        self.ignore_terminations = bool(cfg_get(cfg, "ignore_terminations", False))
        self.group_size = int(cfg_get(cfg, "group_size", 1))
        self.use_fixed_reset_state_ids = bool(cfg_get(cfg, "use_fixed_reset_state_ids", False))
        self.seed = int(cfg_get(cfg, "seed", 0))
        self.use_torch = cfg_get(cfg, "gymwire.use_torch", None)
        self.sessions = ChunkedSessions(
            str(cfg_get(cfg, "gymwire.url")),
            str(cfg_get(cfg, "gymwire.env_id")),
            self.num_envs,
            dict(cfg_get(cfg, "gymwire.kwargs", {}) or {}),
            dict(cfg_get(cfg, "gymwire.client_options", {}) or {}),
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
        self._rng = np.random.default_rng(self.seed + self.seed_offset)
        self.reset_state_ids = self._new_reset_state_ids()
        self.success_once = np.zeros(self.num_envs, dtype=np.bool_)

    # RLinf sets is_start = True before a rollout epoch so the next chunk_step starts with a reset.
    @property
    def is_start(self) -> bool:
        return self._is_start

    @is_start.setter
    def is_start(self, value: bool) -> None:
        self._is_start = bool(value)

    @property
    def elapsed_steps(self) -> np.ndarray:
        return self.sessions.elapsed.copy()

    def _new_reset_state_ids(self) -> np.ndarray:
        """Seeds used as reset state ids; envs of one group (``group_size``) share one, as GRPO needs."""
        groups = max(1, self.num_envs // max(1, self.group_size))
        if self.use_fixed_reset_state_ids:
            base = self.seed + self.seed_offset * groups
            ids = np.arange(base, base + groups)
        else:
            ids = self._rng.integers(0, 2**31 - 1, size=groups)
        return np.repeat(ids, max(1, self.group_size))[: self.num_envs].astype(np.int64)

    def update_reset_state_ids(self) -> None:
        self.reset_state_ids = self._new_reset_state_ids()

    def reset(self, env_idx: Any = None, reset_state_ids: Any = None, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """Resets all envs (or ``env_idx``); reset state ids are the sessions' seeds. Returns ``(obs, {})``."""
        idx = list(range(self.num_envs)) if env_idx is None else [int(i) for i in np.atleast_1d(np.asarray(env_idx))]
        ids = self.reset_state_ids if reset_state_ids is None else np.asarray(reset_state_ids)
        seeds = [int(ids[i] if reset_state_ids is None else ids[j]) for j, i in enumerate(idx)]
        if seed is not None:
            seeds = [seed + i for i in idx]
        self.sessions.reset(idx, seeds, options)
        self.success_once[idx] = False
        return self._obs(self.sessions.last_obs), {}

    def chunk_step(self, chunk_actions: Any) -> tuple[list[dict[str, Any]], Any, Any, Any, list[dict[str, Any]]]:
        """``[N, C, A]`` actions -> (obs per sub-step, rewards, terminations, truncations ``[N, C]``, infos per sub-step)."""
        if self._is_start:
            self.reset()
            self._is_start = False
        actions = np.asarray(chunk_actions.detach().cpu().numpy() if hasattr(chunk_actions, "detach") else chunk_actions)
        obs_list, rewards, terms, truncs, info_list = self.sessions.chunk_step(actions)
        self.success_once |= terms.any(axis=1)
        obs_dicts = [self._obs(o) for o in obs_list]
        infos = [self._merge_infos(i) for i in info_list]
        if self.auto_reset or self.ignore_terminations:
            # RLinf collapses done flags onto the chunk's last column.
            done_t, done_u = terms.any(axis=1), truncs.any(axis=1)
            terms = np.zeros_like(terms)
            truncs = np.zeros_like(truncs)
            terms[:, -1] = done_t & ~self.ignore_terminations
            truncs[:, -1] = done_u
        dones = terms[:, -1] | truncs[:, -1] if (self.auto_reset or self.ignore_terminations) else (terms | truncs).any(axis=1)
        last_info = infos[-1]
        last_info["episode"] = {
            "success_once": as_tensor(self.success_once.copy(), self.use_torch),
            "return": as_tensor(self.sessions.returns.astype(np.float32), self.use_torch),
            "episode_len": as_tensor(self.sessions.elapsed.copy(), self.use_torch),
            "reward": as_tensor((self.sessions.returns / np.maximum(self.sessions.elapsed, 1)).astype(np.float32), self.use_torch),
        }
        if self.auto_reset and dones.any():
            done_idx = np.flatnonzero(dones)
            final_obs = self._obs(self.sessions.last_obs)
            last_info["final_observation"] = final_obs
            last_info["final_info"] = {k: v for k, v in last_info.items() if k != "final_observation"}
            last_info["_final_observation"] = dones.copy()
            last_info["_final_info"] = dones.copy()
            last_info["_elapsed_steps"] = dones.copy()
            self.sessions.reset(list(done_idx), [int(self.reset_state_ids[i]) for i in done_idx] if self.use_fixed_reset_state_ids else None)
            obs_dicts[-1] = self._obs(self.sessions.last_obs)
            self.success_once[done_idx] = False
        return (
            obs_dicts,
            as_tensor(rewards, self.use_torch),
            as_tensor(terms, self.use_torch),
            as_tensor(truncs, self.use_torch),
            infos,
        )

    def step(self, action: Any) -> Any:
        """One sub-step for every env (RLinf's world-model ``step``): a chunk of length 1."""
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
            for k, v in info.items():
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


def prepare_actions_passthrough(raw_chunk_actions: Any, num_action_chunks: int, action_dim: int) -> np.ndarray:
    """RLinf's prepare_actions for gymwire envs: reshape to ``[N, C, A]``, no per-simulator remapping."""
    arr = raw_chunk_actions.detach().cpu().numpy() if hasattr(raw_chunk_actions, "detach") else np.asarray(raw_chunk_actions)
    return arr.reshape(arr.shape[0], num_action_chunks, action_dim)


def register(env_type: str = ENV_TYPE, env_cls: type = RemoteGymEnv) -> list[str]:
    """Installs ``env_type`` where RLinf's env worker looks env types up; returns what was patched.

    Patches ``get_env_cls`` and ``prepare_actions`` in ``rlinf.workers.env.env_worker`` (imported
    there by name, so patching ``rlinf.envs`` would not help) and ``prepare_actions`` in
    ``rlinf.workers.env.rtc_env_worker`` when that module exists. Idempotent.
    """
    patched: list[str] = []
    for mod_name, names in (("rlinf.workers.env.env_worker", ("get_env_cls", "prepare_actions")), ("rlinf.workers.env.rtc_env_worker", ("prepare_actions",))):
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            if mod_name.endswith("rtc_env_worker"):
                continue
            raise
        for name in names:
            original = getattr(mod, name, None)
            if original is None or getattr(original, "__gymwire_env_type__", None) == env_type:
                continue
            wrapper = _wrap_get_env_cls(original, env_type, env_cls) if name == "get_env_cls" else _wrap_prepare_actions(original, env_type)
            setattr(mod, name, wrapper)
            patched.append(f"{mod_name}.{name}")
    return patched


def _wrap_get_env_cls(original: Any, env_type: str, env_cls: type) -> Any:
    def get_env_cls(env_type_: str, env_cfg: Any = None, *args: Any, **kwargs: Any) -> Any:
        if str(env_type_) == env_type:
            return env_cls
        return original(env_type_, env_cfg, *args, **kwargs)

    get_env_cls.__gymwire_env_type__ = env_type  # type: ignore[attr-defined]
    return get_env_cls


def _wrap_prepare_actions(original: Any, env_type: str) -> Any:
    def prepare_actions(raw_chunk_actions: Any, env_type_: str, *args: Any, **kwargs: Any) -> Any:
        if str(env_type_) == env_type:
            names = ("model_type", "num_action_chunks", "action_dim")
            bound = dict(zip(names, args))
            bound.update({k: v for k, v in kwargs.items() if k in names})
            return prepare_actions_passthrough(raw_chunk_actions, int(bound["num_action_chunks"]), int(bound["action_dim"]))
        return original(raw_chunk_actions, env_type_, *args, **kwargs)

    prepare_actions.__gymwire_env_type__ = env_type  # type: ignore[attr-defined]
    return prepare_actions


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
