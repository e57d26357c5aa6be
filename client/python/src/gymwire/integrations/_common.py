"""Shared machinery of the integrations: optional imports, config access, chunked stepping of N sessions, obs mapping."""

from __future__ import annotations

import importlib
import os
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from ..client import Client
from ..spaces import value_from_wire, value_to_wire
from ..vector import batch_row
from ._lifecycle import VectorSessions


def optional_attr(module: str, name: str) -> Any:
    """``module.name`` when the framework is importable, else None (any import error counts as absent)."""
    try:
        return getattr(importlib.import_module(module), name)
    except Exception:  # noqa: BLE001 - frameworks fail to import in many ways without their GPU stack
        return None


def cfg_get(cfg: Any, path: str, default: Any = None) -> Any:
    """Reads ``a.b.c`` from a dict, an OmegaConf DictConfig or an attribute object."""
    node = cfg
    for part in path.split("."):
        if node is None:
            return default
        if isinstance(node, dict):
            node = node.get(part)
        elif hasattr(node, "get") and not isinstance(node, (list, tuple)):
            try:
                node = node.get(part)
            except Exception:  # noqa: BLE001
                node = getattr(node, part, None)
        else:
            node = getattr(node, part, None)
    return default if node is None else node


def as_tensor(array: np.ndarray, use_torch: bool | None = None) -> Any:
    """A torch tensor when torch is importable (and not refused), else the numpy array."""
    if use_torch is False:
        return array
    torch = optional_attr("torch", "from_numpy")
    if torch is None:
        if use_torch:
            raise RuntimeError("torch was asked for but is not installed")
        return array
    return torch(np.ascontiguousarray(array))


class ObsMapper:
    """Finds the image, state and task-text leaves of a remote observation space.

    Explicit keys win (``image_key``, ``state_key``, ``task_key``, ``wrist_key``); otherwise the
    first uint8 ``[H, W, 3]`` Box is the image, the first float 1-D Box the state, the first Text
    the task. A plain Box observation is the state.
    """

    IMAGE_NAMES = ("main_images", "full_image", "agentview_image", "image", "rgb")
    STATE_NAMES = ("states", "state", "proprio", "position")
    TASK_NAMES = ("task_descriptions", "task_description", "instruction", "task", "text")

    def __init__(
        self, space: gs.Space[Any], image_key: str | None = None, state_key: str | None = None, task_key: str | None = None, wrist_key: str | None = None
    ) -> None:
        self.space = space
        leaves = dict(_leaves(space))
        self.image_key = image_key or _find(
            leaves, self.IMAGE_NAMES, lambda s: isinstance(s, gs.Box) and s.dtype == np.uint8 and len(s.shape) == 3 and s.shape[2] == 3
        )
        self.state_key = state_key or _find(leaves, self.STATE_NAMES, lambda s: isinstance(s, gs.Box) and s.dtype.kind == "f" and len(s.shape) == 1)
        self.task_key = task_key or _find(leaves, self.TASK_NAMES, lambda s: isinstance(s, gs.Text))
        self.wrist_key = wrist_key

    def image(self, obs: Any) -> np.ndarray | None:
        return None if self.image_key is None else np.asarray(_get(obs, self.image_key))

    def state(self, obs: Any) -> np.ndarray | None:
        return None if self.state_key is None else np.asarray(_get(obs, self.state_key), dtype=np.float32).reshape(-1)

    def task(self, obs: Any, default: str = "") -> str:
        return default if self.task_key is None else str(_get(obs, self.task_key))

    def wrist(self, obs: Any) -> np.ndarray | None:
        return None if self.wrist_key is None else np.asarray(_get(obs, self.wrist_key))


def _leaves(space: gs.Space[Any], prefix: str = "") -> list[tuple[str, gs.Space[Any]]]:
    if isinstance(space, gs.Dict):
        return [leaf for k, s in space.spaces.items() for leaf in _leaves(s, f"{prefix}{k}.")]
    return [(prefix[:-1] if prefix else "", space)]


def _find(leaves: dict[str, gs.Space[Any]], names: tuple[str, ...], pred: Callable[[gs.Space[Any]], bool]) -> str | None:
    for name in names:
        for key, s in leaves.items():
            if key.split(".")[-1] == name and pred(s):
                return key
    for key, s in leaves.items():
        if pred(s):
            return key
    return None


