"""A vector env whose sessions are spread over a :class:`~gymwire.ray.ServerPool`'s servers.

Each server holds one block of consecutive envs as an :class:`~gymwire.vector.AsyncRemoteVectorEnv`
(a part). A step sends every part its ``step_batch`` frame at once (all connections share the
pool's event loop), then joins the answers in env order: the caller sees one ``gymnasium.vector.VectorEnv``
whose results equal those of the same sessions on a single server.

When a part's server dies, the part raises :class:`~gymwire.ray.pool.ServerLostError` (naming its
envs), and so does every later call, without waiting; with ``recreate_sessions=True`` the part gets
new sessions on the restarted server instead, and its envs report a truncated episode with
``info["server_lost"]`` set, in the shape the autoreset mode prescribes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces as gs
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from ..errors import GymwireError, SdkError
from ..vector import GYMNASIUM_AUTORESET_MODES, autoreset_mode_name, vector_seeds
from .errors import ServerLostError

if TYPE_CHECKING:
    from ..client import AsyncClient
    from ..vector import AsyncRemoteVectorEnv
    from .pool import ServerPool

_ARRAY_SPACES = (gs.Box, gs.Discrete, gs.MultiDiscrete, gs.MultiBinary)


@dataclass
class _Part:
    """The envs ``start .. start+count-1``, held by pool server ``server`` as one remote vector env."""

    server: int
    start: int
    count: int
    generation: int
    #: The server's asyncio client, on the pool's loop.
    client: AsyncClient
    remote: AsyncRemoteVectorEnv
    lost: ServerLostError | None = None
    #: next_step mode, after the part's sessions were recreated: the next step returns this reset
    #: (obs, infos) without stepping, as Gymnasium's autoreset step does.
    pending_reset: tuple[Any, dict[str, Any]] | None = None

    @property
    def indices(self) -> list[int]:
        return list(range(self.start, self.start + self.count))


class PoolVectorEnv(gym.vector.VectorEnv[Any, Any, Any]):
    """Sessions spread over a pool's servers as one ``gymnasium.vector.VectorEnv``; made by ``ServerPool.make_vec``."""

    def __init__(
        self,
        pool: ServerPool,
        env_id: str,
        assignment: list[tuple[int, int]],
        kwargs: dict[str, Any],
        autoreset_mode: str = "next_step",
        *,
        recreate_sessions: bool = False,
    ) -> None:
        self._pool = pool
        self.env_id = env_id
        self._kwargs = dict(kwargs)
        self._mode = autoreset_mode_name(autoreset_mode)
        self.recreate_sessions = recreate_sessions
        self._closed = False
        self._parts: list[_Part] = []
        start = 0
        try:
            for server, count in assignment:
                self._parts.append(self._make_part(server, start, count))
                start += count
        except BaseException:
            self.close()
            raise
        first = self._parts[0].remote
        self.num_envs = start
        self.single_observation_space = first.single_observation_space
        self.single_action_space = first.single_action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = dict(first.metadata)
        self.render_mode = first.envs[0].render_mode
        self._info = _InfoMerger(self.num_envs)

    @property
    def autoreset_mode(self) -> Any:
        return GYMNASIUM_AUTORESET_MODES[self._mode]

    @property
    def session_ids(self) -> list[str]:
        return [sid for part in self._parts for sid in part.remote.session_ids]

    @property
    def server_of_env(self) -> list[int]:
        """The pool server index that holds each env."""
        return [part.server for part in self._parts for _ in range(part.count)]

    # -- Gymnasium API -------------------------------------------------------------------------

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Resets every env (or those in ``options["reset_mask"]``); an int seed gives env i ``seed + i``, as one server would."""
        if isinstance(seed, int):
            super().reset(seed=seed)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is not None:
            mask = np.asarray(mask, dtype=np.bool_)
            if mask.shape != (self.num_envs,) or not mask.any():
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},) with at least one True")
        seeds = vector_seeds(seed, self.num_envs)
        calls = {}
        for k, part in enumerate(self._parts):
            part_mask = None if mask is None else mask[part.start : part.start + part.count]
            if part_mask is not None and not part_mask.any():
                continue
            self._ensure_sessions(k)
            part = self._parts[k]
            part.pending_reset = None
            part_seed = None if seeds is None else seeds[part.start : part.start + part.count]
            part_options = {**options, "reset_mask": part_mask} if part_mask is not None else (options or None)
            calls[k] = (part_seed, part_options)
        results, lost = self._gather({k: self._parts[k].remote.reset(seed=a, options=o) for k, (a, o) in calls.items()})
        for k, err in lost.items():
            # The server died during the reset itself: new sessions and the same reset, or raise.
            self._recreate_or_raise(k, err)
            part_seed, part_options = calls[k]
            results[k] = self._pool.run(self._parts[k].remote.reset(seed=part_seed, options=part_options))
        pieces = []
        for k, part in enumerate(self._parts):
            obs, infos = results[k] if k in results else (self._last_obs_of(part), {})
            pieces.append((part, obs, infos))
        return self._join_obs(pieces), self._info.merge([(part, infos) for part, _, infos in pieces])

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every env: one ``step_batch`` frame to each server, all sent before any answer is awaited."""
        for part in self._parts:
            if part.lost is not None:
                raise part.lost
        part_actions = self._split_actions(actions)
        calls = {}
        done: dict[int, tuple[Any, ...]] = {}
        for k, part in enumerate(self._parts):
            if part.pending_reset is not None:
                obs, infos = part.pending_reset
                part.pending_reset = None
                zeros = np.zeros(part.count, dtype=np.bool_)
                done[k] = (obs, np.zeros(part.count), zeros, zeros, infos)
                continue
            calls[k] = part.remote.step(part_actions[k])
        results, lost = self._gather(calls)
        for k, err in lost.items():
            results[k] = self._on_lost(k, err)
        results.update(done)
        obs = self._join_obs([(part, results[k][0], None) for k, part in enumerate(self._parts)])
        return (
            obs,
            np.concatenate([results[k][1] for k in range(len(self._parts))]).astype(np.float64, copy=False),
            np.concatenate([results[k][2] for k in range(len(self._parts))]).astype(np.bool_, copy=False),
            np.concatenate([results[k][3] for k in range(len(self._parts))]).astype(np.bool_, copy=False),
            self._info.merge([(part, results[k][4]) for k, part in enumerate(self._parts)]),
        )

    def close_extras(self, **kwargs: Any) -> None:
        if self._closed:
            return
        self._closed = True
        for part in self._parts:
            if part.lost is None:
                try:
                    self._pool.run(part.remote.close())
                except (GymwireError, RuntimeError):
                    pass  # the server is gone, and its sessions with it

    # -- parts ---------------------------------------------------------------------------------

    def _make_part(self, server: int, start: int, count: int) -> _Part:
        generation = self._pool.generation_of(server)
        client = self._pool.client_of(server, generation).aclient
        remote = self._pool.run(client.make_vec(self.env_id, count, self._kwargs, self._mode))
        return _Part(server=server, start=start, count=count, generation=generation, client=client, remote=remote)

    def _gather(self, calls: dict[int, Any]) -> tuple[dict[int, Any], dict[int, ServerLostError]]:
        """Runs every part's coroutine at once on the pool's loop: the answers, and the parts whose server died."""

        async def every_part() -> list[Any]:
            return await asyncio.gather(*calls.values(), return_exceptions=True)

        # Every part's connection is on the pool's loop: one hop there, and all frames go out before any answer is awaited.
        outcomes = self._pool.run(every_part()) if calls else []
        results: dict[int, Any] = {}
        lost: dict[int, ServerLostError] = {}
        other: BaseException | None = None
        for k, outcome in zip(calls, outcomes, strict=True):
            part = self._parts[k]
            if not isinstance(outcome, BaseException):
                results[k] = outcome
            elif isinstance(outcome, ServerLostError):
                lost[k] = outcome
            elif isinstance(outcome, SdkError) and self._pool.wait_replaced(part.server, part.generation):
                # A drop noticed here first (a timeout, a failed reconnect): the server died.
                lost[k] = self._lost_error(part, outcome)
            elif other is None:
                other = outcome
        if other is not None:
            raise other
        return results, lost

    def _on_lost(self, k: int, err: ServerLostError) -> tuple[Any, ...]:
        """A part's server died: raise (naming the envs), or recreate its sessions and report truncations."""
        part = self._parts[k]
        last_obs = self._last_obs_of(part)
        fresh = self._recreate_or_raise(k, err)
        obs, infos = self._pool.run(fresh.remote.reset())
        flags = np.ones(part.count, dtype=np.bool_)
        no = np.zeros(part.count, dtype=np.bool_)
        lost_info = {"server_lost": flags, "_server_lost": flags.copy()}
        rewards = np.zeros(part.count)
        if self._mode == "same_step":
            final_obs = np.empty(part.count, dtype=object)
            final_obs[:] = list(iterate(part.remote.observation_space, last_obs))
            info = {**infos, "final_obs": final_obs, "_final_obs": flags.copy(), "final_info": lost_info, "_final_info": flags.copy()}
            return obs, rewards, no, flags, info
        if self._mode == "next_step":
            fresh.pending_reset = (obs, infos)
        return last_obs, rewards, no, flags, lost_info

    def _recreate_or_raise(self, k: int, err: BaseException | None) -> _Part:
        """New sessions for part ``k`` on its server's restarted incarnation (recreate_sessions), else raise."""
        part = self._parts[k]
        if not self.recreate_sessions:
            part.lost = part.lost or self._lost_error(part, err)
            raise part.lost
        # The error may arrive while the pool is still connecting to the restarted server.
        self._pool.wait_replaced(part.server, part.generation)
        try:
            fresh = self._make_part(part.server, part.start, part.count)
        except SdkError as cause:
            part.lost = self._lost_error(part, cause)
            raise part.lost from err
        self._parts[k] = fresh
        return fresh

    def _ensure_sessions(self, k: int) -> None:
        """Before a reset: a part whose server died gets new sessions (recreate_sessions) or raises."""
        part = self._parts[k]
        if part.lost is None and self._pool.generation_of(part.server) == part.generation:
            return
        self._recreate_or_raise(k, part.lost)

    def _lost_error(self, part: _Part, cause: BaseException | None) -> ServerLostError:
        base = cause if isinstance(cause, ServerLostError) else None
        message = base.message if base is not None else f"gymwire server {part.server} was replaced or lost ({cause})"
        hint = "; make a new vector env, or pass recreate_sessions=True to get new sessions on the restarted server"
        return ServerLostError(
            f"envs {part.start}..{part.start + part.count - 1} of this vector env: {message}{'' if self.recreate_sessions else hint}",
            {**(base.details if base is not None else {"server": part.server}), "env_indices": part.indices},
        )

    # -- joining parts -------------------------------------------------------------------------

    def _last_obs_of(self, part: _Part) -> Any:
        last = part.remote.last_obs
        return last if last is not None else create_empty_array(self.single_observation_space, part.count)

    def _join_obs(self, pieces: list[tuple[_Part, Any, Any]]) -> Any:
        batches = [obs for _, obs, _ in pieces]
        if isinstance(self.single_observation_space, _ARRAY_SPACES) and all(isinstance(b, np.ndarray) for b in batches):
            return np.concatenate(batches)
        items = [item for part, obs, _ in pieces for item in iterate(part.remote.observation_space, obs)]
        return concatenate(self.single_observation_space, items, create_empty_array(self.single_observation_space, self.num_envs))

    def _split_actions(self, actions: Any) -> list[Any]:
        if isinstance(self.single_action_space, _ARRAY_SPACES):
            arr = np.asarray(actions)
            if arr.ndim >= 1 and arr.shape[0] == self.num_envs:
                return [arr[part.start : part.start + part.count] for part in self._parts]
        items = list(iterate(self.action_space, actions))
        space = self.single_action_space
        return [concatenate(space, items[p.start : p.start + p.count], create_empty_array(space, p.count)) for p in self._parts]


