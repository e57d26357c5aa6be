"""Remote sessions stepped together as a Gymnasium vector env: one frame per step for all of them.

:class:`RemoteVector` is their I/O-free half (the ``reset_batch``/``step_batch`` requests as fields,
the answers as Gymnasium's batches); :class:`AsyncRemoteVectorEnv` sends them with ``await`` on an
asyncio driver, and :class:`GymwireVectorEnv` is the ``gymnasium.vector.VectorEnv`` that sends them
through a blocking ``Client``. Autoreset follows
Gymnasium 1.x in all three modes (``next_step``, ``same_step``, ``disabled``, declared in
``metadata["autoreset_mode"]``); infos are dicts of arrays with ``_key`` masks, built as
``gymnasium.vector.VectorEnv._add_info`` builds them (``final_obs``/``final_info`` in same-step mode)
and tolerant of envs that disagree about a key: a key that is a dict in some envs and ``None`` in
others (Bench2Drive's ``metric_info`` at reset and at a step) stays a nested dict, masked False
where it was ``None``; numbers of mixed types share one promoted dtype (see :func:`batch_infos`).

Example::

    envs = gymwire.make_vec("ws://127.0.0.1:8765", "gymwire/CartPole-v1", num_envs=16)
    obs, infos = envs.reset(seed=0)
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces as gs
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from . import errors as E
from ._protocol import AUTORESET_MODES
from ._request_template import FilledRequest, RequestTemplate
from .env import AsyncRemoteEnv, AsyncRequester, RemoteSession, close_session
from .spaces import value_from_wire, value_to_wire

if TYPE_CHECKING:
    from .client import Client

#: Gymnasium's autoreset mode for each wire name (the wire names are generated from protocol/messages.ts).
GYMNASIUM_AUTORESET_MODES: dict[str, AutoresetMode] = {name: AutoresetMode[name.upper()] for name in AUTORESET_MODES}


def autoreset_mode_name(mode: str | AutoresetMode) -> str:
    """The wire name of an autoreset mode given as a wire name or a Gymnasium ``AutoresetMode``."""
    for name, value in GYMNASIUM_AUTORESET_MODES.items():
        if mode == value or mode == value.value:
            return name
    if mode not in GYMNASIUM_AUTORESET_MODES:
        raise ValueError(f"autoreset_mode must be one of {', '.join(GYMNASIUM_AUTORESET_MODES)}, got {mode!r}")
    return mode


def vector_seeds(seed: int | list[int | None] | None, num_envs: int) -> list[int | None] | None:
    """The per-env seeds of a vector reset: an int seed gives env i ``seed + i`` (Gymnasium's rule), a
    list is taken as is (one per env), None leaves every env unseeded. Every vector env of the SDK
    (one server's, a Ray pool's, the collection engine's) seeds through this.

    Example::

        vector_seeds(7, 3)  # [7, 8, 9]
    """
    if seed is None:
        return None
    if isinstance(seed, (int, np.integer)):
        return [int(seed) + i for i in range(num_envs)]
    if len(seed) != num_envs:
        raise ValueError(f"seed list has {len(seed)} entries for {num_envs} envs")
    return list(seed)


def _is_number(value: Any) -> bool:
    return type(value) in (int, float, bool) or isinstance(value, np.number)


def _leaf_array(values: list[tuple[int, Any]], num_envs: int) -> np.ndarray:
    """One info key's values (``(env index, value)``) as Gymnasium batches them, with mixed types promoted."""
    items = [v for _, v in values]
    first = items[0]
    if all(_is_number(v) for v in items):
        types = {type(v) for v in items}
        array = np.zeros(num_envs, dtype=first.__class__ if len(types) == 1 else np.result_type(*types))
    elif all(isinstance(v, np.ndarray) and v.shape == first.shape for v in items):
        array = np.zeros((num_envs, *first.shape), dtype=np.result_type(*{v.dtype for v in items}))
    else:
        array = np.full(num_envs, fill_value=None, dtype=object)
    for i, v in values:
        array[i] = v
    return array


def batch_infos(infos: list[dict[str, Any] | None], num_envs: int, indices: list[int] | None = None) -> dict[str, Any]:
    """Per-env infos as one Gymnasium vector info dict: ``key`` -> ``[num_envs]`` array plus a ``_key`` mask.

    ``infos[j]`` belongs to env ``indices[j]`` (default ``j``); ``None`` is an env without an info.
    Equal to ``VectorEnv._add_info`` applied env by env where the envs agree on each key's type. Where
    they do not, the result does not depend on the order of the envs: a key that is a dict in any env
    is a nested info dict, and envs where it is something else (``None``) are masked out of it;
    numbers of different types are promoted (int and float give float64); anything else mixed is an
    object array.
    """
    at = list(range(len(infos))) if indices is None else indices
    out: dict[str, Any] = {}
    keys = dict.fromkeys(k for info in infos if info for k in info)
    for key in keys:
        values = [(i, info[key]) for i, info in zip(at, infos, strict=True) if info and key in info]
        if key == "final_obs":
            array: Any = np.full(num_envs, fill_value=None, dtype=object)
            for i, v in values:
                array[i] = v
        elif any(isinstance(v, dict) for _, v in values):
            values = [(i, v) for i, v in values if isinstance(v, dict)]
            array = batch_infos([v for _, v in values], num_envs, [i for i, _ in values])
        else:
            array = _leaf_array(values, num_envs)
        mask = np.zeros(num_envs, dtype=np.bool_)
        mask[[i for i, _ in values]] = True
        out[key] = array
        out[f"_{key}"] = mask
    return out


def batch_row(wire_obs: Any, index: int) -> Any:
    """Session ``index``'s observation from a decoded batched one, in any of the wire's forms (a
    tensor stacked over sessions, a Dict's map of per-key batches, an array of per-session values);
    still in wire form (for :func:`~gymwire.spaces.value_from_wire`), rows of stacks are views.

    Example::

        batch_row({"image": frames, "task": ["open", "lift"]}, 1)  # {"image": frames[1], "task": "lift"}
    """
    if isinstance(wire_obs, dict):
        return {key: batch_row(column, index) for key, column in wire_obs.items()}
    return wire_obs[index]


def _batch_from_wire(space: gs.Space[Any], wire_obs: Any, n: int) -> Any:
    """``n`` sessions' decoded wire observations as Gymnasium's batch of ``space``. A stacked tensor
    is the batch itself, no copy (Discrete and MultiBinary get the dtype Gymnasium's batch has); a
    Dict's map of per-key batches is converted key by key; anything else (an array of values) is
    concatenated as Gymnasium does."""
    if isinstance(wire_obs, np.ndarray):
        if isinstance(space, (gs.Box, gs.MultiDiscrete)):
            return wire_obs
        if isinstance(space, gs.Discrete):
            return wire_obs.astype(space.dtype, copy=False)
        if isinstance(space, gs.MultiBinary):
            return wire_obs.astype(np.int8, copy=False)
    if isinstance(wire_obs, dict) and isinstance(space, gs.Dict) and wire_obs.keys() == space.spaces.keys():
        return {key: _batch_from_wire(subspace, wire_obs[key], n) for key, subspace in space.spaces.items()}
    rows = [batch_row(wire_obs, j) for j in range(n)] if isinstance(wire_obs, (dict, np.ndarray)) else wire_obs
    return concatenate(space, [value_from_wire(space, v) for v in rows], create_empty_array(space, n))


def _with_rows(space: gs.Space[Any], batch: Any, rows: Any, indices: list[int], n: int) -> Any:
    """A copy of a batch of ``n`` (of ``space``) whose ``indices`` rows are those of ``rows``, a batch of
    ``len(indices)``: arrays row-assigned, a Dict key by key, anything else through Gymnasium's iterate
    and concatenate."""
    if isinstance(space, gs.Dict) and isinstance(batch, dict) and isinstance(rows, dict):
        return {key: _with_rows(subspace, batch[key], rows[key], indices, n) for key, subspace in space.spaces.items()}
    if isinstance(batch, np.ndarray) and isinstance(rows, np.ndarray):
        merged = np.array(batch)
        merged[indices] = rows
        return merged
    items = list(iterate(batch_space(space, n), batch))
    for i, item in zip(indices, iterate(batch_space(space, len(indices)), rows), strict=True):
        items[i] = item
    return concatenate(space, items, create_empty_array(space, n))


class RemoteVector:
    """``num_envs`` remote sessions of one env id, stepped in one ``step_batch`` frame, without I/O.

    Its requests are fields (``reset_request``, ``step_request``) and its answers Gymnasium's batches
    (``reset_result``, ``step_result``); :class:`AsyncRemoteVectorEnv` and :class:`GymwireVectorEnv`
    send them.
    """

    def __init__(self, envs: list[RemoteSession], autoreset_mode: str | AutoresetMode = "next_step") -> None:
        if not envs:
            raise ValueError("a vector env needs at least one session")
        self.envs = envs
        self.num_envs = len(envs)
        self.session_ids = [e.session_id for e in envs]
        self.autoreset_mode = autoreset_mode_name(autoreset_mode)
        self.single_observation_space = envs[0].observation_space
        self.single_action_space = envs[0].action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata: dict[str, Any] = {**envs[0].metadata, "autoreset_mode": GYMNASIUM_AUTORESET_MODES[self.autoreset_mode]}
        self._last_obs: Any = None
        # Every step sends the same session ids and mode: encoded once, only the actions per step.
        self._step_request = RequestTemplate("step_batch", {"session_ids": self.session_ids, "autoreset_mode": self.autoreset_mode})

    @property
    def last_obs(self) -> Any:
        """The batched observation of the latest reset or step (None before the first reset)."""
        return self._last_obs

    def reset_request(self, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[int] | None]:
        """The ``reset_batch`` fields for every session (or those in ``options["reset_mask"]``), and
        the indices of the sessions it resets (None: all of them), for :meth:`reset_result`.

        An int seed gives session i ``seed + i`` (:func:`vector_seeds`).
        """
        options = dict(options) if options else {}
        mask = options.pop("reset_mask", None)
        seeds = vector_seeds(seed, self.num_envs)
        indices = list(range(self.num_envs))
        if mask is not None:
            mask = np.asarray(mask, dtype=np.bool_)
            if mask.shape != (self.num_envs,) or not mask.any():
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},) with at least one True")
            indices = [i for i in indices if mask[i]]
        fields = {
            "session_ids": [self.session_ids[i] for i in indices],
            "seeds": None if seeds is None else [seeds[i] for i in indices],
            "options": options or None,
        }
        return fields, None if mask is None else indices

    def reset_result(self, r: dict[str, Any], indices: list[int] | None = None) -> tuple[Any, dict[str, Any]]:
        """A ``reset_batch`` result as Gymnasium's vector reset returns it (and kept as :attr:`last_obs`);
        ``indices`` are the sessions it reset, as :meth:`reset_request` gave them."""
        part = self.batch_obs(r["obs"], self.num_envs if indices is None else len(indices))
        if indices is None or self._last_obs is None:
            obs = part
        else:
            obs = _with_rows(self.single_observation_space, self._last_obs, part, indices, self.num_envs)
        self._last_obs = obs
        infos = batch_infos([self._info_from_wire(info) for info in r["infos"]], self.num_envs, indices)
        return obs, infos

    def step_request(self, actions: Any) -> FilledRequest:
        """The ``step_batch`` request for these actions, ready for ``client.request("step_batch", ...)``.

        With :meth:`step_result` it is a step for a caller that sends the request itself (the blocking
        vector env sends it from the calling thread, the asyncio one awaits it).
        """
        return self._step_request.fill(actions=self.actions_to_wire(actions))

    def step_result(self, r: dict[str, Any]) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """A ``step_batch`` result as Gymnasium's vector step returns it (and kept as :attr:`last_obs`)."""
        errors = r.get("errors")
        if errors and any(errors):
            for i, err in enumerate(errors):
                if err:
                    raise E.server_error(
                        {"code": err["code"], "message": f"env {i} (session {self.session_ids[i]}): {err['message']}", "details": {"index": i}}
                    )
        obs = self.batch_obs(r["obs"], self.num_envs)
        self._last_obs = obs
        wire_infos = r["infos"]
        # Most steps of most envs have empty infos: Gymnasium's vector info for them is {}.
        infos = batch_infos([self._info_from_wire(info) if info else None for info in wire_infos], self.num_envs) if any(wire_infos) else {}
        return (
            obs,
            np.asarray(r["rewards"], dtype=np.float64),
            np.asarray(r["terminated"], dtype=np.bool_),
            np.asarray(r["truncated"], dtype=np.bool_),
            infos,
        )

    def actions_to_wire(self, actions: Any) -> Any:
        """A batch of actions (as ``action_space`` holds them) in the wire form ``step_batch`` takes."""
        space = self.single_action_space
        if isinstance(space, gs.Discrete):
            arr = np.asarray(actions)
            kind = arr.dtype.kind
            if kind == "f" and np.all(arr == np.round(arr)):
                return arr.astype(np.int64)
            return arr.astype(np.int64, copy=False) if kind in "biu" else arr
        if isinstance(space, (gs.Box, gs.MultiDiscrete, gs.MultiBinary)) and isinstance(actions, (np.ndarray, list, tuple)):
            arr = np.asarray(actions)
            if arr.ndim >= 1 and arr.shape[0] == self.num_envs:
                return np.stack([value_to_wire(space, a) for a in arr]) if arr.dtype != space.dtype else arr
        return [value_to_wire(space, a) for a in iterate(self.action_space, actions)]

    def batch_obs(self, wire_obs: Any, n: int) -> Any:
        """``n`` decoded wire observations as one batch of ``single_observation_space``. Stacked
        tensors (the whole batch, or a Dict's keys) are the batch's arrays as decoded, without copying
        frames; an array of per-session values is concatenated as Gymnasium does."""
        return _batch_from_wire(self.single_observation_space, wire_obs, n)

    def _info_from_wire(self, info: dict[str, Any]) -> dict[str, Any]:
        if info and "final_obs" in info:
            info = {**info, "final_obs": value_from_wire(self.single_observation_space, info["final_obs"])}
        return info