def _get(obs: Any, key: str) -> Any:
    if key == "":
        return obs
    for part in key.split("."):
        obs = obs[part]
    return obs


def is_native_chunk(action_space: gs.Space[Any], metadata: dict[str, Any]) -> bool:
    """Whether one step of the env takes a whole action chunk ``[C, A]``.

    Only an env that declares its chunk does (``metadata["chunk"] == C``, as the EVAC world model):
    a 2-D Box action is otherwise one action, such as NAVSIM's ``[8, 3]`` poses or Bench2Drive's
    ``[6, 2]`` waypoints.
    """
    return isinstance(action_space, gs.Box) and len(action_space.shape) == 2 and metadata.get("chunk") == action_space.shape[0]


class ChunkedSessions:
    """N sessions of one env stepped a chunk of actions at a time, one frame per sub-step.

    An env that declares its action space ``[C, A]`` a chunk (:func:`is_native_chunk`, such as the
    EVAC world model) takes the whole chunk in one step and reports per-frame ``rewards``/``terminations``/
    ``truncations`` in its info; other envs take the chunk's actions one by one. A session that
    ends inside a chunk is not stepped again until it is reset; its later columns are 0/False.
    """

    def __init__(self, url: str, env_id: str, num_envs: int, kwargs: dict[str, Any] | None = None, client_options: dict[str, Any] | None = None) -> None:
        self.url = url
        self.env_id = env_id
        self.kwargs = dict(kwargs or {})
        self.num_envs = num_envs
        self.client = Client(url, **(client_options or {}))
        try:
            self.vec = self.client.make_vec(env_id, num_envs, autoreset_mode="disabled", **self.kwargs)
        except BaseException:
            self.client.close()
            raise
        # Closed by close(), or when a framework drops this object (or its worker exits) without calling it.
        self.lifecycle = VectorSessions(self, self.vec, self.client)
        self.remote = self.vec.remote
        self.observation_space = self.vec.single_observation_space
        self.action_space = self.vec.single_action_space
        self.native_chunk = is_native_chunk(self.action_space, self.vec.metadata)
        self.last_obs: list[Any] = [None] * num_envs
        self.done = np.zeros(num_envs, dtype=np.bool_)
        self.elapsed = np.zeros(num_envs, dtype=np.int64)
        self.returns = np.zeros(num_envs, dtype=np.float64)
        self.reset_count = np.zeros(num_envs, dtype=np.int64)  # resets per session, so callers can prove there are no double resets

    def _request(self, type_: str, fields: dict[str, Any]) -> dict[str, Any]:
        # On the socket transport the request runs in this thread, with no event-loop hop.
        return self.client.request(type_, fields)

    def reset(self, indices: list[int] | None = None, seeds: list[int | None] | None = None, options: dict[str, Any] | None = None) -> list[Any]:
        """Resets the given sessions (all by default); returns every session's current obs."""
        idx = list(range(self.num_envs)) if indices is None else [int(i) for i in indices]
        if not idx:
            return list(self.last_obs)
        r = self._request("reset_batch", {"session_ids": [self.remote.session_ids[i] for i in idx], "seeds": seeds, "options": options})
        obs = r["obs"]
        for j, i in enumerate(idx):
            self.last_obs[i] = value_from_wire(self.observation_space, batch_row(obs, j))
            self.done[i] = False
            self.elapsed[i] = 0
            self.returns[i] = 0.0
            self.reset_count[i] += 1
        return list(self.last_obs)

    def chunk_step(self, chunk_actions: Any) -> tuple[list[list[Any]], np.ndarray, np.ndarray, np.ndarray, list[list[dict[str, Any]]]]:
        """Steps a chunk ``[N, C, A]``; returns per-sub-step obs lists, rewards/terminations/truncations ``[N, C]``, per-sub-step infos."""
        actions = np.asarray(chunk_actions)
        single = tuple(self.action_space.shape or ())
        if self.native_chunk or len(single) < 2:
            if actions.ndim == 2:
                actions = actions[:, None, :]
        elif actions.ndim == 1 + len(single):
            # One multi-dimensional action per env (NAVSIM's [8, 3] poses): a chunk of one sub-step.
            actions = actions[:, None]
        n, c = actions.shape[0], actions.shape[1]
        if n != self.num_envs:
            raise ValueError(f"chunk_actions has {n} rows for {self.num_envs} envs")
        rewards = np.zeros((n, c), dtype=np.float32)
        terms = np.zeros((n, c), dtype=np.bool_)
        truncs = np.zeros((n, c), dtype=np.bool_)
        if self.native_chunk:
            obs_list, info_list = self._native(actions, rewards, terms, truncs)
            return obs_list, rewards, terms, truncs, info_list
        obs_list: list[list[Any]] = []
        info_list: list[list[dict[str, Any]]] = []
        for k in range(c):
            live = [i for i in range(n) if not self.done[i]]
            infos: list[dict[str, Any]] = [{} for _ in range(n)]
            if live:
                r = self._step(live, [actions[i, k] for i in live])
                for j, i in enumerate(live):
                    rewards[i, k] = r["rewards"][j]
                    terms[i, k] = r["terminated"][j]
                    truncs[i, k] = r["truncated"][j]
                    infos[i] = r["infos"][j]
                    self.last_obs[i] = value_from_wire(self.observation_space, batch_row(r["obs"], j))
                    self.done[i] = terms[i, k] or truncs[i, k]
                    self.elapsed[i] += 1
                    self.returns[i] += rewards[i, k]
            obs_list.append(list(self.last_obs))
            info_list.append(infos)
        return obs_list, rewards, terms, truncs, info_list

    def _native(self, actions: np.ndarray, rewards: np.ndarray, terms: np.ndarray, truncs: np.ndarray) -> tuple[list[list[Any]], list[list[dict[str, Any]]]]:
        n, c = actions.shape[:2]
        live = [i for i in range(n) if not self.done[i]]
        infos: list[dict[str, Any]] = [{} for _ in range(n)]
        if live:
            r = self._step(live, [actions[i] for i in live])
            for j, i in enumerate(live):
                info = r["infos"][j]
                per = np.asarray(info.get("rewards", np.eye(1, c, c - 1)[0] * r["rewards"][j]), dtype=np.float32).reshape(-1)
                rewards[i, : len(per)] = per[:c]
                t = np.asarray(info.get("terminations", np.eye(1, c, c - 1, dtype=bool)[0] & bool(r["terminated"][j]))).reshape(-1)
                u = np.asarray(info.get("truncations", np.eye(1, c, c - 1, dtype=bool)[0] & bool(r["truncated"][j]))).reshape(-1)
                terms[i, : len(t)] = t[:c]
                truncs[i, : len(u)] = u[:c]
                infos[i] = info
                self.last_obs[i] = value_from_wire(self.observation_space, batch_row(r["obs"], j))
                self.done[i] = bool(r["terminated"][j] or r["truncated"][j])
                self.elapsed[i] += c
                self.returns[i] += float(rewards[i].sum())
        return [list(self.last_obs)], [infos]

    def _step(self, indices: list[int], actions: list[Any]) -> dict[str, Any]:
        if isinstance(self.action_space, gs.Discrete):
            # Chunks of Discrete actions arrive as [C, 1] rows; the env wants the integer.
            actions = [np.asarray(a).reshape(-1)[0] for a in actions]
        wire = [value_to_wire(self.action_space, a) for a in actions]
        r = self._request("step_batch", {"session_ids": [self.remote.session_ids[i] for i in indices], "actions": wire, "autoreset_mode": "disabled"})
        for j, err in enumerate(r.get("errors") or []):
            if err:
                from ..errors import server_error

                raise server_error({"code": err["code"], "message": f"env {indices[j]}: {err['message']}"})
        return r

    def get_state(self) -> bytes:
        states = [self._request("get_state", {"session_id": sid})["state"] for sid in self.remote.session_ids]
        return pickle.dumps({"states": states, "done": self.done, "elapsed": self.elapsed, "returns": self.returns, "last_obs": self.last_obs})

    def load_state(self, buf: bytes) -> None:
        saved = pickle.loads(buf)
        for sid, st in zip(self.remote.session_ids, saved["states"], strict=True):
            self._request("set_state", {"session_id": sid, "state": st})
        self.done, self.elapsed, self.returns, self.last_obs = saved["done"], saved["elapsed"], saved["returns"], saved["last_obs"]

    def close(self) -> None:
        self.lifecycle.close()


def env_setting(explicit: Any, env_var: str, what: str) -> Any:
    """An explicit setting, else the environment variable, else a clear error."""
    value = explicit if explicit is not None else os.environ.get(env_var)
    if value is None:
        raise ValueError(f"no {what}: pass it or set {env_var}")
    return value