class _InfoMerger:
    """Joins the parts' vector infos (dicts of arrays with ``_key`` masks) into one, at each part's offset,
    with the dtype Gymnasium's ``_add_info`` would pick (the first env that has the key decides)."""

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs

    def merge(self, pieces: list[tuple[_Part, dict[str, Any]]]) -> dict[str, Any]:
        return self._merge([(part.start, part.count, infos or {}) for part, infos in pieces])

    def _merge(self, pieces: list[tuple[int, int, dict[str, Any]]]) -> dict[str, Any]:
        keys: dict[str, None] = {}
        for _, _, infos in pieces:
            keys.update(dict.fromkeys(infos))
        out: dict[str, Any] = {}
        for key in keys:
            if key.startswith("_") and key[1:] in keys:
                continue  # a mask: joined with its key
            present = [(start, count, infos[key]) for start, count, infos in pieces if key in infos]
            if all(isinstance(value, dict) for _, _, value in present):
                out[key] = self._merge(present)
            else:
                first = np.asarray(present[0][2])
                if first.dtype == object:
                    joined = np.full(self.num_envs, None, dtype=object)
                else:
                    joined = np.zeros((self.num_envs, *first.shape[1:]), dtype=first.dtype)
                for start, count, value in present:
                    joined[start : start + count] = value
                out[key] = joined
            masks = [(start, count, infos[f"_{key}"]) for start, count, infos in pieces if f"_{key}" in infos]
            if masks:
                mask = np.zeros(self.num_envs, dtype=np.bool_)
                for start, count, value in masks:
                    mask[start : start + count] = value
                out[f"_{key}"] = mask
        return out