class AsyncRemoteVectorEnv(RemoteVector):
    """``num_envs`` remote sessions of one env id stepped in one ``step_batch`` frame, asyncio flavour."""

    def __init__(self, client: AsyncRequester, envs: list[AsyncRemoteEnv], autoreset_mode: str | AutoresetMode = "next_step") -> None:
        super().__init__(envs, autoreset_mode)
        self.client = client
        self.envs: list[AsyncRemoteEnv] = envs

    async def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Resets every session (or those in ``options["reset_mask"]``); an int seed gives session i ``seed + i``."""
        fields, indices = self.reset_request(seed, options)
        return self.reset_result(await self.client.request("reset_batch", fields), indices)

    async def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        return self.step_result(await self.client.request("step_batch", self.step_request(actions)))

    async def close(self) -> None:
        for env in self.envs:
            await env.close()


class GymwireVectorEnv(gym.vector.VectorEnv[Any, Any, Any]):
    """Remote sessions as a ``gymnasium.vector.VectorEnv``; made by :func:`gymwire.make_vec`."""

    def __init__(self, client: Client, remote: RemoteVector, *, owns_client: bool = False) -> None:
        self._client = client
        self._remote = remote
        self._owns_client = owns_client
        self.num_envs = remote.num_envs
        self.single_observation_space = remote.single_observation_space
        self.single_action_space = remote.single_action_space
        self.observation_space = remote.observation_space
        self.action_space = remote.action_space
        self.metadata = remote.metadata
        self.render_mode = remote.envs[0].render_mode
        self._closed = False

    @property
    def remote(self) -> RemoteVector:
        return self._remote

    @property
    def client(self) -> Client:
        return self._client

    @property
    def autoreset_mode(self) -> AutoresetMode:
        return GYMNASIUM_AUTORESET_MODES[self._remote.autoreset_mode]

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if isinstance(seed, int):
            super().reset(seed=seed)
        remote = self._remote
        fields, indices = remote.reset_request(seed, options)
        return remote.reset_result(self._client.request("reset_batch", fields), indices)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        remote = self._remote
        return remote.step_result(self._client.request("step_batch", remote.step_request(actions)))

    def close_extras(self, **kwargs: Any) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            for env in self._remote.envs:
                close_session(self._client, env)
        finally:
            if self._owns_client:
                self._client.close()
